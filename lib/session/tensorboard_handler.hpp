// Internal: what tensorboard_trace_handler() returns — a named type, so a
// session can see that its traces go to a .pftrace and stream them so.
#pragma once

#include <filesystem>
#include <string>

#include "formats/trace_formats.hpp"
#include "proftrace/profile.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

struct tensorboard_handler {
  std::filesystem::path dir;
  std::string worker_name;
  trace_format format = trace_format::json;
  compression compressed = compression::none;  // .gz from use_gzip; PROFTRACE_CONFIG's format= gives any
  void operator()(session& p);
};

}  // namespace proftrace::detail
