// proftrace/trace_handler.hpp — torch's tensorboard_trace_handler.
//
//   proftrace::profile p({.schedule = proftrace::schedule({.wait = 1, .warmup = 1, .active = 2}),
//                         .on_trace_ready = proftrace::tensorboard_trace_handler("./log", "rank0", true)});
//
// Each ready trace is exported to
// `{dir}/{worker_name}.{unix_time_ns}.pt.trace.json[.gz]`, or with
// `format` trace_format::pftrace to `....pt.trace.pftrace[.gz]` (Perfetto's
// protobuf; the session then streams in that format, see trace_format),
// with trace_format::otf2 to `....pt.trace.otf2` (an OTF2 archive's anchor
// file) or trace_format::caliper to `....pt.trace.cali.json` (a Caliper
// profile for Hatchet and Thicket), both converted from JSON at the export
// (use_gzip does not apply to them);
// the default worker
// name is `{hostname}_{pid}`, `rank{N}_{hostname}_{pid}` in a distributed job
// (<proftrace/distributed.hpp>). A directory that cannot be created throws
// std::runtime_error("Can't create directory: <dir>").
#pragma once

#include <filesystem>
#include <string>

#include "profile.hpp"

namespace proftrace {
inline namespace PROFTRACE_SESSION_NAMESPACE {

#if PROFTRACE_ENABLED
trace_ready_fn tensorboard_trace_handler(std::filesystem::path dir, std::string worker_name = {}, bool use_gzip = false,
                                         trace_format format = trace_format::json);
#else
// Compiled out: no trace is ever ready, so the handler has nothing to write.
inline trace_ready_fn tensorboard_trace_handler(std::filesystem::path, std::string = {}, bool = false,
                                                trace_format = trace_format::json) {
  return {};
}
#endif

}  // namespace PROFTRACE_SESSION_NAMESPACE
}  // namespace proftrace
