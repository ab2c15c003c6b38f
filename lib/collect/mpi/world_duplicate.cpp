#include "world_duplicate.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

MPI_Comm proftrace_world_duplicate() {
  static MPI_Comm comm = MPI_COMM_NULL;
  if (comm == MPI_COMM_NULL && PMPI_Comm_dup(MPI_COMM_WORLD, &comm) != MPI_SUCCESS) comm = MPI_COMM_NULL;
  return comm;
}

}  // namespace proftrace::detail
