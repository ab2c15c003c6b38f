// Internal: the job's report across ranks (rank_averages) as a Caliper
// JSON-split profile and back. rank_averages::write_profile writes it with
// caliper_json_writer's layout: one call-path node per row (its stack's
// frames, outermost first, as the nodes above it, each labelled with the
// whole "file(line): name" frame), one data row per node and rank with the
// rank's count, self time (sum#time.duration) and total time
// (inclusive#sum#time.duration), and in the run metadata the job's rank
// count (mpi.world.size, jobsize), "proftrace.report": "rank_averages"
// and "proftrace.rank_rows": the rows in the report's order with the sums
// that are not per rank (CUDA time, memory, FLOPs, counters), as JSON text:
//
//   [{"node": 3, "sums": [cuda, self cuda, cpu mem, self cpu mem, cuda mem, self cuda mem, flops],
//     "counters": [["cycles", total, self], ...]}, ...]
//
// read_rank_profile rebuilds the report from that (min, max and their
// ranks from the per-rank rows, a rank without a row counting 0), so that
// `proftrace summary job.cali.json` prints what rank_averages::table() did.
//
// A report without per-rank values (per_rank_note not empty: a job of more
// ranks than PROFTRACE_RANK_VALUES_MAX) has instead one data row per node,
// no mpi.rank column: count and the two times summed over the ranks, then
// min#, avg# and max#inclusive#sum#time.duration (one rank's total time,
// seconds; avg is the sum over every rank of the job), proftrace.min_rank,
// proftrace.max_rank and proftrace.ranks_with_calls; the run metadata has
// "proftrace.per_rank_note" (its presence marks the layout) and no
// mpi.rank. The reader takes the figures from those columns.
//
//   job.write_profile("job.cali.json");
//   if (const auto back = read_rank_profile("job.cali.json")) std::cout << back->table();
#pragma once

#include "proftrace/config.hpp"

#include <filesystem>
#include <optional>
#include <string>

#include "proftrace/rank_averages.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// The profile's text (what write_profile writes).
std::string rank_profile_json(const rank_averages& report);
// The report a rank profile holds; empty for a .cali.json that is not one
// (a trace converted to a Caliper profile). Throws std::runtime_error when
// the file cannot be read or is not JSON, or a rank profile is inconsistent.
std::optional<rank_averages> read_rank_profile(const std::filesystem::path& path);

}  // namespace proftrace::detail
