// The everyday helpers: timeit (RAII and callable), profileit on the CPU,
// get_stats_summary, byte_to_megabyte, format_prof_time, the runs as CSV,
// and naming traces after a run's parameters.
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <sstream>
#include <thread>

#include "test_support.hpp"

using namespace std::chrono_literals;
using test_support::temp_dir;

namespace {

std::size_t count_of(const std::string& text, std::string_view needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    else if (c == sep && !quoted) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

}  // namespace

TEST_CASE("timeit as a block: duration, log, avg_time_divisor, reset") {
  std::ostringstream log;
  {
    proftrace::timeit t({.out = &log});
    std::this_thread::sleep_for(20ms);
    t.stop();
    CHECK(t.duration() >= 0.020);
    CHECK_FALSE(t.running());
  }
  CHECK(count_of(log.str(), "Time: ") == 1);  // stop() printed; the destructor of a stopped timer does not
  CHECK(log.str().find('s') != std::string::npos);

  std::ostringstream quiet;
  {
    proftrace::timeit t({.log = false, .out = &quiet});
    std::this_thread::sleep_for(1ms);
  }
  CHECK(quiet.str().empty());

  proftrace::timeit averaged({.log = false, .avg_time_divisor = 4});
  for (int i = 0; i < 4; ++i) std::this_thread::sleep_for(5ms);
  averaged.stop();
  CHECK(averaged.duration() >= 0.005);
  CHECK(averaged.duration() * 4 >= 0.020);

  std::ostringstream resets;
  proftrace::timeit r({.label = "epoch ", .out = &resets});
  std::this_thread::sleep_for(20ms);
  r.reset();  // prints and starts again
  CHECK(r.running());
  CHECK(count_of(resets.str(), "epoch Time: ") == 1);
  CHECK(r.duration() >= 0.0);  // running: the time since the reset so far
  std::this_thread::sleep_for(20ms);
  r.stop();
  CHECK(r.duration() >= 0.020);
  CHECK(count_of(resets.str(), "epoch Time: ") == 2);
  // After a stop(), reset() still prints (the time since the last start, as
  // torch_geometric's) and starts again.
  std::this_thread::sleep_for(10ms);
  r.reset();
  CHECK(count_of(resets.str(), "epoch Time: ") == 3);
  const std::string printed = resets.str();
  CHECK(std::stod(printed.substr(printed.rfind("epoch Time: ") + 12)) >= 0.030);  // from the start before the stop
  CHECK(r.running());
}

TEST_CASE("timeit as a callable returns the result and the time") {
  auto [value, seconds] = proftrace::timeit::call(
      [](int x) {
        std::this_thread::sleep_for(20ms);
        return x * 2;
      },
      21);
  CHECK(value == 42);
  CHECK(seconds >= 0.020);
  int calls = 0;
  const auto v = proftrace::timeit::call([&] { ++calls; });
  CHECK(calls == 1);
  CHECK(v.seconds >= 0.0);
  std::ostringstream log;
  proftrace::timeit::call({.out = &log}, [] {});
  CHECK(count_of(log.str(), "Time: ") == 1);
#if !PROFTRACE_WITH_CUDA
  proftrace::timeit t({.log = false});
  t.stop();
  CHECK_FALSE(t.synchronized());
#endif
}

TEST_CASE("profileit on the CPU: result, time, CPU time, peak resident memory, and no GPU figures") {
  constexpr std::size_t bytes = 64u << 20;
  auto [sum, stats] = proftrace::profileit("cpu", [&] {
    std::vector<char> block(bytes);
    std::memset(block.data(), 1, block.size());  // resident, not just reserved
    std::this_thread::sleep_for(20ms);
    long s = 0;
    for (std::size_t i = 0; i < block.size(); i += 4096) s += block[i];
    return s;
  });
  CHECK(sum == static_cast<long>(bytes / 4096));
  CHECK(stats.device == "cpu");
  CHECK(stats.time >= 0.020);
  REQUIRE(stats.cpu_time.has_value());
  CHECK(*stats.cpu_time >= 0.0);
  REQUIRE(stats.peak_resident_bytes.has_value());
  CHECK(*stats.peak_resident_bytes >= static_cast<std::int64_t>(bytes));
  CHECK_FALSE(stats.has_gpu_figures());
  CHECK_FALSE(stats.max_allocated_gpu.has_value());
  CHECK_FALSE(stats.nvidia_smi_used_cuda.has_value());
  CHECK(stats.gpu_absent_reason == "the run was on the CPU");

  const auto void_run = proftrace::profileit("cpu", [] {});
  CHECK(void_run.stats.time >= 0.0);
  CHECK_THROWS_WITH_AS(proftrace::profileit("tpu", [] {}), doctest::Contains("unknown device 'tpu'"),
                       std::invalid_argument);
  CHECK_THROWS_AS(proftrace::profileit("cuda:x", [] {}), std::invalid_argument);
}

TEST_CASE("profileit runs while a session records, and its function's scopes are recorded") {
  proftrace::profile p;
  p.start();
  const auto run = proftrace::profileit("cpu", [] { PROF_SCOPE("inside profileit"); });
  p.stop();
  CHECK(run.stats.time >= 0.0);
  bool seen = false;
  for (const auto& r : p.key_averages().rows) seen = seen || r.key == "inside profileit";
  CHECK(seen);
}

TEST_CASE("get_stats_summary: mean and sample deviation of time, max (min for free) of each memory figure") {
  std::vector<proftrace::run_stats> runs(4);
  const double times[] = {1.0, 2.0, 3.0, 6.0};
  for (std::size_t i = 0; i < runs.size(); ++i) {
    runs[i].time = times[i];
    runs[i].cpu_time = times[i] / 2;
    runs[i].peak_resident_bytes = static_cast<std::int64_t>(100 * (i + 1));
  }
  runs[1].max_allocated_gpu = 500;
  runs[2].max_allocated_gpu = 700;
  runs[0].nvidia_smi_free_cuda = 9000;
  runs[3].nvidia_smi_free_cuda = 4000;
  runs[3].nvidia_smi_used_cuda = 1234;
  const auto s = proftrace::get_stats_summary(runs);
  double mean = 0;
  for (double t : times) mean += t / 4;
  double var = 0;
  for (double t : times) var += (t - mean) * (t - mean) / 3;
  CHECK(s.runs == 4);
  CHECK(s.time_mean == doctest::Approx(mean));
  CHECK(s.time_std == doctest::Approx(std::sqrt(var)));
  CHECK(*s.cpu_time_mean == doctest::Approx(mean / 2));
  CHECK(*s.max_peak_resident_bytes == 400);
  CHECK(*s.max_allocated_gpu == 700);
  CHECK(*s.min_nvidia_smi_free_cuda == 4000);
  CHECK(*s.max_nvidia_smi_used_cuda == 1234);
  CHECK_FALSE(s.max_reserved_gpu.has_value());  // no run had it: absent, not 0
  CHECK_FALSE(s.max_active_gpu.has_value());

  const auto one = proftrace::get_stats_summary(std::span(runs).first(1));
  CHECK(one.time_std == 0.0);
  CHECK(one.time_mean == runs[0].time);
  CHECK_THROWS_AS(proftrace::get_stats_summary({}), std::invalid_argument);
}

TEST_CASE("byte_to_megabyte and format_prof_time") {
  CHECK(proftrace::byte_to_megabyte(3 * 1048576 + 524288) == 3.5);
  CHECK(proftrace::byte_to_megabyte(1048576 + 1048576 / 3) == doctest::Approx(1.33).epsilon(1e-12));
  CHECK(proftrace::byte_to_megabyte(1048576 + 1048576 / 3, 4) == doctest::Approx(1.3333).epsilon(1e-12));
  CHECK(proftrace::byte_to_megabyte(0) == 0.0);
  CHECK(proftrace::format_prof_time(1'234'567.0) == doctest::Approx(1.235).epsilon(1e-12));
  CHECK(proftrace::format_prof_time(400.0) == 0.0);
  CHECK(proftrace::format_prof_time(2'500'000.0) == doctest::Approx(2.5).epsilon(1e-12));
}

TEST_CASE("save_profile_data writes one CSV row per run; absent figures are empty cells") {
  temp_dir out("csv");
  std::vector<proftrace::run_stats> runs(2);
  runs[0].device = "cpu";
  runs[0].time = 0.5;
  runs[0].cpu_time = 0.25;
  runs[0].peak_resident_bytes = 2 * 1048576;
  runs[0].gpu_absent_reason = "no GPU, really";
  runs[1].device = "cuda:0";
  runs[1].time = 1.5;
  runs[1].max_allocated_gpu = 3 * 1048576;
  const auto path = out.path / "runs.csv";
  proftrace::save_profile_data(path, runs);
  std::istringstream text(test_support::read_text(path));
  std::string header, first, second, extra;
  std::getline(text, header);
  std::getline(text, first);
  std::getline(text, second);
  CHECK_FALSE(std::getline(text, extra));
  const auto columns = split(header, ',');
  const auto a = split(first, ',');
  const auto b = split(second, ',');
  REQUIRE(a.size() == columns.size());
  REQUIRE(b.size() == columns.size());
  const auto cell = [&](const std::vector<std::string>& row, std::string_view column) {
    for (std::size_t i = 0; i < columns.size(); ++i)
      if (columns[i] == column) return row[i];
    FAIL("no column " << column);
    return std::string();
  };
  CHECK(cell(a, "device") == "cpu");
  CHECK(std::stod(cell(a, "time_s")) == 0.5);
  CHECK(std::stod(cell(a, "cpu_time_s")) == 0.25);
  CHECK(std::stod(cell(a, "peak_resident_mb")) == 2.0);
  CHECK(cell(a, "max_allocated_gpu_mb").empty());
  CHECK(cell(a, "gpu_absent_reason") == "no GPU, really");
  CHECK(std::stod(cell(b, "max_allocated_gpu_mb")) == 3.0);
  CHECK(cell(b, "cpu_time_s").empty());

  const auto bad = std::filesystem::path("/nonexistent-proftrace-dir/runs.csv");
  CHECK_THROWS_WITH_AS(proftrace::save_profile_data(bad, runs), doctest::Contains(bad.string().c_str()), std::runtime_error);
}

TEST_CASE("traces named after a run's parameters") {
  temp_dir out("names");
  CHECK(proftrace::profile_file_name(out.path / "trace.pt.trace.json", "GCN", 64, "a b/c") ==
        out.path / "trace-GCN-64-a_b_c.pt.trace.json");
  CHECK(proftrace::profile_file_name("profile", 1.5) == std::filesystem::path("profile-1.5"));
  CHECK(proftrace::profile_file_name("tr.json", "a/b", "\u00e9") == std::filesystem::path("tr-a_b-\u00e9.json"));  // UTF-8 kept
  CHECK(proftrace::profile_file_name(".hidden.json", "x") == std::filesystem::path(".hidden-x.json"));

  proftrace::profile p;
  p.start();
  { PROF_SCOPE("named run"); }
  p.stop();
  const auto exported = out.path / "trace.pt.trace.json.gz";
  p.export_chrome_trace(exported);
  const auto renamed = proftrace::rename_profile_file(exported, "GCN", 64);
  CHECK(renamed == out.path / "trace-GCN-64.pt.trace.json.gz");
  CHECK_FALSE(std::filesystem::exists(exported));
  CHECK(test_support::events_named(test_support::read_trace(renamed), "named run").size() == 1);
  CHECK_THROWS_WITH_AS(proftrace::rename_profile_file(exported, "again"), doctest::Contains(exported.string().c_str()),
                       std::runtime_error);
}
