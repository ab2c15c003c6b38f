// bench/whole_cost.cpp — the whole CPU cost of a recorded scope as a user
// meets it: every thread's CPU time (the producers', the flusher's, the
// trace file's writes) from start() to a finished trace file (stop() and
// export_chrome_trace() returned, to .json or .pftrace),
// per recorded scope. The hot-path figure of proftrace_bench (two clock
// reads and two ring writes, about 20-25 ns) is only the producer's share.
//
// BM_whole_cost/<threads>/<format>/<depth>: a default session except for the `block` policy
// (format 0 .json, 1 .pftrace, 2 none: a profile-only session, aggregates and no trace, no export)
// (lossless, so every scope is written and counted: under `drop` a producer
// faster than the flusher would make the flusher's share look smaller by
// losing events); `threads` threads each record kScopes scopes of an empty
// body, flat out (depth 1) or nested three deep (depth 3: outer { mid { x } },
// as real programs nest); the process's user + system CPU (getrusage(RUSAGE_SELF))
// is read before start() and after the export. Counters, per recorded scope:
// cpu_per_scope (the whole cost), system_cpu_per_scope (its share in the
// kernel: the trace's writes, wake-ups, page faults), producer_cpu_per_scope (the recording
// threads' own CPU time, CLOCK_THREAD_CPUTIME_ID: the hot path as the
// program's threads pay it), wall_per_scope, and lost (must be 0).
//
// BM_whole_cost_baseline/<threads>/<floor>: the same threads and loop with
// no session, the scope replaced by its floor: two raw rdtsc reads (floor
// 0) or two steady_clock::now() calls (floor 1). Its cpu_per_scope is what
// the loop, the threads and the clock reads cost without proftrace; the
// difference is what proftrace adds.
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>
#include <x86intrin.h>

#include <proftrace/macros.hpp>
#include <proftrace/profile.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr std::int64_t kScopes = 500'000;  // per thread and iteration

// The whole process's CPU time so far (every thread), seconds: user +
// system, and system alone.
struct cpu_seconds {
  double all = 0, system = 0;
};
cpu_seconds process_cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  const double system = static_cast<double>(u.ru_stime.tv_sec) + static_cast<double>(u.ru_stime.tv_usec) * 1e-6;
  return {static_cast<double>(u.ru_utime.tv_sec) + static_cast<double>(u.ru_utime.tv_usec) * 1e-6 + system, system};
}

// The calling thread's CPU time, seconds.
double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Runs `body(n)` on a thread and adds that thread's CPU time to `cpu_ns`.
template <class Body>
std::thread timed_thread(Body body, std::int64_t n, std::atomic<std::int64_t>& cpu_ns) {
  return std::thread([body, n, &cpu_ns] {
    const double c0 = thread_cpu_seconds();
    body(n);
    cpu_ns.fetch_add(static_cast<std::int64_t>((thread_cpu_seconds() - c0) * 1e9));
  });
}

std::filesystem::path scratch_dir() {
  auto dir = std::filesystem::temp_directory_path() / ("proftrace-bench-whole-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

void record_scopes(std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    PROF_SCOPE("x");
    benchmark::DoNotOptimize(i);
  }
}

// About n scopes, three levels deep.
void record_nested_scopes(std::int64_t n) {
  for (std::int64_t i = 0; i < n / 3; ++i) {
    PROF_SCOPE("outer");
    {
      PROF_SCOPE("mid");
      {
        PROF_SCOPE("x");
        benchmark::DoNotOptimize(i);
      }
    }
  }
}

void rdtsc_pairs(std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    benchmark::DoNotOptimize(__rdtsc());
    benchmark::DoNotOptimize(i);
    benchmark::DoNotOptimize(__rdtsc());
  }
}

void clock_pairs(std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    benchmark::DoNotOptimize(std::chrono::steady_clock::now());
    benchmark::DoNotOptimize(i);
    benchmark::DoNotOptimize(std::chrono::steady_clock::now());
  }
}

// A run's measured intervals: the whole process's CPU time and the wall
// time of each, the producers' own CPU time, the scopes recorded.
struct totals {
  double cpu = 0, system = 0, wall = 0;
  std::int64_t scopes = 0;
  std::atomic<std::int64_t> producer_ns{0};

  // One measured interval, from construction to end().
  class interval {
   public:
    explicit interval(totals& into) : into_(into), c0_(process_cpu_seconds()), t0_(std::chrono::steady_clock::now()) {}
    void end(benchmark::State& state, std::int64_t scopes) {
      const auto t1 = std::chrono::steady_clock::now();
      const cpu_seconds c1 = process_cpu_seconds();
      const double seconds = std::chrono::duration<double>(t1 - t0_).count();
      state.SetIterationTime(seconds);
      into_.cpu += c1.all - c0_.all;
      into_.system += c1.system - c0_.system;
      into_.wall += seconds;
      into_.scopes += scopes;
    }

   private:
    totals& into_;
    cpu_seconds c0_;
    std::chrono::steady_clock::time_point t0_;
  };

  void report(benchmark::State& state) const {
    const auto n = static_cast<double>(scopes);
    state.counters["cpu_per_scope"] = cpu / n;
    state.counters["system_cpu_per_scope"] = system / n;
    state.counters["producer_cpu_per_scope"] = static_cast<double>(producer_ns.load()) * 1e-9 / n;
    state.counters["wall_per_scope"] = wall / n;
    state.counters["scopes"] = n;
  }
};

void BM_whole_cost(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const auto format = std::array{proftrace::trace_format::json, proftrace::trace_format::pftrace,
                                 proftrace::trace_format::none}[static_cast<std::size_t>(state.range(1))];
  const bool pftrace = format == proftrace::trace_format::pftrace;
  const bool profile_only = format == proftrace::trace_format::none;
  const bool nested = state.range(2) == 3;
  const std::int64_t per_thread = nested ? kScopes / 3 * 3 : kScopes;
  const auto dir = scratch_dir();
  totals run;
  std::int64_t lost = 0, seen = 0;
  const auto trace = dir / (pftrace ? "trace.pftrace" : "trace.json");
  for (auto _ : state) {
    // Not part of the cost: replacing the last iteration's trace would make
    // the export's rename free its pages and (ext4) flush the new file first.
    std::filesystem::remove(trace);
    totals::interval measured(run);
    {
      proftrace::profile p({.overflow = proftrace::overflow_policy::block,
                            .stream_format = format,
                            .spool_dir = dir});
      p.start();
      std::vector<std::thread> workers;
      for (int t = 0; t < threads; ++t) workers.push_back(timed_thread(nested ? record_nested_scopes : record_scopes, kScopes, run.producer_ns));
      for (auto& w : workers) w.join();
      p.stop();  // every event drained and written to the spool
      if (!profile_only) p.export_chrome_trace(trace);  // the finished trace file
      measured.end(state, threads * per_thread);
      // Checked after the measurement: the report is not part of the cost.
      const auto avg = p.key_averages();
      lost += static_cast<std::int64_t>(avg.losses.total());
      for (const auto& row : avg.rows)
        if (row.key == "x" || row.key == "mid" || row.key == "outer") seen += row.count;
    }
  }
  std::filesystem::remove_all(dir);
  if (lost != 0) state.SkipWithError(("the block policy lost " + std::to_string(lost) + " events").c_str());
  else if (seen != run.scopes)
    state.SkipWithError(("counted " + std::to_string(seen) + " scopes, expected " + std::to_string(run.scopes)).c_str());
  run.report(state);
  state.counters["lost"] = static_cast<double>(lost);
  state.SetLabel(std::to_string(threads) + " thread" + (threads > 1 ? "s" : "") + ", recorded, " +
                 (profile_only ? "profile only" : pftrace ? ".pftrace" : ".json") + (nested ? ", nested 3 deep" : ", flat"));
}

void BM_whole_cost_baseline(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const bool steady = state.range(1) != 0;
  totals run;
  for (auto _ : state) {
    totals::interval measured(run);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.push_back(timed_thread(steady ? clock_pairs : rdtsc_pairs, kScopes, run.producer_ns));
    for (auto& w : workers) w.join();
    measured.end(state, threads * kScopes);
  }
  run.report(state);
  state.SetLabel(std::to_string(threads) + " thread" + (threads > 1 ? "s" : "") +
                 (steady ? ", steady_clock pair" : ", rdtsc pair"));
}

}  // namespace

BENCHMARK(BM_whole_cost_baseline)
    ->ArgsProduct({{1, 2}, {0, 1}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK(BM_whole_cost)
    ->ArgsProduct({{1, 2}, {0, 1, 2}, {1, 3}})
    ->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(3);

BENCHMARK_MAIN();
