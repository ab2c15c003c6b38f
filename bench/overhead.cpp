// bench/overhead.cpp — what one PROF_SCOPE costs, next to its floor (two raw
// timestamp reads) and its peers, all in one binary and one run.
//
// Every case times batches of kBatch (4096) inner iterations; the
// `per_scope` counter is the time of one inner iteration. See
// bench/README.md for the cases and how to read them.
#include <proftrace/macros.hpp>
#include <proftrace/proftrace.h>
#include <proftrace/profile.hpp>

#include <x86intrin.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "batch.hpp"
#include "peers.hpp"

#if PROFTRACE_WITH_CUDA
#include "collect/cuda/cupti_collector.hpp"
#endif

#if PROFTRACE_BENCH_NVTX3
#include <nvtx3/nvtx3.hpp>
#endif

#if PROFTRACE_BENCH_LIKWID
#include <likwid-marker.h>
#endif

namespace {

using proftrace_bench::kBatch;
using proftrace_bench::keep;
using proftrace_bench::batch_fn;
using proftrace_bench::report_per_scope;
using proftrace_bench::set_seconds_per_scope;
using proftrace_bench::time_batch;

// (a) The loop alone: the counter kept in a register, nothing else.
void BM_empty_loop(benchmark::State& state) {
  for (auto _ : state) {
    PROFTRACE_BENCH_INNER_LOOP()
  }
  report_per_scope(state);
}

// (b) The floor of a recorded scope: two raw rdtsc reads (no fence), both
// results kept.
void BM_rdtsc_pair(benchmark::State& state) {
  for (auto _ : state) {
    PROFTRACE_BENCH_INNER_LOOP(keep(__rdtsc()); keep(__rdtsc());)
  }
  report_per_scope(state);
}

// Runs after a recorded case: the session must have lost nothing and its "x"
// row must count every scope (the timed ones plus `extra` untimed ones).
void check_session(benchmark::State& state, proftrace::profile& p, std::int64_t extra) {
  const std::int64_t expected = state.iterations() * static_cast<std::int64_t>(kBatch) + extra;
  const proftrace::event_averages avg = p.key_averages();
  std::int64_t seen = 0;
  for (const auto& row : avg.rows)
    if (row.key == "x") seen += row.count;
  const proftrace::loss_counts& l = avg.losses;
  if (l.total() != 0) {
    state.SkipWithError(("session lost events: dropped=" + std::to_string(l.dropped) +
                         " overwritten=" + std::to_string(l.overwritten) + " unattached=" + std::to_string(l.unattached) +
                         " late=" + std::to_string(l.late) + " unpaired=" + std::to_string(l.unpaired))
                            .c_str());
  } else if (seen != expected) {
    state.SkipWithError(("\"x\" counted " + std::to_string(seen) + " scopes, expected " + std::to_string(expected)).c_str());
  }
  state.counters["lost"] = static_cast<double>(l.total());
}

// (c) One recorded PROF_SCOPE per inner iteration, a default session
// running. The ring (32768 events, watermark 16384) is drained between
// batches with the timer paused, so each batch (8192 events) writes into
// ring memory touched long before (no page faults), never takes the slow
// path and drops nothing. The drain itself runs on this core and evicts part
// of the ring from its caches (see README: "what the ring writes cost").
// Runs `batch` once per benchmark iteration inside a running default
// session whose ring is drained, untimed, after each batch; then checks that
// nothing was lost.
template <class Batch>
void run_recorded(benchmark::State& state, Batch batch, proftrace::profile_options options = {}) {
  proftrace::profile p(std::move(options));
  p.start();
  { PROF_SCOPE("x"); }  // attaches (allocates and touches) this thread's ring
  p.flush();
  for (auto _ : state) {
    batch();
    state.PauseTiming();
    p.flush();
    state.ResumeTiming();
  }
  p.stop();
  report_per_scope(state);
  check_session(state, p, 1);
}

void BM_scope_recorded(benchmark::State& state) {
  run_recorded(state, [] { PROFTRACE_BENCH_INNER_LOOP(PROF_SCOPE("x");) });
}

// (c1) The same with PROF_SCOPE_DYNAMIC: the name "x" from a runtime
// std::string, copied into an extension slot (a 2-slot begin), aggregated
// by its text into the "x" row.
void BM_scope_dynamic_recorded(benchmark::State& state) {
  const std::string name = std::getenv("PROFTRACE_BENCH_NEVER_SET") ? "never" : "x";
  run_recorded(state, [&name] { PROFTRACE_BENCH_INNER_LOOP(PROF_SCOPE_DYNAMIC(name);) });
}

// (c1') The C API's scopes: proftrace_push copies "x" (the dynamic-name
// record), proftrace_push_literal records an interned site; both pop with
// proftrace_pop. Out-of-line calls through the thread's C scope stack.
void BM_c_push_pop_recorded(benchmark::State& state) {
  run_recorded(state, [] { PROFTRACE_BENCH_INNER_LOOP(proftrace_push("x"); proftrace_pop();) });
}
void BM_c_push_literal_pop_recorded(benchmark::State& state) {
  run_recorded(state, [] { PROFTRACE_BENCH_INNER_LOOP(proftrace_push_literal("x"); proftrace_pop();) });
}

// (c2) The same with two threads recording at once into one session, each
// draining (untimed) after its batches: what sharing the flusher and the
// cores costs. The session is shared, started and checked around the run.
std::unique_ptr<proftrace::profile> shared_session;

void start_shared_session(const benchmark::State&) {
  shared_session = std::make_unique<proftrace::profile>();
  shared_session->start();
}

void stop_shared_session(const benchmark::State&) {
  shared_session->stop();
  const auto avg = shared_session->key_averages();
  if (avg.losses.total() != 0) {
    std::fprintf(stderr, "BM_scope_recorded_threads: the session lost %llu events\n",
                 static_cast<unsigned long long>(avg.losses.total()));
    std::exit(1);
  }
  shared_session.reset();
}

void BM_scope_recorded_threads(benchmark::State& state) {
  { PROF_SCOPE("x"); }
  for (auto _ : state) {
    PROFTRACE_BENCH_INNER_LOOP(PROF_SCOPE("x");)
    state.PauseTiming();
    shared_session->flush();
    state.ResumeTiming();
  }
  report_per_scope(state);
}

// (h) Recorded with input shapes (record_shapes): two 2-D shapes travel in
// the ring's extension slots.
void BM_scope_recorded_shapes(benchmark::State& state) {
  run_recorded(
      state, [] { PROFTRACE_BENCH_INNER_LOOP(PROF_SCOPE_SHAPES("x", {64, 64}, {64, 64});) },
      {.record_shapes = true});
}

// (i) Recorded with the FLOP and memory collectors on: a scope, a matmul
// estimate, and an allocation and its free (PROF_ALLOC / PROF_FREE), as an
// instrumented kernel with a temporary buffer would record them.
void BM_scope_recorded_flops_memory(benchmark::State& state) {
  static char buffer[64];
  run_recorded(
      state,
      [] {
        PROFTRACE_BENCH_INNER_LOOP(PROF_SCOPE("x"); PROF_MATMUL(64, 64, 64); PROF_ALLOC(buffer, 64);
                                   PROF_FREE(buffer);)
      },
      {.profile_memory = true, .with_flops = true});
}

// (j) A session that is running but in a wait phase of its schedule: the
// scope sees "not recording" exactly as with no session.
void BM_scope_session_waiting(benchmark::State& state) {
  proftrace::profile p({.schedule = proftrace::schedule({.wait = 1 << 30, .warmup = 1, .active = 1})});
  p.start();
  if (proftrace::detail::recording()) state.SkipWithError("the wait phase records");
  for (auto _ : state) {
    PROFTRACE_BENCH_INNER_LOOP(PROF_SCOPE("x");)
  }
  p.stop();
  report_per_scope(state);
}

// ---- peers ----

// (k) Two std::chrono::steady_clock reads (clock_gettime through the vDSO).
void BM_steady_clock_pair(benchmark::State& state) {
  for (auto _ : state) {
    PROFTRACE_BENCH_INNER_LOOP(keep(std::chrono::steady_clock::now()); keep(std::chrono::steady_clock::now());)
  }
  report_per_scope(state);
}

// (l) The floor of a ring design: rdtsc + push for begin and end into the
// minimal SPSC ring of peers.hpp (same size as proftrace's default ring),
// drained untimed between batches like (c).
void BM_spsc_ring_floor(benchmark::State& state) {
  static const char site = 0;
  const auto where = reinterpret_cast<std::uintptr_t>(&site);
  proftrace_bench::spsc_ring ring(PROFTRACE_RING_EVENTS);
  std::uint64_t full = 0;
  for (auto _ : state) {
    PROFTRACE_BENCH_INNER_LOOP(full += !ring.push(__rdtsc(), where, 0); full += !ring.push(__rdtsc(), where, 1);)
    state.PauseTiming();
    keep(ring.drain());
    state.ResumeTiming();
  }
  if (full) state.SkipWithError("the SPSC ring filled up");
  report_per_scope(state);
}

// (m) A design that touches new memory on the hot path: rdtsc + append into
// pages never written before (peers.hpp's append_log), fresh for each batch.
void BM_append_log_new_memory(benchmark::State& state) {
  static const char site = 0;
  const auto where = reinterpret_cast<std::uintptr_t>(&site);
  proftrace_bench::append_log log;
  for (auto _ : state) {
    state.PauseTiming();
    log.reset(2 * kBatch);
    state.ResumeTiming();
    PROFTRACE_BENCH_INNER_LOOP(log.push(__rdtsc(), where, 0); log.push(__rdtsc(), where, 1);)
  }
  if (!log.ok()) state.SkipWithError("mmap failed");
  report_per_scope(state);
}

// (e) PROF_SCOPE compiled in, no session running: one relaxed load of the
// session state and a not-taken branch per scope.
void BM_scope_runtime_off(benchmark::State& state) {
  if (proftrace::detail::recording()) {
    state.SkipWithError("a session is running");
    return;
  }
  for (auto _ : state) {
    PROFTRACE_BENCH_INNER_LOOP(PROF_SCOPE("x");)
  }
  report_per_scope(state);
}

// Diagnostic (not a macro a user writes): the two ring pushes of a recorded
// scope without its clock reads and without the guard — timestamps are a
// per-batch base plus the loop counter — to show what the ring writes alone
// cost. Same session, same draining as (c).
void BM_diag_ring_push_pair(benchmark::State& state) {
  namespace d = proftrace::detail;
  static constexpr d::site site{"x", "BM_diag_ring_push_pair", __FILE__, __LINE__, d::category::user_annotation};
  const auto where = reinterpret_cast<std::uintptr_t>(&site);
  run_recorded(state, [where] {
    d::ring* r = d::thread_ring();
    const std::uint64_t base = d::now_ticks();
    for (std::uint32_t i = 0; i < kBatch; ++i) {
      r->push(base + 2 * i, where, 0, d::event_kind::begin);
      r->push(base + 2 * i + 1, where, 0, d::event_kind::end);
      keep(i);
    }
  });
}

// ---- paired cases: the ratios, measured batch against batch ----
//
// On a shared VM the speed of the core drifts by 10-30% between one case and
// the next, which moves a ratio of two separately measured medians by as
// much. A paired case runs the two batches back to back in every iteration
// (order alternating), timing each with steady_clock, so both see the same
// conditions; its `ratio` counter is total(B) / total(A) over the run.

__attribute__((noinline)) void empty_batch() noexcept { PROFTRACE_BENCH_INNER_LOOP() }
__attribute__((noinline)) void rdtsc_batch() noexcept { PROFTRACE_BENCH_INNER_LOOP(keep(__rdtsc()); keep(__rdtsc());) }
__attribute__((noinline)) void scope_batch() noexcept { PROFTRACE_BENCH_INNER_LOOP(PROF_SCOPE("x");) }

// Recorded PROF_SCOPE (B) against the rdtsc pair (A), session running, ring
// drained after every iteration (untimed for the ratio). Manual time is B's,
// so unlike (c) no PauseTiming/ResumeTiming cost is spread over the batch.
void BM_paired_recorded_vs_rdtsc(benchmark::State& state) {
  proftrace::profile p;
  p.start();
  { PROF_SCOPE("x"); }
  p.flush();
  double a = 0, b = 0, flushing = 0;
  bool a_first = true;
  for (auto _ : state) {
    double ta, tb;
    if (a_first) {
      ta = time_batch(rdtsc_batch);
      tb = time_batch(scope_batch);
    } else {
      tb = time_batch(scope_batch);
      ta = time_batch(rdtsc_batch);
    }
    a_first = !a_first;
    a += ta;
    b += tb;
    state.SetIterationTime(tb);
    const auto f0 = std::chrono::steady_clock::now();
    p.flush();
    flushing += std::chrono::duration<double>(std::chrono::steady_clock::now() - f0).count();
  }
  p.stop();
  report_per_scope(state);
  check_session(state, p, 1);
  set_seconds_per_scope(state, "rdtsc_pair", a);
  state.counters["ratio"] = a > 0 ? b / a : 0;
  // Not part of the scope's cost: session::flush() time per scope drained
  // (two events). Above per_scope, a thread recording without pause
  // outruns the flusher and its ring eventually overflows.
  set_seconds_per_scope(state, "flush_per_scope", flushing);
}

// The empty loop (A) against PROF_SCOPE compiled out and compiled in with no
// session (runtime off), all three as out-of-line batches, rotating order.
void BM_paired_off_vs_empty(benchmark::State& state) {
  if (proftrace::detail::recording()) {
    state.SkipWithError("a session is running");
    return;
  }
  static constexpr batch_fn fns[3] = {empty_batch, proftrace_bench::compiled_out_batch, scope_batch};
  double t[3] = {0, 0, 0};
  unsigned rot = 0;
  for (auto _ : state) {
    double it[3];
    for (unsigned k = 0; k < 3; ++k) {
      const unsigned j = (rot + k) % 3;
      it[j] = time_batch(fns[j]);
    }
    rot = (rot + 1) % 3;
    for (unsigned j = 0; j < 3; ++j) t[j] += it[j];
    state.SetIterationTime(it[0]);
  }
  report_per_scope(state);
  set_seconds_per_scope(state, "empty", t[0]);
  set_seconds_per_scope(state, "compiled_out", t[1]);
  set_seconds_per_scope(state, "runtime_off", t[2]);
  state.counters["ratio_compiled_out"] = t[0] > 0 ? t[1] / t[0] : 0;
  state.counters["ratio_runtime_off"] = t[0] > 0 ? t[2] / t[0] : 0;
}

#if PROFTRACE_WITH_CUDA
// (g) What proftrace itself adds to a recorded scope while CUPTI collects:
// a fresh external id, the out-of-line push before the begin and the pop
// after the end, through the CUPTI table. The table here is a no-op that
// succeeds, so CUPTI's own push/pop (measured on a GPU machine) is not in
// the figure. Plain and correlated batches alternate in one session by
// flipping its CUDA bit between them.
namespace fake_cupti {
namespace d = proftrace::detail;
const d::cupti_api table{
    [](CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) { return CUPTI_SUCCESS; },
    [](CUpti_ActivityKind) { return CUPTI_SUCCESS; },
    [](CUpti_ActivityKind) { return CUPTI_SUCCESS; },
    [](std::uint32_t) { return CUPTI_SUCCESS; },
    [](std::uint8_t*, std::size_t, CUpti_Activity**) { return CUPTI_ERROR_MAX_LIMIT_REACHED; },
    [](CUcontext, std::uint32_t, std::size_t* n) {
      *n = 0;
      return CUPTI_SUCCESS;
    },
    [](CUpti_ExternalCorrelationKind, std::uint64_t id) {
      benchmark::DoNotOptimize(id);
      return CUPTI_SUCCESS;
    },
    [](CUpti_ExternalCorrelationKind, std::uint64_t* id) {
      *id = 0;
      return CUPTI_SUCCESS;
    },
    [](std::uint64_t* ns) {
      *ns = 0;
      return CUPTI_SUCCESS;
    },
    [](CUpti_CallbackDomain, std::uint32_t, const char**) { return CUPTI_ERROR_INVALID_PARAMETER; },
    [](CUptiResult, const char**) { return CUPTI_ERROR_INVALID_PARAMETER; },
    [](CUpti_ActivityThreadIdType) { return CUPTI_SUCCESS; },
    [](int* count) {
      *count = 1;
      return 0;
    },
    [] { return 0; },
    [](int, d::gpu_device_properties*) { return 1; },
};
}  // namespace fake_cupti

void BM_paired_correlated_vs_plain(benchmark::State& state) {
  namespace d = proftrace::detail;
  d::cupti_collector::instance().use_api(&fake_cupti::table);
  {
    proftrace::profile p;
    p.start();
    if (!(d::session_state.load() & d::state_cuda)) {
      state.SkipWithError("CUDA collection did not start with the no-op CUPTI table");
      d::cupti_collector::instance().use_api(nullptr);
      return;
    }
    { PROF_SCOPE("x"); }
    p.flush();
    double plain = 0, correlated = 0, flushing = 0;
    bool plain_first = true;
    for (auto _ : state) {
      double tp = 0, tc = 0;
      for (int k = 0; k < 2; ++k) {
        const bool correlate = (k == 0) != plain_first;
        if (correlate) d::session_state.fetch_or(d::state_cuda);
        else d::session_state.fetch_and(~std::uint32_t{d::state_cuda});
        (correlate ? tc : tp) = time_batch(scope_batch);
        const auto f0 = std::chrono::steady_clock::now();
        p.flush();
        flushing += std::chrono::duration<double>(std::chrono::steady_clock::now() - f0).count();
      }
      plain_first = !plain_first;
      plain += tp;
      correlated += tc;
      state.SetIterationTime(tc);
    }
    d::session_state.fetch_or(d::state_cuda);
    p.stop();
    report_per_scope(state);
    check_session(state, p, state.iterations() * static_cast<std::int64_t>(kBatch) + 1);  // two batches an iteration
    set_seconds_per_scope(state, "plain", plain);
    set_seconds_per_scope(state, "correlated", correlated);
    state.counters["ratio"] = plain > 0 ? correlated / plain : 0;
    set_seconds_per_scope(state, "flush_per_scope", flushing);
  }
  d::cupti_collector::instance().use_api(nullptr);
}
#endif

#if PROFTRACE_BENCH_NVTX3
// (f) NVTX3 with no tool attached: the first call finds no injection library
// and sets the function-pointer table to null, so each later call is a load
// and a not-taken branch.
void BM_nvtx3_push_pop(benchmark::State& state) {
  nvtxRangePushA("x");  // first call: initialisation
  nvtxRangePop();
  for (auto _ : state) {
    PROFTRACE_BENCH_INNER_LOOP(nvtxRangePushA("x"); nvtxRangePop();)
  }
  report_per_scope(state);
}

void BM_nvtx3_scoped_range(benchmark::State& state) {
  { nvtx3::scoped_range r{"x"}; }
  for (auto _ : state) {
    PROFTRACE_BENCH_INNER_LOOP(nvtx3::scoped_range r{"x"};)
  }
  report_per_scope(state);
}
#endif

#if PROFTRACE_BENCH_LIKWID
// (n) LIKWID's marker API outside likwid-perfctr (its inactive path: the
// region name is still looked up on every start and stop).
void BM_likwid_marker(benchmark::State& state) {
  LIKWID_MARKER_INIT;
  LIKWID_MARKER_REGISTER("x");
  for (auto _ : state) {
    PROFTRACE_BENCH_INNER_LOOP(LIKWID_MARKER_START("x"); LIKWID_MARKER_STOP("x");)
  }
  LIKWID_MARKER_CLOSE;
  report_per_scope(state);
}
#endif

}  // namespace

using proftrace_bench::BM_scope_compiled_out;

BENCHMARK(BM_empty_loop);
BENCHMARK(BM_rdtsc_pair);
BENCHMARK(BM_scope_recorded);
BENCHMARK(BM_scope_dynamic_recorded);
BENCHMARK(BM_c_push_pop_recorded);
BENCHMARK(BM_c_push_literal_pop_recorded);
BENCHMARK(BM_scope_compiled_out);
BENCHMARK(BM_scope_runtime_off);
BENCHMARK(BM_scope_recorded_threads)->Threads(2)->Setup(start_shared_session)->Teardown(stop_shared_session);
BENCHMARK(BM_scope_recorded_shapes);
BENCHMARK(BM_scope_recorded_flops_memory);
BENCHMARK(BM_scope_session_waiting);
BENCHMARK(BM_steady_clock_pair);
BENCHMARK(BM_spsc_ring_floor);
BENCHMARK(BM_append_log_new_memory);
BENCHMARK(BM_diag_ring_push_pair)->MinTime(0.1);  // a diagnostic: its flushes take 40x its timed part
BENCHMARK(BM_paired_recorded_vs_rdtsc)->UseManualTime();
BENCHMARK(BM_paired_off_vs_empty)->UseManualTime();
#if PROFTRACE_WITH_CUDA
BENCHMARK(BM_paired_correlated_vs_plain)->UseManualTime();
#endif
#if PROFTRACE_BENCH_NVTX3
BENCHMARK(BM_nvtx3_push_pop);
BENCHMARK(BM_nvtx3_scoped_range);
#endif
#if PROFTRACE_BENCH_LIKWID
BENCHMARK(BM_likwid_marker);
#endif

BENCHMARK_MAIN();
