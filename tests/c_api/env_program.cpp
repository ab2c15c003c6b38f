// Instrumented with macros only, no session code: PROFTRACE_CONFIG alone
// profiles it (tests/c_api/check_env.py). With "own" as its argument it
// also starts a session of its own, which takes over from the environment's;
// with "c-step" it returns with a C API step open; with "c-stop" it calls
// proftrace_stop() and works on; with "c-start DIR" it
// starts a C API session writing to DIR with its table and never stops it.
#include <proftrace/macros.hpp>
#include <proftrace/profile.hpp>
#include <proftrace/proftrace.h>

#include <cstdio>
#include <cstring>
#include <string>

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
  if (argc > 2 && std::strcmp(argv[1], "c-start") == 0) {
    const std::string config = std::string("out=") + argv[2] + ",table";
    if (proftrace_start(config.c_str()) != 0) return 2;
    proftrace_push("c scope");
    proftrace_pop();
  }
  if (argc > 1 && std::strcmp(argv[1], "c-stop") == 0) {
    proftrace_stop();  // stops only a proftrace_start session: the environment's records on
    sum += work(3) - 3;
  }
  if (argc > 1 && std::strcmp(argv[1], "c-step") == 0) {
    proftrace_step();
    proftrace_step();  // still open when main returns: it ends at the session's stop at exit
  }
  return sum == 15 ? 0 : 1;
}
