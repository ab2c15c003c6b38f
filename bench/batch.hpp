// bench/batch.hpp — the loop every case shares, so that the only difference
// between two cases is the body of the inner loop.
//
// Each benchmark iteration runs kBatch inner iterations (one scope, one
// rdtsc pair, or nothing each). Google Benchmark's "Time" column is therefore
// per batch; the `per_scope` counter is the time of one inner iteration
// (shown in seconds with an SI prefix: `14.2n` = 14.2 ns) and
// items_per_second counts inner iterations.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>

namespace proftrace_bench {

// 4096 scopes = 8192 events: a quarter of the default 32768-event ring, half
// of its watermark, so a recorded batch never reaches the ring's slow path
// when the ring is drained between batches.
inline constexpr std::uint32_t kBatch = 4096;

// Keeps a value alive. The const& overload of DoNotOptimize is an
// input-only "r,m" asm with a "memory" clobber: the loop must run every
// iteration, the value stays in a register, and nothing in memory can be
// assumed unchanged across it. (The clobber also makes GCC keep a scope
// guard in memory; see README, "Runtime off".)
template <class T>
inline __attribute__((always_inline)) void keep(const T& v) {
  benchmark::DoNotOptimize(v);
}

inline void report_per_scope(benchmark::State& state, std::int64_t per_iteration = kBatch) {
  const auto n = static_cast<double>(state.iterations()) * static_cast<double>(per_iteration);
  state.SetItemsProcessed(state.iterations() * per_iteration);
  state.counters["per_scope"] = benchmark::Counter(n, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// Paired cases time out-of-line batches back to back with steady_clock.
using batch_fn = void (*)() noexcept;

inline double time_batch(batch_fn f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A counter `name` holding total_s spread over every inner iteration.
inline void set_seconds_per_scope(benchmark::State& state, const char* name, double total_s) {
  state.counters[name] = total_s / (static_cast<double>(state.iterations()) * kBatch);
}

// Case (d), defined in overhead_disabled.cpp (built with PROFTRACE_ENABLED=0).
void BM_scope_compiled_out(benchmark::State& state);
// One batch of case (d) as an out-of-line function, for the paired case.
void compiled_out_batch() noexcept;

}  // namespace proftrace_bench

// The inner loop: BODY once per inner iteration, with the counter kept
// alive so the loop cannot be dropped or collapsed.
#define PROFTRACE_BENCH_INNER_LOOP(...)                                          \
  for (std::uint32_t proftrace_bench_i = 0; proftrace_bench_i < ::proftrace_bench::kBatch; \
       ++proftrace_bench_i) {                                                    \
    __VA_ARGS__                                                                  \
    ::proftrace_bench::keep(proftrace_bench_i);                                  \
  }
