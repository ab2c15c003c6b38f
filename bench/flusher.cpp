// bench/flusher.cpp — how fast the flusher turns events into a trace file,
// and at what producer rate the default ring starts to drop.
//
// BM_flusher_throughput/<format>/<producers>: producer threads record
// scopes as fast as they can under the `block` policy (lossless: a full
// ring waits for the flusher), so the run takes as long as the flusher
// needs. Timed: from the first scope to the exported file in the format
// (.json is the spool the flusher writes while recording, copied; .json.gz
// and .json.zst compress it on export; .pftrace, .pftrace.gz and .pftrace.zst
// stream Perfetto's format, copied or compressed on export). Counters: complete
// events per second (drain + write + export), the share of it spent
// exporting, the file's bytes per scope, and the process's peak resident memory.
//
// BM_flusher_drop_onset/<scopes per second per thread>/<format>/<busy>/<ring>:
// two threads, each pacing its scopes with the TSC at the given rate for
// 0.5 s, `drop` policy, a ring of `ring` events (0: the default), beside
// `busy` processes that spin on the
// CPUs for the whole run (started by the benchmark: a node whose cores are
// taken, where the flusher waits to be scheduled); counters: the fraction
// of events dropped, the rate actually reached, the load average after the
// run and the ring memory per recording thread.
#include <benchmark/benchmark.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <x86intrin.h>

#include <proftrace/macros.hpp>
#include <proftrace/profile.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "proftrace/detail/clock.hpp"

namespace {

constexpr const char* formats[] = {".json", ".json.gz", ".json.zst", ".pftrace", ".pftrace.gz", ".pftrace.zst"};

// The session streams the format it exports: Perfetto's for .pftrace.
proftrace::trace_format stream_format_for(const std::string& format) {
  return format.starts_with(".pftrace") ? proftrace::trace_format::pftrace : proftrace::trace_format::json;
}

double peak_rss_mib() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

std::filesystem::path scratch_dir() {
  auto dir = std::filesystem::temp_directory_path() / ("proftrace-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

void record_flat_out(std::int64_t scopes) {
  for (std::int64_t i = 0; i < scopes; ++i) {
    PROF_SCOPE("x");
    benchmark::DoNotOptimize(i);
  }
}

void BM_flusher_throughput(benchmark::State& state) {
  const std::string format = formats[state.range(0)];
  const int producers = static_cast<int>(state.range(1));
  constexpr std::int64_t scopes_per_thread = 1'000'000;
  const auto dir = scratch_dir();
  double exporting = 0;
  std::int64_t events = 0;
  std::uintmax_t bytes = 0;
  for (auto _ : state) {
    proftrace::profile p(
        {.overflow = proftrace::overflow_policy::block, .stream_format = stream_format_for(format), .spool_dir = dir});
    const auto t0 = std::chrono::steady_clock::now();
    p.start();
    std::vector<std::thread> threads;
    for (int t = 0; t < producers; ++t) threads.emplace_back(record_flat_out, scopes_per_thread);
    for (auto& t : threads) t.join();
    p.stop();
    const auto t1 = std::chrono::steady_clock::now();
    p.export_chrome_trace(dir / ("trace" + format));
    const auto t2 = std::chrono::steady_clock::now();
    bytes += std::filesystem::file_size(dir / ("trace" + format));
    state.SetIterationTime(std::chrono::duration<double>(t2 - t0).count());
    exporting += std::chrono::duration<double>(t2 - t1).count();
    const auto avg = p.key_averages();
    if (avg.losses.total() != 0) state.SkipWithError("the block policy lost events");
    for (const auto& row : avg.rows)
      if (row.key == "x") events += row.count;
  }
  std::filesystem::remove_all(dir);
  // kIsRate divides by the total manual time: drain, write and export.
  state.counters["events_per_second"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["export_seconds"] = exporting / static_cast<double>(state.iterations());
  state.counters["bytes_per_scope"] = events > 0 ? static_cast<double>(bytes) / static_cast<double>(events) : 0;
  state.counters["peak_rss_MiB"] = peak_rss_mib();
  state.SetLabel(format + ", " + std::to_string(producers) + " producer" + (producers > 1 ? "s" : ""));
}

// A thread recording `rate` scopes per second for `seconds`, paced by the TSC.
void record_paced(double rate, double seconds, std::atomic<std::int64_t>& done) {
  const auto calibration = proftrace::detail::calibrate_clock();
  const double ticks_per_scope = 1e9 / rate / calibration.ns_per_tick;
  const auto total = static_cast<std::int64_t>(rate * seconds);
  const std::uint64_t start = __rdtsc();
  for (std::int64_t i = 0; i < total; ++i) {
    const auto due = start + static_cast<std::uint64_t>(static_cast<double>(i) * ticks_per_scope);
    while (__rdtsc() < due) _mm_pause();
    PROF_SCOPE("x");
  }
  done.fetch_add(total);
}

// Processes that spin on a CPU until destroyed (killed with their parent too).
class busy_processes {
 public:
  explicit busy_processes(std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (volatile std::uint64_t spin = 0;;) spin = spin + 1;
      }
      if (pid > 0) pids_.push_back(pid);
    }
  }
  ~busy_processes() {
    for (const pid_t pid : pids_) ::kill(pid, SIGKILL);
    for (const pid_t pid : pids_) ::waitpid(pid, nullptr, 0);
  }
  busy_processes(const busy_processes&) = delete;
  busy_processes& operator=(const busy_processes&) = delete;

 private:
  std::vector<pid_t> pids_;
};

double load_average() {
  double one_minute = 0;
  return ::getloadavg(&one_minute, 1) == 1 ? one_minute : -1;
}

void BM_flusher_drop_onset(benchmark::State& state) {
  const double rate = static_cast<double>(state.range(0));
  const std::string format = formats[state.range(1)];
  constexpr double seconds = 0.5;
  std::int64_t scopes = 0, lost = 0;
  double elapsed = 0;
  const auto ring_events = state.range(3) > 0 ? static_cast<std::uint32_t>(state.range(3)) : proftrace::profile_options{}.ring_events;
  const busy_processes busy(state.range(2));  // before any session: a fork copies no profiler state
  for (auto _ : state) {
    proftrace::profile p(
        {.overflow = proftrace::overflow_policy::drop, .ring_events = ring_events, .stream_format = stream_format_for(format), .spool_dir = scratch_dir()});
    p.start();
    std::atomic<std::int64_t> done{0};
    const auto t0 = std::chrono::steady_clock::now();
    std::thread a(record_paced, rate, seconds, std::ref(done)), b(record_paced, rate, seconds, std::ref(done));
    a.join();
    b.join();
    elapsed += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    p.stop();
    scopes += done.load();
    lost += static_cast<std::int64_t>(p.key_averages().losses.total());
  }
  std::filesystem::remove_all(scratch_dir());
  state.counters["dropped_fraction"] = scopes > 0 ? static_cast<double>(lost) / static_cast<double>(2 * scopes) : 0;
  state.counters["reached_per_thread"] = static_cast<double>(scopes) / 2 / elapsed;
  state.counters["peak_rss_MiB"] = peak_rss_mib();
  state.counters["load_average"] = load_average();
  state.counters["ring_KiB_per_thread"] = static_cast<double>(ring_events) * 32 / 1024;
  state.SetLabel("streaming " + format + (state.range(2) > 0 ? ", " + std::to_string(state.range(2)) + " busy processes" : ""));
}

}  // namespace

BENCHMARK(BM_flusher_throughput)
    ->ArgsProduct({{0, 1, 2, 3, 4, 5}, {1, 2}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK(BM_flusher_drop_onset)
    ->ArgsProduct({{500'000, 1'000'000, 2'000'000, 4'000'000}, {0, 3}, {0, 2, 6}, {0, 65536, 131072}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

BENCHMARK_MAIN();
