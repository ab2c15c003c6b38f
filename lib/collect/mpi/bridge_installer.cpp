// proftrace::mpi: installs the MPI bridge (lib/collect/mpi/bridge.hpp) before main()
// runs, so that sessions read their rank from MPI_COMM_WORLD, measure
// their clock offset against rank 0 and reduce the job's report to rank 0. Linked as an object file, so that its
// static initialiser is in every program that names the component.
#include <mpi.h>

#include "clock_offset.hpp"
#include "rank_reduce.hpp"
#include "collect/component_anchor.hpp"

PROFTRACE_DEFINE_COMPONENT_ANCHOR();

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {
namespace {

bool mpi_usable() noexcept {
  int initialised = 0, finalised = 0;
  if (PMPI_Initialized(&initialised) != MPI_SUCCESS || PMPI_Finalized(&finalised) != MPI_SUCCESS) return false;
  return initialised && !finalised;
}

std::optional<distributed_info> mpi_world_rank() noexcept {
  if (!mpi_usable()) return std::nullopt;
  distributed_info d;
  if (PMPI_Comm_rank(MPI_COMM_WORLD, &d.rank) != MPI_SUCCESS ||
      PMPI_Comm_size(MPI_COMM_WORLD, &d.world_size) != MPI_SUCCESS)
    return std::nullopt;
  d.backend = "mpi";
  d.source = "MPI_Comm_rank";
  return d;
}

constexpr mpi_bridge bridge{mpi_world_rank, measure_clock_offset, reduce_to_rank0};
[[maybe_unused]] const bool installed = (install_mpi_bridge(&bridge), true);

}  // namespace
}  // namespace proftrace::detail
