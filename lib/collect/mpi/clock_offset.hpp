// Internal: the offset of this rank's clock against rank 0's, measured over
// MPI (proftrace::mpi).
#pragma once

#include <cstdint>
#include <optional>

#include "bridge.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// Collective over MPI_COMM_WORLD: every rank must call it. Rank 0 exchanges
// at least `rounds` ping-pongs with each other rank in turn (more, up to 64
// times as many, while no round trip came under 50 us) and keeps, per rank,
// the one with the shortest round trip (Cristian's method: the remote reading
// is taken to fall at the middle of the round trip). `clock` reads this
// rank's Unix nanoseconds. Empty when MPI is not initialised (or already
// finalised) or an MPI call fails.
std::optional<clock_offset> measure_clock_offset(std::int64_t (*clock)(), int rounds = 16);

}  // namespace proftrace::detail
