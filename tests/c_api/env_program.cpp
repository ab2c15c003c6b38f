// Instrumented with macros only, no session code: PROFTRACE_CONFIG alone
// profiles it (tests/c_api/check_env.py). With "own" as its argument it
// also starts a session of its own, which takes over from the environment's.
#include <proftrace/macros.hpp>
#include <proftrace/profile.hpp>

#include <cstdio>
#include <cstring>

namespace {
int work(int n) {
  int sum = 0;
  for (int i = 0; i < n; ++i) {
    PROF_STEP();
    PROF_SCOPE("env work");
    sum += i;
  }
  return sum;
}
}  // namespace

int main(int argc, char** argv) {
  int sum = work(6);
  if (argc > 1 && std::strcmp(argv[1], "own") == 0) {
    proftrace::profile p;
    p.start();  // takes over: never an exception, never an abort
    { PROF_SCOPE("own session"); }
    p.stop();
    std::printf("own rows: %zu\n", p.key_averages().rows.size());
  }
  return sum == 15 ? 0 : 1;
}
