// tools/trace_merge.hpp — `proftrace merge`: the traces of a job's ranks as one trace
// (tools/trace_merge.cpp).
#pragma once

#include <filesystem>
#include <vector>

#include "trace_reader.hpp"

namespace proftrace::tools {

struct merge_result {
  std::uint64_t traces = 0;
  std::uint64_t ranks = 0;  // distinct distributedInfo.rank values (each trace without one counts alone)
  std::uint64_t events = 0;
  std::uint64_t unaligned = 0;  // traces without a measured clock offset (taken as 0)
  std::uint64_t drift_corrected = 0;  // traces whose offset at stop() gave the drift between start and stop
};

// Writes one trace holding every input's events: one process per rank (and
// per device of a rank), named "rank N (host)" and sorted by rank; a rank's
// traces of several schedule cycles share its processes (the cycles lie one
// after another in time), the host process named with their step ranges,
// "rank N (host) steps 10-14, 20-24"; process names are unique; times
// moved onto rank 0's clock by each trace's clockAlignment offset (and,
// where the offset was measured again at stop, clockAlignmentAtStop, by the
// drift interpolated linearly between the two) and onto one base; flow ids and correlations kept apart per rank. Streaming: one
// event in memory at a time. Writes JSON (.json, .json.gz, .json.zst; the
// command line converts it for a .pftrace). Throws trace_error on a bad
// input or output.
merge_result merge_traces(std::vector<std::filesystem::path> files, const std::filesystem::path& output);

}  // namespace proftrace::tools
