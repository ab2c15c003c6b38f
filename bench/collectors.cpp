// bench/collectors.cpp — what the counters and OpenMP collectors add.
//
//   ./build-bench/bench/proftrace_bench_collectors --benchmark_min_time=0.2
//   OMP_TOOL=disabled ./build-bench/bench/proftrace_bench_collectors --benchmark_filter=parallel
//
// BM_scope_counter/<kind>: one recorded PROF_SCOPE with one counter of that
// kind read at its begin and end, next to the same scope without counters,
// batches timed back to back in one session (the counters' state bit is
// switched between them). BM_parallel_region: an empty `omp parallel` of
// two threads with the session recording (every OMPT callback pushes ring
// records) next to the same region with it not recording (callbacks return
// at once); with OMP_TOOL=disabled, the runtime loads no tool at all (the
// region's bare cost). Results: bench/README.md.
#include <proftrace/proftrace.hpp>

#include <string>

#include "batch.hpp"

#if PROFTRACE_BENCH_OPENMP
#include <omp.h>
#endif

namespace {

using proftrace_bench::kBatch;
using proftrace_bench::report_per_scope;
using proftrace_bench::set_seconds_per_scope;
using proftrace_bench::time_batch;
namespace d = proftrace::detail;

__attribute__((noinline)) void scope_batch() noexcept { PROFTRACE_BENCH_INNER_LOOP(PROF_SCOPE("x");) }

const char* const counter_names[] = {"task-clock", "context-switches", "page-faults", "cycles", "instructions"};

void BM_scope_counter(benchmark::State& state) {
#if PROFTRACE_WITH_COUNTERS
  const char* name = counter_names[state.range(0)];
  state.SetLabel(name);
  std::vector<std::string> seen;
  auto previous = proftrace::set_warning_handler([&](std::string_view m) { seen.emplace_back(m); });
  proftrace::profile p({.counters = {name}});
  p.start();
  proftrace::set_warning_handler(previous);
  if (!(d::session_state.load() & d::state_counters)) {
    p.stop();
    state.SkipWithError((std::string(name) + ": not counted here: " + (seen.empty() ? "" : seen[0])).c_str());
    return;
  }
  double plain = 0, counted = 0;
  bool plain_first = true;
  for (auto _ : state) {
    double tp = 0, tc = 0;
    for (int k = 0; k < 2; ++k) {
      const bool count = (k == 0) != plain_first;
      if (count) d::session_state.fetch_or(d::state_counters);
      else d::session_state.fetch_and(~std::uint32_t{d::state_counters});
      (count ? tc : tp) = time_batch(scope_batch);
      p.flush();
    }
    plain_first = !plain_first;
    plain += tp;
    counted += tc;
    state.SetIterationTime(tc);
  }
  d::session_state.fetch_or(d::state_counters);
  p.stop();
  report_per_scope(state);
  set_seconds_per_scope(state, "plain", plain);
  set_seconds_per_scope(state, "counted", counted);
  set_seconds_per_scope(state, "added", counted - plain);
#else
  state.SkipWithError("built without PROFTRACE_WITH_COUNTERS");
#endif
}
BENCHMARK(BM_scope_counter)->DenseRange(0, 4)->UseManualTime();

#if PROFTRACE_BENCH_OPENMP
constexpr int kRegions = 256;
__attribute__((noinline)) void regions_batch() noexcept {
  for (int i = 0; i < kRegions; ++i) {
#pragma omp parallel num_threads(2)
    { proftrace_bench::keep(i); }
  }
}

void BM_parallel_region(benchmark::State& state) {
  proftrace::profile p;
  p.start();
  const bool tool = p.activities().contains(proftrace::activity::openmp);
  state.SetLabel(tool ? "OMPT tool loaded" : "no OMPT tool (OMP_TOOL=disabled or no OMPT)");
  const std::uint32_t recording = d::session_state.load();
  double off = 0, on = 0;
  bool off_first = true;
  for (auto _ : state) {
    double t_off = 0, t_on = 0;
    for (int k = 0; k < 2; ++k) {
      const bool record = (k == 0) != off_first;
      d::session_state.store(record ? recording : (recording & ~std::uint32_t{d::state_recording}));
      (record ? t_on : t_off) = time_batch(regions_batch);
      p.flush();
    }
    off_first = !off_first;
    off += t_off;
    on += t_on;
    state.SetIterationTime(t_on);
  }
  d::session_state.store(recording);
  p.stop();
  const double n = static_cast<double>(state.iterations()) * kRegions;
  state.counters["region_not_recording"] = off / n;
  state.counters["region_recording"] = on / n;
  state.counters["added"] = (on - off) / n;
}
BENCHMARK(BM_parallel_region)->UseManualTime();
#endif

}  // namespace

BENCHMARK_MAIN();
