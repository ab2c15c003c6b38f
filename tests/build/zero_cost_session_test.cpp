// The session API and the reports in a translation unit built with
// PROFTRACE_ENABLED=0 and linked WITHOUT libproftrace (tests/build/CMakeLists.txt):
// that it links at all shows they reference no library symbol. A program
// written for the enabled build runs to its last line, which prints a
// one-line note instead of a table.
#include <doctest/doctest.h>

#include <proftrace/cuda.hpp>
#include <proftrace/proftrace.hpp>
#include <proftrace/rank_averages.hpp>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>

static_assert(!PROFTRACE_ENABLED);

TEST_CASE("PROFTRACE_ENABLED=0: the README's program runs to its last line, which says nothing was recorded") {
  const auto dir = std::filesystem::temp_directory_path() / "proftrace-zero-cost-test";
  std::filesystem::remove_all(dir);
  proftrace::finish_trace_on_signals();
  proftrace::profile p({.schedule = proftrace::schedule({.skip_first = 1, .wait = 1, .warmup = 1, .active = 3}),
                        .on_trace_ready = proftrace::tensorboard_trace_handler(dir),
                        .record_shapes = true});
  p.start();
  CHECK(p.running());
  for (int it = 0; it < 10; ++it) {
    PROF_STEP();
    PROF_SCOPE("solve");
    p.step();
  }
  p.stop();
  CHECK_FALSE(p.running());
  CHECK(p.step_num() == 10);
  CHECK_FALSE(p.has_trace());
  std::ostringstream out;
  out << p.key_averages().table({.sort_by = "self_cpu_time_total"});
  CHECK(out.str() == "Note: proftrace was compiled out (PROFTRACE_ENABLED=0): nothing was recorded\n");
  CHECK(p.table() == out.str());
  CHECK(p.key_averages().empty());
  for (const auto& row : p.key_averages()) FAIL("a row in a compiled-out report: " << row.key);
  CHECK(p.total_average().key == "Total");
  CHECK(p.self_cpu_time_total() == 0);
  CHECK(p.events().empty());
  CHECK(p.memory_stats().empty());
  p.export_chrome_trace(dir / "t.json");
  p.export_stacks(dir / "stacks.txt");
  p.export_memory_timeline(dir / "m.html");
  p.add_metadata("k", "v");
  CHECK_FALSE(std::filesystem::exists(dir));  // nothing written anywhere
}

TEST_CASE("PROFTRACE_ENABLED=0: counters and OpenMP compile to nothing: a session with counters records no row") {
  static_assert(!proftrace::is_available<proftrace::collect::counters>::value);
  static_assert(!proftrace::is_available<proftrace::collect::openmp>::value);
  static_assert(!proftrace::profile::compiled_activities.contains(proftrace::activity::counters));
  proftrace::profile p({.counters = {"task-clock", "page-faults"}});
  p.start();
  { PROF_SCOPE("counted"); }
  p.stop();
  CHECK(p.key_averages().empty());
  CHECK(p.total_average().counters.empty());
}

TEST_CASE("PROFTRACE_ENABLED=0: the execution trace observer writes a valid empty graph, inline") {
  const auto path = std::filesystem::temp_directory_path() / "proftrace-zero-cost-et.json";
  proftrace::execution_trace_observer et;
  CHECK_THROWS_AS(et.get_output_file_path(), std::logic_error);
  et.register_callback(path);
  CHECK(et.is_registered());
  proftrace::profile p({.execution_trace_observer = &et});
  p.start();
  et.start();
  CHECK(et.is_running());
  et.stop();
  p.stop();
  CHECK(et.node_count() == 0);
  CHECK(std::filesystem::file_size(path) > 0);
  std::filesystem::remove(path);
  proftrace::execution_trace_observer bad;
  CHECK_THROWS_AS(bad.register_callback("/nonexistent-dir/et.json"), std::runtime_error);
}

TEST_CASE("PROFTRACE_ENABLED=0: <proftrace/cuda.hpp> is inline stand-ins: nothing available, calls do nothing") {
  CHECK_FALSE(proftrace::cuda::available());
  proftrace::cuda::profiler_start();
  { proftrace::cuda::profiler_range capture; }
  { PROF_CUDA_PROFILE(); }
  proftrace::cuda::profiler_stop();
  const auto m = proftrace::cuda::memory_info(0);
  CHECK_FALSE(m.free_bytes.has_value());
  CHECK(m.unavailable == "proftrace was compiled out (PROFTRACE_ENABLED=0)");
}

TEST_CASE("PROFTRACE_ENABLED=0: the schedule's and the activities' names and rules are inline, as a program prints them") {
  proftrace::profile p({.activities = {proftrace::activity::cpu, proftrace::activity::memory}});
  CHECK(proftrace::to_string(p.current_action()) == "NONE");
  CHECK(proftrace::to_string(proftrace::activity::memory) == "MEMORY");
  CHECK(proftrace::default_schedule(3) == proftrace::profiler_action::record);
  CHECK(proftrace::transition(proftrace::profiler_action::record, std::nullopt) ==
        std::vector{proftrace::transition_op::stop_trace, proftrace::transition_op::trace_ready});
}

TEST_CASE("PROFTRACE_ENABLED=0: the job's report across ranks is its note, its CSV the header, no profile written") {
  proftrace::rank_averages job;
  job.note = "proftrace was compiled out (PROFTRACE_ENABLED=0): nothing was recorded";
  CHECK(job.table({.sort_by = "imbalance"}) == "Note: " + job.note + "\n");
  const std::string csv = job.csv();
  CHECK(csv.rfind("key,calls,cpu_time_total_ns,", 0) == 0);
  CHECK(csv.ends_with(",stack\n"));
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 1);
  const auto path = std::filesystem::temp_directory_path() / "proftrace-zero-cost-job.cali.json";
  std::filesystem::remove(path);
  job.write_profile(path);
  CHECK_FALSE(std::filesystem::exists(path));
  proftrace::rank_average row;
  row.max_ns = 40, row.mean_ns = 25, row.ranks = 4;
  CHECK(row.imbalance_percent() == doctest::Approx(50.0));
}
