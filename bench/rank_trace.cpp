// One rank's trace of N scopes, made with the library, for timing the
// offline path across ranks (`proftrace summary DIR`, bench/summary_ranks.py)
// against the job's report reduced in the job (across_ranks).
//
//   OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=64 proftrace_rank_trace 1000000 DIR
//
// Writes DIR/rank3_<host>_<pid>.<ns>.pt.trace.pftrace: the rank's work is
// steps of nested scopes (outer > mid > leaf, other), the kernel's share
// growing with the rank.
#include <proftrace/macros.hpp>
#include <proftrace/profile.hpp>
#include <proftrace/trace_handler.hpp>

#include <cstdlib>
#include <iostream>
#include <string>

namespace {

void work(long n, int rank) {
  for (long i = 0; i < n; ++i) {
    PROF_SCOPE("outer");
    {
      PROF_SCOPE("mid");
      for (int k = 0; k <= rank % 4; ++k) {
        PROF_SCOPE("leaf");
      }
    }
    PROF_SCOPE("other");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: proftrace_rank_trace SCOPES DIR\n";
    return 2;
  }
  const long scopes = std::atol(argv[1]);
  const char* rank_text = std::getenv("OMPI_COMM_WORLD_RANK");
  const int rank = rank_text ? std::atoi(rank_text) : 0;
  proftrace::profile p({.on_trace_ready = proftrace::tensorboard_trace_handler(argv[2], "", false,
                                                                             proftrace::trace_format::pftrace),
                        .overflow = proftrace::overflow_policy::block});
  p.start();
  work(scopes / (4 + rank % 4), rank);
  p.stop();
  return 0;
}
