/* The C API as C11: steps, nested scopes (PROF_C_SCOPE and push/pop with
 * runtime names), args, counters, instants, FLOPs and one mismatched pop.
 * Run as `program DIR`; tests/c_api/check_trace.py checks DIR's trace. */
#include <proftrace/proftrace.h>

#include <stdio.h>

static void kernel(int i) {
  char name[32];
  snprintf(name, sizeof name, "kernel %d", i % 2);
  proftrace_push(name); /* copied: the buffer dies with this frame */
  PROF_C_ARG_INT("i", i);
  PROF_C_ARG_DOUBLE("scale", 0.5);
  PROF_C_ARG_STRING("solver", "cg");
  PROF_C_MATMUL(2, 3, 4);
  proftrace_pop();
}

static void solve(int i) {
  PROF_C_SCOPE("solve");
  PROF_C_SCOPE_LITERAL("inner");
  kernel(i);
}

int main(int argc, char** argv) {
  char config[1024];
  if (argc < 2) return 64;
  snprintf(config, sizeof config, "out=%s,format=json,active=4,repeat=1,flops", argv[1]);
  if (proftrace_start(config) != 0) {
    fprintf(stderr, "proftrace_start: %s\n", proftrace_last_error());
    return 1;
  }
  for (int it = 0; it < 5; ++it) {
    proftrace_step();
    solve(it);
    PROF_C_COUNTER("iteration", it);
    PROF_C_INSTANT("iteration done");
  }
  proftrace_pop(); /* no push open: counted, reported, ignored */
  proftrace_stop();
  if (proftrace_unmatched_pops() != 1) return 2;
  return 0;
}
