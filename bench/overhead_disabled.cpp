// bench/overhead_disabled.cpp — case (d): PROF_SCOPE compiled out.
//
// This translation unit is built with PROFTRACE_ENABLED=0 (see
// bench/CMakeLists.txt), so PROF_SCOPE below expands to nothing and the loop
// must compile to exactly the empty loop of overhead.cpp. It references no
// proftrace symbol.
#if !defined(PROFTRACE_ENABLED) || PROFTRACE_ENABLED
#error "overhead_disabled.cpp must be compiled with PROFTRACE_ENABLED=0"
#endif

#include <proftrace/macros.hpp>

#include "batch.hpp"

namespace proftrace_bench {

void BM_scope_compiled_out(benchmark::State& state) {
  for (auto _ : state) {
    PROFTRACE_BENCH_INNER_LOOP(PROF_SCOPE("x");)
  }
  proftrace_bench::report_per_scope(state);
}

__attribute__((noinline)) void compiled_out_batch() noexcept { PROFTRACE_BENCH_INNER_LOOP(PROF_SCOPE("x");) }

}  // namespace proftrace_bench
// Registered in overhead.cpp, so that every case runs in a fixed order.
