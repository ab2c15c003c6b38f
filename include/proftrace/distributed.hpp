// proftrace/distributed.hpp — which rank of a distributed job this process is.
//
//   if (auto d = proftrace::distributed())
//     std::cout << "rank " << d->rank << " of " << d->world_size << " on " << d->host << "\n";
//
// Read from MPI where the build has PROFTRACE_WITH_MPI and MPI is
// initialised; otherwise from the launcher's environment: OpenMPI
// (OMPI_COMM_WORLD_RANK/SIZE), MPICH and Intel MPI (PMI_RANK/PMI_SIZE),
// Slurm (SLURM_PROCID/SLURM_NTASKS), torchrun (RANK/WORLD_SIZE), first
// match wins. Each trace of a rank carries it as Kineto's "distributedInfo"
// (HTA finds the rank there), and tensorboard_trace_handler names its files
// per rank. Values that are not a rank below a positive size are ignored
// with one warning.
#pragma once

#include <optional>
#include <string>

namespace proftrace {

struct distributed_info {
  std::string backend;  // "mpi" (MPI or an MPI launcher), "slurm", "env" (torchrun)
  int rank = 0;
  int world_size = 1;
  std::string host;
  std::string source;  // what it was read from: "MPI_Comm_rank", "OMPI_COMM_WORLD_RANK", ...
};

// This process's place in a distributed job; empty when it was not started
// as one of several ranks.
std::optional<distributed_info> distributed();

}  // namespace proftrace
