// Internal: a Kineto/Chrome trace (JSON: .json, .json.gz, .json.zst) written
// as a .pftrace (.pftrace.gz, .pftrace.zst by suffix) through perfetto_builder.
//
// The text is split into events by kineto_json_reader and each event
// parsed once, on its own (kineto_event_reader), into a compact record that
// is sorted by time through sorted_runs (held up to 32 MiB, spilled to
// temporary files beyond) and written once the input ends: Perfetto nests a track's slices by the order of their BEGIN and END
// packets, so a thread's "X" events go by start (longer first), and thread
// names from "M" events anywhere in the file are known when a track is
// first declared. Memory is therefore bounded whatever the trace's size
// (the sort's budget, the metadata, each thread's open slices, the
// builders' interning tables).
//
// Mapping: "X" -> SLICE_BEGIN/END on the thread's track (numeric pid/tid,
// written on the thread's own packet sequence with timestamps as deltas, as
// the streaming writer does; a string pid or tid such as "stream 7" -> a
// named track under the process); args -> debug annotations (numbers, bools, strings; arrays and
// objects as legacy JSON); "i"/"I" -> instants; "C" -> one counter track per
// arg ("name" for an arg named as the event, else "name.arg"); "b"/"e" ->
// slices on a named track per (name, id) under the process; "s"/"f" flows
// -> flow ids of the "X" slice starting at the same ts on the same thread
// (terminating ids on its END), others dropped. Overlapping (not nested)
// "X" events on a thread are cut at their parent's end.
//
//   const auto r = kineto_to_perfetto("t.pt.trace.json.gz", "t.pftrace");
#pragma once

#include "proftrace/config.hpp"

#include <cstdint>
#include <filesystem>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

struct kineto_conversion {
  std::uint64_t events = 0;  // elements of traceEvents
  std::uint64_t slices = 0, instants = 0, counters = 0, async_slices = 0, flows = 0;
  std::uint64_t skipped = 0;  // not converted: other phases, unusable events, flows without a slice
  std::uint64_t clamped = 0;  // ts or dur values past +-4e18 ns (126 years), written as that bound
  bool truncated = false;     // the JSON ended inside traceEvents: every complete event was converted
};

// Throws std::runtime_error naming the input or output and the reason.
kineto_conversion kineto_to_perfetto(const std::filesystem::path& input, const std::filesystem::path& output);

}  // namespace proftrace::detail
