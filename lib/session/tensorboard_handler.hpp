// Internal: what tensorboard_trace_handler() returns — a named type, so a
// session can see that its traces go to a .pftrace and stream them so.
#pragma once

#include <filesystem>
#include <string>

#include "formats/trace_formats.hpp"
#include "proftrace/profile.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

struct tensorboard_handler {
  std::filesystem::path dir;
  std::string worker_name;
  trace_format format = trace_format::json;
  compression compressed = compression::none;  // .gz from use_gzip; PROFTRACE_CONFIG's format= gives any
  void operator()(session& p);
};

// The format a path names: .pftrace[.gz|.zst] Perfetto's, anything else
// Kineto JSON (formats/trace_formats.hpp).
inline trace_format format_of_path(const std::filesystem::path& p) { return trace_name_of(p).format->format; }

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
