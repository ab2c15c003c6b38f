// A job whose ranks do unequal work, reported across ranks
// (profile_options::across_ranks), for check_rank_report.py.
//
// usage: rank_report OUT MODE
//   traced   every rank writes its trace to OUT/traces
//   profile  every rank profile-only (trace_format::none)
//   chosen   trace_ranks "0,2": only ranks 0 and 2 write traces
//   uneven   rank 0 ends one trace more than the others (run it with
//            PROFTRACE_NO_RANK_REDUCTION=1: otherwise the job would hang)
// Rank 0 writes OUT/job.csv (rank_averages().csv()), OUT/job.cali.json and
// prints the table and the report's note.
#include <mpi.h>

#include <proftrace/proftrace.hpp>

#include <chrono>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

namespace {

// Sleeps: on an oversubscribed machine a spinning rank would be descheduled
// past its deadline, and its scope would no longer measure its work.
void wait_for(std::chrono::microseconds d) { std::this_thread::sleep_for(d); }

// The kernel's work grows with the rank: rank r takes (r + 1) * 10 ms (long
// enough that a busy machine's late wake-ups do not blur the imbalance).
void cycle(int rank) {
  {
    PROF_SCOPE("kernel");
    wait_for(std::chrono::microseconds(10000 * (rank + 1)));
  }
  if (rank % 2 == 0) {
    PROF_SCOPE("even_ranks_only");
    wait_for(std::chrono::microseconds(500));
  }
  PROF_SCOPE("exchange");
  double x = rank, sum = 0;
  MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc != 3) {
    if (rank == 0) std::cerr << "usage: rank_report OUT traced|profile|chosen|uneven\n";
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const std::string out = argv[1], mode = argv[2];
  proftrace::profile_options options{.on_trace_ready = proftrace::tensorboard_trace_handler(out + "/traces"),
                                     .across_ranks = true};
  if (mode == "profile") options.stream_format = proftrace::trace_format::none;
  if (mode == "chosen") options.trace_ranks = "0,2";
  proftrace::profile p(options);
  p.start();
  for (int i = 0; i < 3; ++i) cycle(rank);
  p.stop();
  if (mode == "uneven" && rank == 0) {  // a trace the other ranks do not end
    p.start();
    {
      PROF_SCOPE("extra");
      wait_for(std::chrono::microseconds(1000));
    }
    p.stop();
  }
  if (rank == 0) {
    const proftrace::rank_averages job = p.rank_averages();
    std::ofstream(out + "/job.csv") << job.csv();
    job.write_profile(out + "/job.cali.json");
    std::cout << job.table() << "note: " << job.note << "\n";
  }
  MPI_Finalize();
  return 0;
}
