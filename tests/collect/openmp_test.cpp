// collect::openmp with the OpenMP runtime this test is built with: LLVM's
// libomp (clang -fopenmp, PROFTRACE_TEST_OMPT=1) loads proftrace as its
// OMPT tool, and regions, loops and waits become spans on each thread; GCC's
// libgomp (PROFTRACE_TEST_OMPT=0) has no OMPT, which a session says once,
// and the user's scopes are recorded all the same.
#include <doctest/doctest.h>

#include <atomic>

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <map>
#include <set>
#include <string>
#include <thread>

#include <proftrace/proftrace.hpp>

#include "collect/openmp/code_location.hpp"
#include "test_support.hpp"

using test_support::read_trace;
using test_support::temp_dir;
using test_support::warning_capture;

namespace {

#if PROFTRACE_TEST_OMPT
struct span {
  std::string name, cat;
  std::int64_t tid = 0;
  double ts = 0, dur = 0;  // microseconds
};
std::vector<span> spans_of(const boost::json::object& trace) {
  std::vector<span> out;
  for (const auto& v : trace.at("traceEvents").as_array()) {
    const auto& e = v.as_object();
    if (e.at("ph").as_string() != "X") continue;
    span s;
    s.name = std::string(e.at("name").as_string());
    s.cat = std::string(e.at("cat").as_string());
    s.tid = e.at("tid").to_number<std::int64_t>();
    s.ts = e.at("ts").to_number<double>();
    s.dur = e.at("dur").to_number<double>();
    out.push_back(s);
  }
  return out;
}
bool starts_with(const std::string& s, std::string_view prefix) { return s.compare(0, prefix.size(), prefix) == 0; }
#endif

// Two threads share a loop of two iterations; iteration `slow` ends 60 ms
// after the other one has, so the other thread waits for it at the loop's
// barrier however late either thread starts. Not inlined: with line tables
// only (-g1), addr2line names the function it was inlined into.
__attribute__((noinline)) void imbalanced_loop(int slow) {
  std::atomic<bool> fast_done{false};
#pragma omp parallel num_threads(2)
  {
#pragma omp for schedule(static, 1)
    for (int i = 0; i < 2; ++i) {
      PROF_SCOPE("iteration");
      if (i != slow) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        fast_done = true;
      } else {
        while (omp_get_num_threads() > 1 && !fast_done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        std::this_thread::sleep_for(std::chrono::milliseconds(60));
      }
    }
  }
}

#if PROFTRACE_TEST_OMPT
// Holds a contended section: waits inside until both threads of the team
// have arrived at it, so the other one waits the whole `hold`.
std::atomic<int> arrived{0};
void hold_until_both_arrived(std::chrono::milliseconds hold) {
  while (omp_get_num_threads() > 1 && arrived.load() < 2) std::this_thread::yield();
  std::this_thread::sleep_for(hold);
}
#endif

// Two sessions in a row where the runtime gives no OpenMP events (no OMPT,
// or OMP_TOOL=disabled): each still counts the user's two iterations.
struct sessions_without_openmp {
  std::vector<std::string> warnings;
  std::int64_t openmp_rows = 0;  // "omp ..." rows' counts over both sessions
};
sessions_without_openmp two_sessions_without_openmp() {
  warning_capture warnings;
  sessions_without_openmp run;
  for (int round = 0; round < 2; ++round) {
    proftrace::profile p;
    p.start();
    CHECK(!p.activities().contains(proftrace::activity::openmp));
    imbalanced_loop(1);
    p.stop();
    std::int64_t iterations = 0;
    for (const auto& r : p.key_averages()) {
      if (r.key == "iteration") iterations += r.count;
      if (r.key.starts_with("omp ")) run.openmp_rows += r.count;
    }
    CHECK(iterations == 2);
  }
  run.warnings = warnings.seen;
  return run;
}

}  // namespace

#if PROFTRACE_TEST_OMPT

TEST_CASE("OMP_TOOL=disabled: libomp loads no tool; one warning, the user's scopes recorded" *
          doctest::skip(std::getenv("OMP_TOOL") == nullptr || std::string_view(std::getenv("OMP_TOOL")) != "disabled")) {
  const sessions_without_openmp run = two_sessions_without_openmp();
  CHECK(run.openmp_rows == 0);
  REQUIRE(run.warnings.size() == 1);
  CAPTURE(run.warnings[0]);
  CHECK(run.warnings[0].find("OMP_TOOL=disabled") != std::string::npos);
  CHECK(run.warnings[0].find("libomp.so") != std::string::npos);  // the runtime, by its file
}

TEST_CASE("OMPT: regions on both threads, user scopes inside each thread's implicit task, barrier time on the faster thread") {
  for (const int slow : {1, 0}) {  // the faster thread: the primary, then the worker
    CAPTURE(slow);
    temp_dir out("openmp");
    warning_capture warnings;
    proftrace::profile p;
    p.start();
    REQUIRE(p.activities().contains(proftrace::activity::openmp));
    imbalanced_loop(slow);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the workers' late ends come at the next region
    imbalanced_loop(slow);
    p.stop();
    CHECK(warnings.seen.empty());
    p.export_chrome_trace(out.path / "t.json");
    const auto all = spans_of(read_trace(out.path / "t.json"));

    std::vector<span> regions, tasks, loops, iterations, barriers;
    std::map<std::int64_t, double> barrier_us;  // per thread
    for (const auto& s : all) {
      if (starts_with(s.name, "omp parallel: ")) regions.push_back(s);
      if (starts_with(s.name, "omp implicit task: ")) tasks.push_back(s);
      if (starts_with(s.name, "omp loop: ")) loops.push_back(s);
      if (s.name == "iteration") iterations.push_back(s);
      if (s.name == "omp barrier") {
        barrier_us[s.tid] += s.dur;
        barriers.push_back(s);
      }
      if (starts_with(s.name, "omp ")) CHECK(s.cat == "openmp");
    }
    REQUIRE(regions.size() == 2);
    CAPTURE(regions[0].name);
    // Named after the construct's code: its function and file:line.
    CHECK(regions[0].name.find("imbalanced_loop") != std::string::npos);
    CHECK(regions[0].name.find("openmp_test.cpp:") != std::string::npos);
    REQUIRE(tasks.size() == 4);
    std::set<std::int64_t> task_threads;
    for (const auto& t : tasks) task_threads.insert(t.tid);
    CHECK(task_threads.size() == 2);
    CHECK(tasks[0].name.substr(std::string("omp implicit task: ").size()) ==
          regions[0].name.substr(std::string("omp parallel: ").size()));
    CHECK(loops.size() == 4);

    // Each user scope lies inside its own thread's implicit task, which lies inside the region.
    REQUIRE(iterations.size() == 4);
    for (const auto& it : iterations) {
      const bool nested = std::any_of(tasks.begin(), tasks.end(), [&](const span& t) {
        return t.tid == it.tid && t.ts <= it.ts && it.ts + it.dur <= t.ts + t.dur + 0.002;
      });
      CHECK(nested);
    }
    // A worker's late end is written at its region's end; that of the last
    // region before stop() does not come (libomp reports it at the next
    // fork), so that task is closed with the trace.
    const std::int64_t primary = regions[0].tid;
    std::sort(regions.begin(), regions.end(), [](const span& a, const span& b) { return a.ts < b.ts; });
    int inside = 0, open_at_stop = 0;
    for (const auto& t : tasks) {
      const bool in_first = regions[0].ts <= t.ts + 0.002 && t.ts + t.dur <= regions[0].ts + regions[0].dur + 0.002;
      const bool in_last = regions[1].ts <= t.ts + 0.002 && t.ts + t.dur <= regions[1].ts + regions[1].dur + 0.002;
      inside += in_first || in_last;
      open_at_stop += !in_first && !in_last && t.tid != primary && t.ts >= regions[1].ts;
    }
    CHECK(inside >= 3);
    CHECK(inside + open_at_stop == 4);

    // The faster thread waited ~55 ms per region for the slower one.
    std::int64_t worker = 0;
    for (const auto& t : task_threads)
      if (t != primary) worker = t;
    const std::int64_t faster = slow == 1 ? primary : worker;
    const std::int64_t slower = slow == 1 ? worker : primary;
    CAPTURE(barrier_us[faster]);
    CAPTURE(barrier_us[slower]);
    // The faster thread waited at the barrier while the slower one's 60 ms
    // iteration ran: in each region, one of its barrier spans holds that
    // iteration's end (however late the machine let it arrive), and its
    // waits add up to much of the 2 x 60 ms.
    for (const auto& it : iterations) {
      if (it.tid != slower) continue;
      const double end = it.ts + it.dur;
      const bool waited = std::any_of(barriers.begin(), barriers.end(), [&](const span& b) {
        return b.tid == faster && b.ts <= end + 0.002 && end <= b.ts + b.dur + 0.002;
      });
      CHECK(waited);
    }
    CHECK(barrier_us[faster] >= 2 * 20'000.0);
    // The slower thread's barrier time is only its wait for the faster one
    // to be scheduled again (on a loaded machine, milliseconds each time):
    // bounded by the faster one's, never by a fixed time, and never its own
    // 60 ms iterations counted as waiting.
    CHECK(barrier_us[slower] < barrier_us[faster] / 2);
    for (const auto& b : barriers) {
      if (b.tid != slower) continue;
      for (const auto& it : iterations) {
        if (it.tid != slower) continue;
        const double overlap = std::min(b.ts + b.dur, it.ts + it.dur) - std::max(b.ts, it.ts);
        CHECK(overlap <= 0.002);
      }
    }
  }
}

TEST_CASE("OMPT: a contended critical section's wait is a span on the thread that waited") {
  temp_dir out("openmp-critical");
  proftrace::profile p;
  p.start();
  arrived = 0;
#pragma omp parallel num_threads(2)
  {
    arrived.fetch_add(1);
#pragma omp critical
    hold_until_both_arrived(std::chrono::milliseconds(80));
  }
  p.stop();
  p.export_chrome_trace(out.path / "t.json");
  double longest = 0;
  for (const auto& s : spans_of(read_trace(out.path / "t.json")))
    if (s.name == "omp critical") longest = std::max(longest, s.dur);
  CHECK(longest >= 20'000.0);  // one of the two waited for the other's 80 ms (60 ms to spare for a descheduled waiter)
}

TEST_CASE("OMPT: a contended lock's wait is a span; a failed test lock leaves no span open") {
  temp_dir out("openmp-lock");
  omp_lock_t lock;
  omp_init_lock(&lock);
  proftrace::profile p;
  p.start();
  arrived = 0;
#pragma omp parallel num_threads(2)
  {
    arrived.fetch_add(1);
    omp_set_lock(&lock);
    hold_until_both_arrived(std::chrono::milliseconds(80));  // 60 ms to spare over the bound below
    omp_unset_lock(&lock);
#pragma omp barrier
#pragma omp master
    omp_set_lock(&lock);
#pragma omp barrier
    if (omp_get_thread_num() == 1) (void)omp_test_lock(&lock);  // fails: the primary holds it
    { PROF_SCOPE("after test"); }
#pragma omp barrier
#pragma omp master
    omp_unset_lock(&lock);
  }
  p.stop();
  omp_destroy_lock(&lock);
  p.export_chrome_trace(out.path / "t.json");
  const auto all = spans_of(read_trace(out.path / "t.json"));
  double longest = 0;
  std::vector<span> tasks, after;
  for (const auto& s : all) {
    if (s.name == "omp lock") longest = std::max(longest, s.dur);
    if (starts_with(s.name, "omp implicit task: ")) tasks.push_back(s);
    if (s.name == "after test") after.push_back(s);
  }
  CHECK(longest >= 20'000.0);
  REQUIRE(after.size() == 2);
  for (const auto& a : after) {  // each still inside its thread's implicit task, not inside a stale wait
    const bool nested = std::any_of(tasks.begin(), tasks.end(), [&](const span& t) {
      return t.tid == a.tid && t.ts <= a.ts && a.ts + a.dur <= t.ts + t.dur + 0.002;
    });
    CHECK(nested);
    const bool inside_a_wait = std::any_of(all.begin(), all.end(), [&](const span& w) {
      return w.name == "omp lock" && w.tid == a.tid && w.ts <= a.ts && a.ts + a.dur <= w.ts + w.dur;
    });
    CHECK_FALSE(inside_a_wait);  // the failed test opened no wait that stayed open
  }
}

TEST_CASE("OMPT under with_stack: OpenMP's frames are their names, with no file or line of proftrace's own") {
  proftrace::profile p({.with_stack = true});
  p.start();
  imbalanced_loop(1);
  p.stop();
  const auto by_stack = p.key_averages(false, 5);
  bool iteration_under_task = false;
  for (const auto& r : by_stack.rows) {
    for (const auto& frame : r.stack) {
      CAPTURE(frame);
      CHECK(frame.find("(0)") == std::string::npos);
      CHECK(frame.find("ompt_tool") == std::string::npos);
    }
    if (r.key == "iteration" && !r.stack.empty() && starts_with(r.stack[0], "omp loop: ")) iteration_under_task = true;
  }
  CHECK(iteration_under_task);
  CHECK(by_stack.table().find("(0)") == std::string::npos);
}

TEST_CASE("OMPT: the runtime's workers are named 'OpenMP worker N' unless the program names them") {
  const auto thread_names = [](const boost::json::object& trace) {
    std::map<std::int64_t, std::string> names;
    for (const auto& e : trace.at("traceEvents").as_array()) {
      const auto& o = e.as_object();
      if (o.at("ph").as_string() == "M" && o.at("name").as_string() == "thread_name")
        names[o.at("tid").to_number<std::int64_t>()] = std::string(o.at("args").at("name").as_string());
    }
    return names;
  };
  temp_dir out("openmp-names");
  proftrace::profile p;
  p.start();
  std::atomic<std::int64_t> worker_tid{0};
#pragma omp parallel num_threads(2)
  {
    PROF_SCOPE("in region");
    if (omp_get_thread_num() == 1) worker_tid = static_cast<std::int64_t>(gettid());
  }
  p.stop();
  p.export_chrome_trace(out.path / "t.json");
  auto names = thread_names(read_trace(out.path / "t.json"));
  REQUIRE(worker_tid != 0);
  CAPTURE(names[worker_tid]);
  CHECK(starts_with(names[worker_tid], "OpenMP worker "));

  proftrace::profile named;
  named.start();
#pragma omp parallel num_threads(2)
  {
    if (omp_get_thread_num() == 1) PROF_THREAD_NAME("solver worker");
    PROF_SCOPE("in region");
  }
  named.stop();
  named.export_chrome_trace(out.path / "named.json");
  names = thread_names(read_trace(out.path / "named.json"));
  CHECK(names[worker_tid] == "solver worker");  // the pool's same thread
}

TEST_CASE("OMPT: a single's block is 'omp single' on the thread that ran it, 'omp single: skipped' on the other") {
  proftrace::profile p;
  p.start();
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    { std::this_thread::sleep_for(std::chrono::milliseconds(5)); }
  }
  p.stop();
  std::map<std::string, std::int64_t> counts;
  for (const auto& r : p.key_averages()) counts[r.key] += r.count;
  CHECK(counts["omp single"] == 1);
  CHECK(counts["omp single: skipped"] == 1);
  CHECK(counts.count("omp workshare") == 0);
}

#if PROFTRACE_WITH_COUNTERS
// Busy for `ms` of this thread's CPU time.
void spin_cpu_ms(int ms) {
  const auto cpu_ns = [] {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
  };
  const std::int64_t until = cpu_ns() + std::int64_t{ms} * 1'000'000;
  while (cpu_ns() < until) {
  }
}

TEST_CASE("OMPT with counters: a scope's self count is less its counted children inside a region, counted once") {
  temp_dir out("openmp-counters");
  proftrace::profile p({.counters = {"task-clock"}});
  p.start();
  {
    PROF_SCOPE("outer");
#pragma omp parallel num_threads(2)
    {
      PROF_SCOPE("inner");  // under the region's scopes, which count nothing
      spin_cpu_ms(20);
    }
  }
  p.stop();
  const auto rows = p.key_averages();
  const proftrace::event_average* outer = nullptr;
  for (const auto& r : rows)
    if (r.key == "outer") outer = &r;
  REQUIRE(outer);
  const auto* counted = outer->counter("task-clock");
  if (counted == nullptr) {
    MESSAGE("this machine exposes no task-clock counter: skipped");
    return;
  }
  // The primary thread's own inner: the only counted child of outer.
  p.export_chrome_trace(out.path / "t.json");
  const auto trace = read_trace(out.path / "t.json");
  std::int64_t outer_tid = -1, outer_count = -1, inner_count = -1;
  for (const auto& v : trace.at("traceEvents").as_array()) {
    const auto& e = v.as_object();
    if (e.at("ph").as_string() == "X" && e.at("name").as_string() == "outer") {
      outer_tid = e.at("tid").to_number<std::int64_t>();
      outer_count = e.at("args").as_object().at("task-clock").to_number<std::int64_t>();
    }
  }
  for (const auto& v : trace.at("traceEvents").as_array()) {
    const auto& e = v.as_object();
    if (e.at("ph").as_string() == "X" && e.at("name").as_string() == "inner" &&
        e.at("tid").to_number<std::int64_t>() == outer_tid)
      inner_count = e.at("args").as_object().at("task-clock").to_number<std::int64_t>();
  }
  REQUIRE(inner_count > 0);
  CHECK(counted->total == outer_count);
  CHECK(counted->self == outer_count - inner_count);  // was outer's total: the regions' scopes reset it
  CHECK(counted->self < counted->total / 2);           // 20 ms of the inner's, little of its own
}
#endif

TEST_CASE("OMPT: regions while no session records cost nothing in a later trace") {
  imbalanced_loop(1);  // no session
  proftrace::profile p;
  p.start();
  { PROF_SCOPE("after"); }
  p.stop();
  std::int64_t openmp_rows = 0;
  for (const auto& r : p.key_averages())
    if (starts_with(r.key, "omp ")) openmp_rows += r.count;
  CHECK(openmp_rows == 0);
}

#else

TEST_CASE("a runtime without OMPT (libgomp): one warning at the first session start, the user's scopes recorded") {
  const sessions_without_openmp run = two_sessions_without_openmp();
  REQUIRE(run.warnings.size() == 1);
  CAPTURE(run.warnings[0]);
  CHECK(run.warnings[0].find("OMPT") != std::string::npos);
  CHECK(run.warnings[0].find("libgomp.so") != std::string::npos);  // the runtime, by its file
}

#endif

TEST_CASE("a construct's source line: addr2line's answer without its directory, none where no line is known") {
  namespace pd = proftrace::detail;
  CHECK(pd::source_line_of("/src/app/solver.cpp:42") == "solver.cpp:42");
  CHECK(pd::source_line_of("solver.cpp:7") == "solver.cpp:7");
  CHECK(pd::source_line_of("/src/app/solver.cpp:?") == "");  // a file, no line tables: no "(solver.cpp:?)"
  CHECK(pd::source_line_of("/src/app/solver.cpp:0") == "");
  CHECK(pd::source_line_of("??:0") == "");
  CHECK(pd::source_line_of("??:?") == "");
  CHECK(pd::source_line_of("") == "");
  CHECK(pd::source_line_of("/src/app/solver.cpp:30") == "solver.cpp:30");  // a line ending in 0 is a line
}
