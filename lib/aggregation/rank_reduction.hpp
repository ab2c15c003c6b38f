// Internal: one report for the job, every rank's key_averages rows combined
// over MPI into rank 0's (the rows' partials, rank_partial.hpp, up a
// binomial tree through proftrace::mpi's bridge: O(keys) bytes per rank and
// ceil(log2 P) steps, never per event).
//
//   // On every rank, at each trace's end:
//   if (const auto job = reduce_rows_across_ranks(averages.rows)) {
//     if (job->rows.empty()) note(job->note);  // another rank, or switched off
//     else use(*job);                          // rank 0: the whole job's
//   }
//
// The contract is the clock alignment's: the reduction is a collective on
// proftrace's duplicate of MPI_COMM_WORLD, so every rank must reach it the
// same number of times, in the same order relative to proftrace's other
// collectives on it (the clock alignment at a session's start and stop). A
// rank that does not (a session started on some ranks only, a rank that
// leaves its session early) leaves the others waiting forever: set
// PROFTRACE_NO_RANK_REDUCTION=1 on every rank of such a job, and no rank
// makes any MPI call for the report. The MPI calls are made on the calling
// thread: under MPI_THREAD_FUNNELED (or SERIALIZED) call it from the thread
// MPI allows.
#pragma once

#include "proftrace/config.hpp"

#include <optional>
#include <vector>

#include "proftrace/key_averages.hpp"
#include "proftrace/rank_averages.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// The default bound on the per-rank values: 28 bytes per key and rank reach
// rank 0, linear in the job (bench/README.md's model, 50 keys: 1.5 MB and
// 12 ms at 1,024 ranks, 92 MB and 0.7 s at 65,536), against about 128 bytes
// per key and tree level without them.
inline constexpr long default_rank_values_max = 1024;

// Empty without proftrace::mpi linked or with MPI not initialised (or
// finalised). With PROFTRACE_NO_RANK_REDUCTION set (not "0"): a report
// with no rows whose note says so, no MPI call made. Otherwise the
// collective: on rank 0 the job's report (without per-rank values, and
// per_rank_note saying why, when the job has more ranks than
// PROFTRACE_RANK_VALUES_MAX, default_rank_values_max when unset or not a
// whole number, 0: never), on the other ranks a report with
// no rows whose note says the job's is on rank 0; a failed reduction gives
// a report with no rows whose note says so.
std::optional<rank_averages> reduce_rows_across_ranks(const std::vector<event_average>& rows);

}  // namespace proftrace::detail
