#include "clock_offset.hpp"

#include <mpi.h>

#include <limits>
#include <vector>

#include "world_duplicate.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

std::optional<clock_offset> measure_clock_offset(std::int64_t (*clock)(), int rounds) {
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (!initialised || finalised || rounds < 1) return std::nullopt;
  const MPI_Comm comm = proftrace_world_duplicate();
  if (comm == MPI_COMM_NULL) return std::nullopt;
  int rank = 0, size = 1;
  if (PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS || PMPI_Comm_size(comm, &size) != MPI_SUCCESS) return std::nullopt;
  constexpr int tag = 0x7072;  // "pr": proftrace's exchanges
  // Per rank: offset and round trip, filled on rank 0.
  std::vector<std::int64_t> table(2 * static_cast<std::size_t>(size), 0);
  bool ok = true;
  // Rank 0 decides how many exchanges each peer gets: at least `rounds`,
  // then more (up to 64x) while the best round trip is still long, as on an
  // oversubscribed node where a rank may be descheduled mid-exchange. A
  // sentinel instead of a time ends a peer's turn.
  constexpr std::int64_t done = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t good_round_trip_ns = 50'000;
  if (rank == 0) {
    for (int peer = 1; peer < size && ok; ++peer) {
      std::int64_t best_rtt = std::numeric_limits<std::int64_t>::max(), best_offset = 0;
      for (int k = 0; ok && (k < rounds || (best_rtt > good_round_trip_ns && k < 64 * rounds)); ++k) {
        const std::int64_t t1 = clock();
        std::int64_t remote = 0;
        ok = PMPI_Send(&t1, 1, MPI_INT64_T, peer, tag, comm) == MPI_SUCCESS &&
             PMPI_Recv(&remote, 1, MPI_INT64_T, peer, tag, comm, MPI_STATUS_IGNORE) == MPI_SUCCESS;
        const std::int64_t t3 = clock();
        if (t3 - t1 < best_rtt) {
          best_rtt = t3 - t1;
          best_offset = remote - (t1 + (t3 - t1) / 2);
        }
      }
      ok = ok && PMPI_Send(&done, 1, MPI_INT64_T, peer, tag, comm) == MPI_SUCCESS;
      table[2 * static_cast<std::size_t>(peer)] = best_offset;
      table[2 * static_cast<std::size_t>(peer) + 1] = best_rtt;
    }
  } else {
    while (ok) {
      std::int64_t t1 = 0;
      ok = PMPI_Recv(&t1, 1, MPI_INT64_T, 0, tag, comm, MPI_STATUS_IGNORE) == MPI_SUCCESS;
      if (!ok || t1 == done) break;
      const std::int64_t t2 = clock();
      ok = PMPI_Send(&t2, 1, MPI_INT64_T, 0, tag, comm) == MPI_SUCCESS;
    }
  }
  std::int64_t mine[2] = {0, 0};
  if (PMPI_Scatter(table.data(), 2, MPI_INT64_T, mine, 2, MPI_INT64_T, 0, comm) != MPI_SUCCESS || !ok)
    return std::nullopt;
  return clock_offset{mine[0], mine[1], rounds};
}

}  // namespace proftrace::detail
