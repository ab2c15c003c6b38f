// Internal: what tensorboard_trace_handler() returns — a named type, so a
// session can see that its traces go to a .pftrace and stream them so.
#pragma once

#include <filesystem>
#include <string>

#include "proftrace/profile.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

struct tensorboard_handler {
  std::filesystem::path dir;
  std::string worker_name;
  bool use_gzip = false;
  trace_format format = trace_format::json;
  bool use_zstd = false;  // .json.zst or .pftrace.zst (PROFTRACE_CONFIG's format=json.zst, pftrace.zst)
  void operator()(session& p);
};

// False for a name whose last suffix names no format or compression that
// proftrace writes (".xz", ".bz2", ".txt", none): such a file is
// plain Kineto JSON, as torch writes any name but ".gz".
inline bool names_a_trace_suffix(const std::filesystem::path& p) {
  const std::string name = p.filename().string();
  for (const char* suffix : {".json", ".pftrace", ".gz", ".zst"})
    if (name.ends_with(suffix)) return true;
  return false;
}

// The format a path names: .pftrace[.gz|.zst] Perfetto's, anything else JSON.
// (Inline: the command line and its fuzzer ask it without the session.)
inline trace_format format_of_path(const std::filesystem::path& p) {
  const std::string name = p.filename().string();
  return name.ends_with(".pftrace") || name.ends_with(".pftrace.gz") || name.ends_with(".pftrace.zst")
             ? trace_format::pftrace
             : trace_format::json;
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
