// The runtime-off path of PROF_SCOPE under callgrind (check_instructions.py):
// the same loop with and without one PROF_SCOPE per iteration, no session
// running. The difference per iteration is what an annotated loop costs
// when nothing records; the check keeps it within a fixed instruction count.
#include <proftrace/macros.hpp>

#include <cstdlib>

namespace {
volatile int sink;
}

extern "C" __attribute__((noinline)) void loop_without_scope(int n) {
  for (int i = 0; i < n; ++i) sink = i;
}

extern "C" __attribute__((noinline)) void loop_with_scope(int n) {
  for (int i = 0; i < n; ++i) {
    PROF_SCOPE("x");
    sink = i;
  }
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 100000;
  loop_without_scope(n);
  loop_with_scope(n);
  return 0;
}
