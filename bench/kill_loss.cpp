// The victim of bench/kill_loss.py: records one scope every 50 us, on a
// flush period given in milliseconds, until it is killed. Prints "ready"
// once its first flush is on disk.
//   PROFTRACE_SPOOL_DIR=DIR proftrace_kill_victim PERIOD_MS
#include <proftrace/proftrace.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

int main(int argc, char** argv) {
  const long period_ms = argc > 1 ? std::atol(argv[1]) : 100;
  proftrace::profile p({.flush_period = std::chrono::milliseconds(period_ms > 0 ? period_ms : 100)});
  p.start();
  { PROF_SCOPE("first"); }
  p.flush();
  std::puts("ready");
  std::fflush(stdout);
  for (;;) {
    PROF_SCOPE("tick");
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}
