// The soak test: N threads record instant events as fast as they can for a
// long time while a schedule closes one trace per step (the default `drop`
// policy: rings overflow, and every loss must be counted), and the process
// must neither grow nor lose count.
//
//   proftrace_soak --seconds 600 --threads 8     # the README's soak run
//
// Checks, printed and turned into the exit status:
//   - resident memory stays flat: it swings as each trace's buffers come and
//     go, so the test compares peaks: the highest value after the first
//     third of the run must not exceed the highest seen between a tenth and
//     a third (pools, maps and buffers at their working size, two traces in)
//     by more than --rss-slack-mib;
//   - every instant event produced is either in a trace or counted as lost:
//     the sum over all traces of written + lost equals what the threads
//     produced, exactly.
#include <proftrace/proftrace.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

struct options {
  double seconds = 10;
  int threads = 8;
  double rss_slack_mib = 32;
  int step_ms = 250;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const double value = std::atof(argv[i + 1]);
    if (flag == "--seconds") o.seconds = value;
    else if (flag == "--threads") o.threads = static_cast<int>(value);
    else if (flag == "--rss-slack-mib") o.rss_slack_mib = value;
    else if (flag == "--step-ms") o.step_ms = static_cast<int>(value);
    else {
      std::fprintf(stderr, "usage: proftrace_soak [--seconds S] [--threads N] [--rss-slack-mib M] [--step-ms MS]\n");
      std::exit(2);
    }
  }
  return o;
}

double rss_mib() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return static_cast<double>(pages_resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  std::uint64_t written = 0, lost = 0, traces = 0;
  proftrace::profile p({
      .schedule = proftrace::schedule({.wait = 0, .warmup = 0, .active = 1}),
      .on_trace_ready =
          [&](proftrace::session& s) {
            const auto averages = s.key_averages();
            written += averages.instant_events;
            lost += averages.losses.total();
            ++traces;
          },
  });

  std::atomic<bool> stop{false};
  std::vector<std::uint64_t> produced(static_cast<std::size_t>(o.threads), 0);
  p.start();
  std::vector<std::thread> workers;
  for (int t = 0; t < o.threads; ++t)
    workers.emplace_back([&, t] {
      std::uint64_t n = 0;
      while (!stop.load(std::memory_order_relaxed))
        for (int i = 0; i < 64; ++i, ++n) PROF_INSTANT("tick");
      produced[static_cast<std::size_t>(t)] = n;
    });

  const auto begin = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count(); };
  double settled_rss = -1, peak_rss = -1, next_report = 0;
  std::printf("%8s %10s %8s\n", "seconds", "rss MiB", "traces");
  while (elapsed() < o.seconds) {
    std::this_thread::sleep_for(std::chrono::milliseconds(o.step_ms));
    p.step();
    const double rss = rss_mib(), now = elapsed();
    if (now >= o.seconds / 10 && traces >= 2 && (now < o.seconds / 3 || settled_rss < 0))
      settled_rss = std::max(settled_rss, rss);
    else if (settled_rss >= 0)
      peak_rss = std::max(peak_rss, rss);
    if (now >= next_report) {
      std::printf("%8.1f %10.1f %8llu\n", now, rss, static_cast<unsigned long long>(traces));
      std::fflush(stdout);
      next_report = now + std::max(1.0, o.seconds / 20);
    }
  }
  stop = true;
  for (auto& w : workers) w.join();
  p.stop();

  std::uint64_t total = 0;
  for (auto n : produced) total += n;
  const bool counts_match = written + lost == total;
  const bool flat = settled_rss >= 0 && peak_rss >= 0 && peak_rss <= settled_rss + o.rss_slack_mib;
  std::printf("threads %d, %.0f s, %llu traces\n", o.threads, elapsed(), static_cast<unsigned long long>(traces));
  std::printf("produced %llu, written %llu, lost %llu: %s\n", static_cast<unsigned long long>(total),
              static_cast<unsigned long long>(written), static_cast<unsigned long long>(lost),
              counts_match ? "exact" : "MISMATCH");
  std::printf("resident memory: peak %.1f MiB while settling, %.1f MiB after: %s (slack %.0f MiB)\n", settled_rss,
              peak_rss, flat ? "flat" : "GREW", o.rss_slack_mib);
  return counts_match && flat ? 0 : 1;
}
