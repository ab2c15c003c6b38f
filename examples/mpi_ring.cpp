// An MPI job profiled rank by rank: each rank computes on its block, then
// passes a buffer around the ring, for a few steps; rank r's compute takes
// (r + 1) times as long, so the cross-rank summary shows the imbalance.
//
//   mpirun -np 4 build/examples/proftrace_mpi_ring out/mpi
//   build/tools/proftrace summary out/mpi
#include <mpi.h>

#include <proftrace/proftrace.hpp>
#include <proftrace/trace_handler.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* out = argc > 1 ? argv[1] : "out/mpi";
  {
    proftrace::profile p({.schedule = proftrace::schedule({.wait = 1, .warmup = 1, .active = 3}),
                          .on_trace_ready = proftrace::tensorboard_trace_handler(out)});
    p.start();  // collective: measures this rank's clock offset against rank 0
    std::vector<double> block(1 << 16, 1.0 + rank), incoming(block.size());
    double checksum = 0;
    for (int step = 0; step < 5; ++step) {
      PROF_STEP();
      {
        PROF_SCOPE("compute");
        for (int round = 0; round <= rank; ++round)
          for (double& x : block) x = std::sqrt(x * x + 1.0);
      }
      {
        PROF_SCOPE("exchange");
        const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        MPI_Sendrecv(block.data(), static_cast<int>(block.size()), MPI_DOUBLE, next, step, incoming.data(),
                     static_cast<int>(incoming.size()), MPI_DOUBLE, prev, step, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
      checksum += incoming[0];
    }
    p.stop();  // collective again: the drift since start
    std::printf("rank %d of %d: checksum %.3f\n", rank, size, checksum);
  }
  MPI_Finalize();
  return 0;
}
