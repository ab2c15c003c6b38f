// Internal: the "key=value,..." configuration that proftrace_start() and
// the PROFTRACE_CONFIG environment variable take (lib/c_api/c_api.cpp), and the
// session started from the environment before main().
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "proftrace/profile.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

struct c_config {
  profile_options opts;
  bool table = false;    // print the summary table to stderr when the session stops
  std::string out_dir;   // where traces go (tensorboard_trace_handler): "." unless out=DIR
};

// Parses `text` into `out`; false with a message naming the key otherwise.
bool parse_config(std::string_view text, c_config& out, std::string& error);

struct config_state;
// One key of the configuration: `option` names the profile_options member
// it sets ("" for the C API's own `table`).
struct config_key {
  std::string_view name;
  std::string_view option;
  const char* expected;  // the values it takes, for the error message
  bool (*apply)(config_state&, std::string_view value, bool has_value);
};
// Every key, in the order the error message lists them.
std::span<const config_key> config_keys() noexcept;

}  // namespace proftrace::detail
