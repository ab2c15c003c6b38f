#include "rank_reduction.hpp"

#include <cstdlib>
#include <string>
#include <string_view>

#include "collect/mpi/bridge.hpp"
#include "rank_partial.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

bool switched_off() {
  const char* off = std::getenv("PROFTRACE_NO_RANK_REDUCTION");
  return off && *off && std::string_view(off) != "0";
}

rank_averages empty_report(int ranks, std::string note) {
  rank_averages report;
  report.ranks = ranks;
  report.note = std::move(note);
  return report;
}

// PROFTRACE_RANK_VALUES_MAX: a whole number; unset, empty or not a number: the default.
long rank_values_max() {
  const char* text = std::getenv("PROFTRACE_RANK_VALUES_MAX");
  if (!text || !*text) return default_rank_values_max;
  char* end = nullptr;
  const long max = std::strtol(text, &end, 10);
  return *end || max < 0 ? default_rank_values_max : max;
}

}  // namespace

std::optional<rank_averages> reduce_rows_across_ranks(const std::vector<event_average>& rows) {
  const mpi_bridge* mpi = installed_mpi_bridge();
  if (!mpi || !mpi->reduce_to_rank0) return std::nullopt;
  if (switched_off())
    return empty_report(0, "PROFTRACE_NO_RANK_REDUCTION is set: the ranks' rows were not combined (no MPI call made)");
  const auto me = mpi->world_rank();
  if (!me) return std::nullopt;
  // From the world size and the environment only, so that every rank decides alike.
  const long max = rank_values_max();
  const bool per_rank_values = max > 0 && me->world_size <= max;
  const std::optional<std::string> job =
      mpi->reduce_to_rank0(encode_rank_partial(rows, me->rank, per_rank_values), combine_rank_partials);
  if (!job)
    return empty_report(me->world_size, "the reduction of the ranks' rows over MPI failed (an MPI call, or a "
                                        "malformed partial on some rank): no report for the job");
  if (me->rank != 0)
    return empty_report(me->world_size, "the job's report is on rank 0 (this is rank " + std::to_string(me->rank) + ")");
  rank_averages report = decode_rank_report(*job);
  if (!per_rank_values)
    report.per_rank_note = "left out: the job's " + std::to_string(me->world_size) + " ranks are more than "
                           "PROFTRACE_RANK_VALUES_MAX=" + std::to_string(max) + " (0: never kept); the figures are whole";
  return report;
}

}  // namespace proftrace::detail
