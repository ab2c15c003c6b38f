// A program profiled through PROFTRACE_CONFIG, whose session starts before
// main() and so before MPI_Init (run under mpirun by
// tests/mpi/check_mpi_late_init.py). Built twice: with proftrace::mpi_calls
// (MPI_Init and MPI_Finalize tell the session to align its clock) and with
// proftrace::mpi alone (the first step after MPI_Init does).
#include <mpi.h>
#include <proftrace/proftrace.hpp>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  for (int step = 0; step < 3; ++step) {
    PROF_STEP();
    PROF_SCOPE("work");
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
