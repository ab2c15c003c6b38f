// Internal: proftrace's own duplicate of MPI_COMM_WORLD, which the clock
// alignment (clock_offset.cpp) and the job's report (rank_reduce.cpp) use,
// so that no receive of the program's, wildcards included, can match
// proftrace's messages or the other way round.
#pragma once

#include <mpi.h>

#include "proftrace/config.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// Made by the first call (PMPI_Comm_dup is collective: that call must be
// one every rank makes, as both collectives that call this are), then
// kept: MPI cannot be initialised twice. MPI_COMM_NULL when the dup failed.
MPI_Comm proftrace_world_duplicate();

}  // namespace proftrace::detail
