// bench/placement.cpp — does a switched-off kernel run at full speed? The
// CSR matvec of bench/csr_matvec.hpp compiled plain and with its three
// macros (no session: runtime off), each at several code placements (a
// jumped-over pad before the loop), run alternated in one process
// (bench/run passes --benchmark_enable_random_interleaving). The spread of
// the plain copies over placements is what placement alone does; the
// instrumented copies should fall within it (bench/notes/history.md, "Macros
// off the switched-off path").
//
// BM_matvec/<plain|off>/pad:<bytes>: one product per iteration; counter
// ns_per_row.
#include <benchmark/benchmark.h>

#include <string>
#include <utility>
#include <vector>

#include "csr_matvec.hpp"

namespace proftrace_bench {
namespace {

const csr_matrix& matrix() {
  static const csr_matrix a = laplacian_2d(64);  // 4,096 rows, 20,224 entries: in L2, the loop's speed shows
  return a;
}

using kernel = void (*)(const csr_view&, const double*, double*) noexcept;

void run(benchmark::State& state, kernel k) {
  if (proftrace::detail::session_state.load() != 0) {
    state.SkipWithError("a session is running: this benchmark measures the runtime-off path");
    return;
  }
  const csr_view a = matrix().view();
  std::vector<double> x(a.n, 1.0), y(a.n);
  for (auto _ : state) {
    k(a, x.data(), y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.counters["ns_per_row"] =
      benchmark::Counter(static_cast<double>(a.n), benchmark::Counter::kIsIterationInvariantRate |
                                                       benchmark::Counter::kInvert);
}

template <int... Pads>
void register_placements(std::integer_sequence<int, Pads...>) {
  (benchmark::RegisterBenchmark(("BM_matvec/plain/pad:" + std::to_string(Pads)).c_str(),
                                [](benchmark::State& s) { run(s, &matvec_plain<Pads>); }),
   ...);
  (benchmark::RegisterBenchmark(("BM_matvec/off/pad:" + std::to_string(Pads)).c_str(),
                                [](benchmark::State& s) { run(s, &matvec_instrumented<Pads>); }),
   ...);
}

const int registered = (register_placements(std::integer_sequence<int, 0, 7, 16, 23, 32, 45, 53>{}), 0);

}  // namespace
}  // namespace proftrace_bench

BENCHMARK_MAIN();
