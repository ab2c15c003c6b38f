// Internal: a Kineto/Chrome trace (JSON: .json, .json.gz, .json.zst) written
// as an OTF2 archive, the format Vampir, Scalasca and otf2-print read. The
// output names the archive's anchor file (run.otf2); its definitions
// (run.def) and event folder (run/) go beside it.
//
// Events are read one at a time (kineto_json_reader, kineto_event_reader)
// and sorted by time through sorted_runs (held up to 32 MiB, spilled to
// temporary files beyond), as kineto_to_perfetto does; memory is that
// bound, the metadata, each thread's open scopes and libotf2's one chunk
// per location.
//
// Mapping: each thread a location, each process a location group
// (otf2_layout: GPU streams as accelerator streams of an accelerator group
// created by the host process; one group per rank in a merged trace).
// "X" -> Enter/Leave of the region of its name (otf2_region_kind gives the
// role), written from a nesting walk per thread: by start, the longer
// first, then file order; a scope outliving its parent is cut at the
// parent's end (counted in `cut`); zero-length scopes enter and leave at
// one time; a scope ending with its parent leaves first. "ProfilerStep#N"
// -> the region "ProfilerStep", N the "step" parameter at its enter. An
// MPI_Send/Isend/Sendrecv with a "peer" -> MpiSend at its enter; an
// MPI_Recv/Irecv/Sendrecv -> MpiRecv before its leave (from "source" or
// "peer"), when the peer's rank is in the archive; "bytes" the length, tag
// 0 (not recorded). "C" -> a metric per arg ("name" or "name.arg"); a
// scope's "flops" -> the metric "FLOPs" at its leave; "[memory]" instants
// -> the metrics "Total Allocated" and "Total Reserved" (bytes). Other
// instants, flows and async events are dropped (counted in `skipped`).
// Times: nanosecond ticks from the first event, whose Unix time
// (baseTimeNanoseconds + its ts) is the clock's realtime.
//
//   const otf2_conversion r = kineto_to_otf2("t.pt.trace.json.gz", "out/t.otf2");
#pragma once

#include "proftrace/config.hpp"

#include <cstdint>
#include <filesystem>
#include <string>

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

struct otf2_conversion {
  std::uint64_t events = 0;  // elements of traceEvents
  std::uint64_t scopes = 0, metric_samples = 0, messages = 0;
  std::uint64_t cut = 0;      // scopes cut at their parent's end
  std::uint64_t skipped = 0;  // not converted: other phases, unusable events, messages to ranks not in the archive
  std::uint64_t clamped = 0;  // ts or dur values past +-4e18 ns
  std::uint64_t locations = 0;
  bool truncated = false;     // the JSON ended inside traceEvents
};

// Throws std::runtime_error naming the input or output and the reason.
otf2_conversion kineto_to_otf2(const std::filesystem::path& input, const std::filesystem::path& output);

// The error an export to `output` throws in a build without libotf2: it
// names the package and the build option (what such a build's converter throws).
std::string otf2_unavailable_message(const std::filesystem::path& output);

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
