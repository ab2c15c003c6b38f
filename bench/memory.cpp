// bench/memory.cpp — what the memory collector costs: a recorded
// PROF_ALLOC/PROF_FREE pair next to a recorded PROF_SCOPE and the rdtsc
// floor, and the operator new hook (proftrace::new_hook, linked into this
// binary only) on an allocation-heavy loop, against plain malloc/free.
// Every ratio comes from batches timed back to back in one run (see
// bench/README.md).
#include <proftrace/proftrace.hpp>

#include <x86intrin.h>

#include <cstdlib>
#include <string>

#include "batch.hpp"

namespace {

using proftrace_bench::batch_fn;
using proftrace_bench::kBatch;
using proftrace_bench::keep;
using proftrace_bench::report_per_scope;
using proftrace_bench::set_seconds_per_scope;
using proftrace_bench::time_batch;

char arena[64][64];  // addresses for PROF_ALLOC; nothing is really allocated

__attribute__((noinline)) void rdtsc_batch() noexcept { PROFTRACE_BENCH_INNER_LOOP(keep(__rdtsc()); keep(__rdtsc());) }
__attribute__((noinline)) void scope_batch() noexcept { PROFTRACE_BENCH_INNER_LOOP(PROF_SCOPE("x");) }
__attribute__((noinline)) void alloc_free_batch() noexcept {
  PROFTRACE_BENCH_INNER_LOOP(char* p = arena[proftrace_bench_i % 64]; PROF_ALLOC(p, 64); PROF_FREE(p);)
}
// The allocation-heavy loop: one 64-byte allocation written and freed per
// iteration, through malloc/free and through the (hooked) new/delete.
__attribute__((noinline)) void malloc_batch() noexcept {
  PROFTRACE_BENCH_INNER_LOOP(char* p = static_cast<char*>(std::malloc(64)); keep(p); p[0] = 1; std::free(p);)
}
__attribute__((noinline)) void new_batch() noexcept {
  PROFTRACE_BENCH_INNER_LOOP(char* p = new char[64]; keep(p); p[0] = 1; delete[] p;)
}

// Times the batches in rotating order every iteration, draining the rings
// untimed after each; t[k] is batch k's total.
template <std::size_t N>
void run_paired(benchmark::State& state, const batch_fn (&fns)[N], double (&t)[N], proftrace::session* p) {
  unsigned rot = 0;
  for (auto _ : state) {
    double it[N];
    for (unsigned k = 0; k < N; ++k) {
      const unsigned j = (rot + k) % N;
      it[j] = time_batch(fns[j]);
      if (p) p->flush();
    }
    rot = (rot + 1) % N;
    for (unsigned j = 0; j < N; ++j) t[j] += it[j];
    state.SetIterationTime(it[N - 1]);
  }
  report_per_scope(state);
}

// Fails the case unless the session lost nothing, recorded every allocation
// and free of the timed batches (the top-level "[memory]" row) and ends with
// them balanced. Google Benchmark allocates a few hundred bytes of its own
// inside the timed loop, which the hook records too: hence "at least" and a
// small allowance.
void check_memory_session(benchmark::State& state, proftrace::profile& p) {
  const auto averages = p.key_averages();
  std::int64_t events = 0;
  for (const auto& row : averages.rows)
    if (row.key == "[memory]") events = row.count;
  const std::int64_t expected = state.iterations() * static_cast<std::int64_t>(kBatch) * 2;
  const auto stats = p.memory_stats();
  const std::int64_t left = stats.empty() ? -1 : stats[0].current_allocated;
  if (averages.losses.total() != 0 || events < expected || left < 0 || left > 1024)
    state.SkipWithError(("lost " + std::to_string(averages.losses.total()) + " events, recorded " +
                         std::to_string(events) + " of " + std::to_string(expected) + ", " + std::to_string(left) +
                         " bytes left")
                            .c_str());
}

// A recorded PROF_ALLOC/PROF_FREE pair against a recorded PROF_SCOPE (both
// two events) and the rdtsc pair, with profile_memory on.
void BM_paired_alloc_free_vs_scope(benchmark::State& state) {
  proftrace::profile p({.profile_memory = true});
  p.start();
  { PROF_SCOPE("x"); }
  p.flush();
  static constexpr batch_fn fns[3] = {rdtsc_batch, scope_batch, alloc_free_batch};
  double t[3] = {0, 0, 0};
  run_paired(state, fns, t, &p);
  p.stop();
  check_memory_session(state, p);
  set_seconds_per_scope(state, "rdtsc_pair", t[0]);
  set_seconds_per_scope(state, "scope", t[1]);
  set_seconds_per_scope(state, "alloc_free", t[2]);
  state.counters["ratio_vs_rdtsc"] = t[0] > 0 ? t[2] / t[0] : 0;
  state.counters["ratio_vs_scope"] = t[1] > 0 ? t[2] / t[1] : 0;
}

// The hook with no session: what linking proftrace::new_hook costs a program
// that is not being profiled.
void BM_paired_new_hook_off(benchmark::State& state) {
  static constexpr batch_fn fns[2] = {malloc_batch, new_batch};
  double t[2] = {0, 0};
  run_paired(state, fns, t, nullptr);
  set_seconds_per_scope(state, "malloc_free", t[0]);
  set_seconds_per_scope(state, "new_delete", t[1]);
  state.counters["ratio"] = t[0] > 0 ? t[1] / t[0] : 0;
}

// The hook while a session records with profile_memory: every new and
// delete is a recorded event.
void BM_paired_new_hook_recorded(benchmark::State& state) {
  proftrace::profile p({.profile_memory = true});
  p.start();
  { PROF_SCOPE("x"); }
  p.flush();
  static constexpr batch_fn fns[2] = {malloc_batch, new_batch};
  double t[2] = {0, 0};
  run_paired(state, fns, t, &p);
  p.stop();
  check_memory_session(state, p);
  set_seconds_per_scope(state, "malloc_free", t[0]);
  set_seconds_per_scope(state, "new_delete", t[1]);
  state.counters["ratio"] = t[0] > 0 ? t[1] / t[0] : 0;
}

}  // namespace

BENCHMARK(BM_paired_alloc_free_vs_scope)->UseManualTime();
BENCHMARK(BM_paired_new_hook_off)->UseManualTime();
BENCHMARK(BM_paired_new_hook_recorded)->UseManualTime();

BENCHMARK_MAIN();
