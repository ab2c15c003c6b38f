#include "rank_reduce.hpp"

#include <mpi.h>

#include <chrono>
#include <climits>
#include <exception>

#include "world_duplicate.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

constexpr int tag = 0x7073;  // "ps": the job report's messages (the clock alignment's are 0x7072)

reduction_stats last_stats;  // written by the one thread that runs the collective

bool mpi_usable() {
  int initialised = 0, finalised = 0;
  if (PMPI_Initialized(&initialised) != MPI_SUCCESS || PMPI_Finalized(&finalised) != MPI_SUCCESS) return false;
  return initialised && !finalised;
}

// One child's partial, its size learned by probing. An empty message is a
// child whose subtree failed.
bool receive_partial(MPI_Comm comm, int child, std::string& out) {
  MPI_Status status;
  int bytes = 0;
  if (PMPI_Probe(child, tag, comm, &status) != MPI_SUCCESS || PMPI_Get_count(&status, MPI_BYTE, &bytes) != MPI_SUCCESS ||
      bytes < 0)
    return false;
  out.resize(static_cast<std::size_t>(bytes));
  return PMPI_Recv(out.data(), bytes, MPI_BYTE, child, tag, comm, MPI_STATUS_IGNORE) == MPI_SUCCESS;
}

struct tree_walk {
  std::string mine;
  bool mpi_ok = true;
  bool combined_ok = true;  // false: a combine threw here or below
};

// Receives from each child in turn, then sends up once (rank 0: keeps it).
void walk_tree(MPI_Comm comm, int rank, int size, void (*combine)(std::string&, std::string_view), tree_walk& w) {
  std::string theirs;
  for (std::int64_t step = 1; step < size; step <<= 1) {  // 64-bit: no overflow past 2^30 ranks
    if (rank & step) {
      // Empty: this subtree failed (or is too large for one message); the parent still hears from it.
      const bool whole = w.combined_ok && w.mine.size() <= static_cast<std::size_t>(INT_MAX);
      const std::string_view up = whole ? std::string_view(w.mine) : std::string_view();
      const bool sent = PMPI_Send(up.data(), static_cast<int>(up.size()), MPI_BYTE, static_cast<int>(rank - step), tag,
                                 comm) == MPI_SUCCESS;
      w.mpi_ok = w.mpi_ok && sent;
      last_stats.bytes_sent = up.size();
      return;
    }
    if (rank + step >= size) continue;
    if (!receive_partial(comm, static_cast<int>(rank + step), theirs)) {
      w.mpi_ok = w.combined_ok = false;  // still sends up (empty), so that the parent does not wait
      continue;
    }
    ++last_stats.children;
    last_stats.bytes_received += theirs.size();
    if (theirs.empty()) w.combined_ok = false;
    if (!w.combined_ok) continue;
    try {
      combine(w.mine, theirs);
    } catch (const std::exception&) {
      w.combined_ok = false;
    }
  }
}

}  // namespace

std::optional<std::string> reduce_to_rank0(std::string partial, void (*combine)(std::string&, std::string_view)) {
  const auto started = std::chrono::steady_clock::now();
  if (!mpi_usable()) return std::nullopt;
  const MPI_Comm comm = proftrace_world_duplicate();
  int rank = 0, size = 1;
  if (comm == MPI_COMM_NULL || PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
      PMPI_Comm_size(comm, &size) != MPI_SUCCESS)
    return std::nullopt;
  last_stats = {.calls = last_stats.calls + 1};
  tree_walk w{std::move(partial)};
  walk_tree(comm, rank, size, combine, w);
  last_stats.duration_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count();
  if (!w.mpi_ok || (rank == 0 && !w.combined_ok)) return std::nullopt;
  return rank == 0 ? std::move(w.mine) : std::string();
}

reduction_stats last_reduction_stats() noexcept { return last_stats; }

}  // namespace proftrace::detail
