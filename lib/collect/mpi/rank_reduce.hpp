// Internal: the job's report combined up a binomial tree of ranks to rank 0
// (proftrace::mpi's half of lib/aggregation/rank_reduction.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "bridge.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// Collective over proftrace's duplicate of MPI_COMM_WORLD (world_duplicate.hpp):
// every rank must call it, the same number of times and in the same order
// relative to proftrace's other collectives (the clock alignment), or the
// ranks that did wait forever. In ceil(log2 P) steps: at step k a rank whose
// bit k is set sends its combined partial to rank - 2^k (its parent) and
// is done; the others receive from rank + 2^k, if there is one, and
// combine(mine, theirs) (theirs covers the ranks just above mine). Each rank
// but 0 sends exactly one message. Returns the job's partial on rank 0, an
// empty string on the others; empty when MPI is not initialised (or
// finalised), an MPI call fails, or a combine threw on some rank (that
// rank's parent is then sent an empty message, so that no rank waits).
std::optional<std::string> reduce_to_rank0(std::string partial, void (*combine)(std::string&, std::string_view));

// What this process's last reduce_to_rank0 cost, for bench/.
struct reduction_stats {
  std::uint64_t calls = 0;           // reductions this process has taken part in
  std::uint64_t bytes_sent = 0;      // in the last one: its one message to its parent (0 on rank 0)
  std::uint64_t bytes_received = 0;  // in the last one, from its children
  int children = 0;                  // the messages it received
  std::int64_t duration_ns = 0;      // the last call, from entry to return
};
reduction_stats last_reduction_stats() noexcept;

}  // namespace proftrace::detail
