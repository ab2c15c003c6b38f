// Internal: how the recorder reaches MPI without linking it.
//
// proftrace::mpi (lib/collect/mpi/, pkg-config proftrace-mpi) installs the bridge
// from a static initialiser when a program links it; a program that does not
// leaves it empty and so gains no MPI library. Sessions then read the rank
// from the launcher's environment and measure no clock offset.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "proftrace/config.hpp"
#include "proftrace/distributed.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

struct clock_offset {
  std::int64_t offset_ns = 0;      // this rank's clock minus rank 0's
  std::int64_t round_trip_ns = 0;  // of the exchange the offset comes from (its error is at most half this)
  int rounds = 0;  // the minimum asked for
};

struct mpi_bridge {
  // This process's rank of MPI_COMM_WORLD; empty unless MPI is initialised and not finalised.
  std::optional<distributed_info> (*world_rank)() noexcept;
  // Collective over MPI_COMM_WORLD (lib/collect/mpi/clock_offset.hpp).
  std::optional<clock_offset> (*measure_clock_offset)(std::int64_t (*clock)(), int rounds);
  // Collective over proftrace's duplicate of MPI_COMM_WORLD
  // (lib/collect/mpi/rank_reduce.hpp): every rank's `partial` combined up a
  // binomial tree; rank 0 gets the whole job's, the others an empty string.
  std::optional<std::string> (*reduce_to_rank0)(std::string partial, void (*combine)(std::string&, std::string_view));
};

void install_mpi_bridge(const mpi_bridge* bridge) noexcept;
// The installed bridge, or null in a program that does not link proftrace::mpi.
const mpi_bridge* installed_mpi_bridge() noexcept;

// Called by proftrace::mpi_calls' MPI_Init and MPI_Finalize wrappers, on
// every rank (both calls are collective): a running session that started
// before MPI_Init measures its clock offset as MPI starts, and again as it
// ends (the trace's clockAlignmentAtStop).
void on_mpi_initialised() noexcept;
void on_mpi_finalizing() noexcept;

}  // namespace proftrace::detail
