// An MPI program built by the Makefile with proftrace-mpi-calls: each rank
// traces a ring exchange into DIR; check_makefile_consumer.py checks that
// the MPI calls were recorded and the clocks aligned over MPI.
#include <mpi.h>
#include <proftrace/proftrace.hpp>

#include <string>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (argc != 2) return 2;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  {
    proftrace::profile p({.on_trace_ready = proftrace::tensorboard_trace_handler(argv[1])});
    p.start();
    PROF_SCOPE("exchange");
    int mine = rank, theirs = -1;
    MPI_Sendrecv(&mine, 1, MPI_INT, (rank + 1) % size, 0, &theirs, 1, MPI_INT, (rank + size - 1) % size, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    p.stop();
  }
  MPI_Finalize();
  return 0;
}
