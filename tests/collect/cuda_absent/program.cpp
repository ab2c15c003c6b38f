// A CPU-only program linked against a CUDA-enabled libproftrace. It calls no
// CUDA API; built with PROFTRACE_TEST_NAME_CUDA=0 it never mentions CUDA,
// with 1 its session names activity::cuda (torch's explicit activities).
// check.py runs both where the CUDA libraries cannot be found.
//   program TRACE   -> writes TRACE, prints "activities 0x<bits>" (what the
//                      session used) and "timeit synchronized 0|1"
#include <proftrace/proftrace.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s TRACE\n", argv[0]);
    return 2;
  }
  proftrace::profile_options options;
#if PROFTRACE_TEST_NAME_CUDA
  options.activities = {proftrace::activity::cpu, proftrace::activity::cuda};
#endif
  proftrace::timeit timer({.log = false});  // waits for a device only where one is visible
  proftrace::profile p(options);
  p.start();
  for (int i = 0; i < 3; ++i) {
    PROF_SCOPE("cuda_absent.work");
    volatile long sum = 0;
    for (int k = 0; k < 10000; ++k) sum = sum + k;
  }
  p.stop();
  p.export_chrome_trace(argv[1]);
  timer.stop();
  std::printf("activities 0x%x\ntimeit synchronized %d\n", static_cast<unsigned>(p.activities().bits()),
              timer.synchronized() ? 1 : 0);
  return 0;
}
