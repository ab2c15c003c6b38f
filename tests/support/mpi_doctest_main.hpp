// The main of a doctest suite that runs on every rank under mpirun: the
// job fails when any rank's tests do.
//
//   int main(int argc, char** argv) { return test_support::run_doctest_on_every_rank(argc, argv); }
#pragma once

#include <mpi.h>

#include <doctest/doctest.h>

namespace test_support {

inline int run_doctest_on_every_rank(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  doctest::Context context(argc, argv);
  const int failed = context.run();
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}

}  // namespace test_support
