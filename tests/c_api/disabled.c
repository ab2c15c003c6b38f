/* PROFTRACE_ENABLED=0: every PROF_C_* macro compiles to no code and
 * evaluates no argument (a name or value is only sizeof's operand), and the functions are inline
 * stand-ins. Built WITHOUT libproftrace: linking
 * at all shows no proftrace symbol is referenced (never_defined() would
 * fail to link if any argument were evaluated). */
#include <proftrace/proftrace.h>

#if PROFTRACE_ENABLED
#error "this test is built with PROFTRACE_ENABLED=0"
#endif

int never_defined(void);
const char* never_defined_text(void);

/* Parameters and variables passed on to the macros only stay used (-Wextra -Werror). */
static void passed_on(const char* name, int value, double sample, void* block) {
  const int m = 2, n = 3, k = 4, device = -1;
  const int64_t bytes = 64, flops = 2 * 64;
  PROF_C_ALLOC(block, bytes, device);
  PROF_C_FREE(block, device);
  PROF_C_FLOPS(flops);
  PROF_C_MATMUL(m, n, k);
  PROF_C_SCOPE(name);
  PROF_C_PUSH(name);
  PROF_C_ARG_INT("value", value);
  PROF_C_COUNTER("sample", sample);
  PROF_C_POP();
  PROF_C_SCOPE(never_defined_text());
  PROF_C_SCOPE_LITERAL(never_defined_text());
  PROF_C_PUSH_LITERAL(never_defined_text());
  PROF_C_INSTANT(never_defined_text());
}

static int work(int n) {
  PROF_C_SCOPE("scope");
  PROF_C_SCOPE_LITERAL("literal");
  int sum = 0;
  for (int i = 0; i < n; ++i) {
    PROF_C_STEP();
    PROF_C_PUSH("pushed");
    PROF_C_PUSH_LITERAL("pushed literal");
    PROF_C_ARG_INT("i", never_defined());
    PROF_C_ARG_DOUBLE("x", never_defined());
    PROF_C_ARG_STRING("s", (const char*)0 + never_defined());
    PROF_C_COUNTER("sum", never_defined());
    PROF_C_INSTANT("instant");
    PROF_C_ALLOC((void*)0, never_defined(), -1);
    PROF_C_FREE((void*)0, -1);
    PROF_C_FLOPS(never_defined());
    PROF_C_MATMUL(never_defined(), 2, 3);
    sum += i;
    PROF_C_POP();
    PROF_C_POP();
  }
  return (PROF_C_INSTANT("comma"), sum);
}

int main(void) {
  /* The functions are inline stand-ins: a program that calls them links
   * without the library too. */
  if (proftrace_start("out=never,table") != 0 || proftrace_recording()) return 2;
  proftrace_step();
  proftrace_push("x");
  proftrace_pop();
  proftrace_stop();
  static char block[64];
  passed_on("name", 1, 2.0, block);
  return work(4) == 6 && proftrace_last_error()[0] == '\0' ? 0 : 1;
}
