// An MPI program that links proftrace::proftrace but not proftrace::mpi
// (run under mpirun -np 2): its session warns once that MPI is initialised
// without the component, reads its rank from the launcher's environment and
// measures no clock offset, and never hangs. Exit code 0 on success.
#include <mpi.h>
#include <proftrace/distributed.hpp>
#include <proftrace/proftrace.hpp>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  std::vector<std::string> warnings;
  proftrace::set_warning_handler([&](std::string_view m) { warnings.emplace_back(m); });
  proftrace::profile p({.retain_events = true});
  p.start();
  { PROF_SCOPE("work"); }
  p.stop();
  const auto d = proftrace::distributed();
  int failures = 0;
  auto check = [&](bool ok, const char* what) {
    if (!ok) std::fprintf(stderr, "mpi_without_component: %s\n", what), ++failures;
  };
  check(warnings.size() == 1 && warnings[0].find("does not link proftrace::mpi") != std::string::npos,
        "no single warning naming proftrace::mpi");
  check(d && d->source == "OMPI_COMM_WORLD_RANK", "the rank does not come from the launcher's environment");
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
