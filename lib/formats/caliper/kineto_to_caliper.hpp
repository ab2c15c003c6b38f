// Internal: a Kineto/Chrome trace (JSON: .json, .json.gz, .json.zst) written
// as a calling-context profile in Caliper's JSON-split layout (.cali.json),
// which Hatchet's GraphFrame.from_caliper and Thicket's Thicket.from_caliper
// read without Caliper installed (caliper_json_writer.hpp has the layout).
//
// Each thread's "X" events are walked in nesting order (nesting_walk.hpp:
// by start, the longer first, file order; a call outliving its caller cut
// at the caller's end) and summed per (call path, rank): calls ("count"),
// exclusive and inclusive seconds ("sum#time.duration",
// "inclusive#sum#time.duration"), and per event's numeric args: "flops" as
// "sum#flops", a communication call's "bytes" as "sum#bytes", counters
// (deltas over each call, so inclusive of its callees) and other numeric
// PROF_ARG values as "sum#<name>"; the "Bytes" of "[memory]" events, by the
// call innermost on their thread then, as "sum#memory.cpu_bytes" and
// "sum#memory.device_bytes" (net: frees count negative). Threads are summed
// per call path: a path's inclusive time is the sum over the threads'
// calls, as the table's "CPU total" of that scope grouped by stack is.
// Every ProfilerStep#N is one "ProfilerStep*" node, as in the table. GPU
// kernels and copies are roots of their own (their streams are threads);
// "gpu_user_annotation" spans, copies of CPU scopes, are left out.
// Ranks: a merged trace's processes named "rank N (host)" are rank N;
// otherwise the trace's distributedInfo rank (0 without).
//
// Events are sorted by thread and time through sorted_runs (spilled to
// temporary files beyond 32 MiB), so memory is bounded by the distinct call
// paths, not the events.
//
//   const auto r = kineto_to_caliper("rank0.pt.trace.json.gz", "rank0.cali.json");
#pragma once

#include "proftrace/config.hpp"

#include <cstdint>
#include <filesystem>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

struct caliper_conversion {
  std::uint64_t events = 0;  // elements of traceEvents
  std::uint64_t calls = 0;   // "X" events counted
  std::uint64_t nodes = 0, ranks = 0;
  std::uint64_t skipped = 0;  // unusable events
  std::uint64_t clamped = 0;  // ts or dur values past +-4e18 ns, taken as that bound
  bool truncated = false;     // the JSON ended inside traceEvents: every complete event was counted
};

// Throws std::runtime_error naming the input or output and the reason.
caliper_conversion kineto_to_caliper(const std::filesystem::path& input, const std::filesystem::path& output);

}  // namespace proftrace::detail
