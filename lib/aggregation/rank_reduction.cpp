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

}  // namespace

std::optional<rank_averages> reduce_rows_across_ranks(const std::vector<event_average>& rows) {
  const mpi_bridge* mpi = installed_mpi_bridge();
  if (!mpi || !mpi->reduce_to_rank0) return std::nullopt;
  if (switched_off())
    return empty_report(0, "PROFTRACE_NO_RANK_REDUCTION is set: the ranks' rows were not combined (no MPI call made)");
  const auto me = mpi->world_rank();
  if (!me) return std::nullopt;
  const std::optional<std::string> job = mpi->reduce_to_rank0(encode_rank_partial(rows, me->rank), combine_rank_partials);
  if (!job)
    return empty_report(me->world_size, "the reduction of the ranks' rows over MPI failed (an MPI call, or a "
                                        "malformed partial on some rank): no report for the job");
  if (me->rank != 0)
    return empty_report(me->world_size, "the job's report is on rank 0 (this is rank " + std::to_string(me->rank) + ")");
  return decode_rank_report(*job);
}

}  // namespace proftrace::detail
