// The schedule against torch.profiler.schedule's own output, and the
// session's transitions against torch's action_map.
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <atomic>
#include <barrier>
#include <map>
#include <set>
#include <thread>

#include "test_support.hpp"

using proftrace::profiler_action;
using test_support::warning_capture;

namespace {

// Digits as torch prints ProfilerAction values: 0 NONE, 1 WARMUP, 2 RECORD, 3 RECORD_AND_SAVE.
std::string actions(const proftrace::schedule_fn& f, int steps) {
  std::string out;
  for (int i = 0; i < steps; ++i) out += static_cast<char>('0' + static_cast<int>(f(i)));
  return out;
}

}  // namespace

TEST_CASE("schedule matches torch.profiler.schedule step by step") {
  warning_capture warnings;
  // Expected strings produced by running torch's schedule_fn (profiler.py) for steps 0..19.
  CHECK(actions(proftrace::schedule({.wait = 1, .warmup = 1, .active = 2, .repeat = 1}), 20) == "01230000000000000000");
  CHECK(actions(proftrace::schedule({.wait = 0, .warmup = 0, .active = 1}), 20) == "33333333333333333333");
  CHECK(actions(proftrace::schedule({.skip_first = 3, .wait = 2, .warmup = 1, .active = 3, .repeat = 2}), 20) ==
        "00000122300122300000");
  CHECK(actions(proftrace::schedule({.skip_first = 1, .wait = 0, .warmup = 2, .active = 1, .repeat = 0}), 20) ==
        "01131131131131131131");
  CHECK(actions(proftrace::schedule({.wait = 3, .warmup = 0, .active = 2, .repeat = 3}), 20) == "00023000230002300000");
}

// The fields are declared in the order the schedule runs (skip_first, wait,
// warmup, active, repeat), so designated initializers in that order compile:
// the form of torch's keyword call that the issue's user wrote first.
TEST_CASE("schedule({.skip_first, .wait, .warmup, .active, .repeat}) compiles in the order the schedule runs") {
  warning_capture warnings;
  // Expected strings from torch's schedule_fn (profiler.py) for the same keyword arguments.
  CHECK(actions(proftrace::schedule({.skip_first = 10, .wait = 5, .warmup = 5, .active = 10}), 60) ==
        "000000000000000111112222222223000001111122222222230000011111");
  CHECK(actions(proftrace::schedule({.skip_first = 2, .wait = 1, .warmup = 1, .active = 2, .repeat = 2}), 20) ==
        "00012301230000000000");
  // The declaration order itself: positional aggregate initialization follows it.
  constexpr proftrace::schedule_args a{1, true, 2, 3, 4, 5};
  static_assert(a.skip_first == 1 && a.skip_first_wait && a.wait == 2 && a.warmup == 3 && a.active == 4 &&
                a.repeat == 5);
  CHECK(warnings.seen.empty());
}

// torch's schedule(..., skip_first_wait=1): after skip_first, the first
// cycle has no wait phase; `repeat` counts that shorter cycle as one.
TEST_CASE("schedule({.skip_first_wait = true}) skips the first wait phase after skip_first, as torch") {
  warning_capture warnings;
  // Expected strings from torch's schedule_fn (profiler.py, with skip_first_wait) for steps 0..23.
  CHECK(actions(proftrace::schedule({.skip_first = 2, .skip_first_wait = true, .wait = 3, .warmup = 1, .active = 2,
                                     .repeat = 2}),
                24) == "001230001230000000000000");
  CHECK(actions(proftrace::schedule({.skip_first_wait = true, .wait = 2, .warmup = 1, .active = 1}), 24) ==
        "130013001300130013001300");
  CHECK(actions(proftrace::schedule({.skip_first = 10, .skip_first_wait = true, .wait = 5, .warmup = 5, .active = 10}),
                24) == "000000000011111222222222");
  // Off (the default), the first cycle waits as every other one.
  CHECK(actions(proftrace::schedule({.skip_first = 1, .skip_first_wait = false, .wait = 3, .warmup = 1, .active = 2,
                                     .repeat = 2}),
                24) == "000012300012300000000000");
  // A session: steps 0 and 1 are skipped, 2 warms up, 3 and 4 record, and
  // on_trace_ready runs once, at the end of step 4 (wait = 3 never runs).
  int ready = 0;
  std::int64_t ready_at = -1;
  {
    proftrace::profile p(
        {.schedule = proftrace::schedule({.skip_first = 2, .skip_first_wait = true, .wait = 3, .warmup = 1,
                                          .active = 2, .repeat = 1}),
         .on_trace_ready = [&](proftrace::session& q) { ++ready, ready_at = q.step_num(); }});
    p.start();
    for (int i = 0; i < 8; ++i) p.step();
    p.stop();
  }
  CHECK(ready == 1);
  CHECK(ready_at == 5);
  CHECK(warnings.seen.empty());
}

TEST_CASE("schedule warns without warmup and rejects invalid arguments") {
  warning_capture warnings;
  proftrace::schedule({.wait = 1, .warmup = 0, .active = 1});
  REQUIRE(warnings.seen.size() == 1);
  CHECK(warnings.seen[0] == "Profiler won't be using warmup, this can skew profiler results");
  warnings.seen.clear();
  proftrace::schedule({.wait = 1, .warmup = 1, .active = 1});
  CHECK(warnings.seen.empty());
  CHECK_THROWS_WITH_AS(proftrace::schedule({.wait = 1, .warmup = 1, .active = 0}), "Invalid profiler schedule arguments",
                       std::invalid_argument);
  CHECK_THROWS_AS(proftrace::schedule({.wait = -1, .warmup = 1, .active = 1}), std::invalid_argument);
  CHECK_THROWS_AS(proftrace::schedule({.wait = 1, .warmup = 1, .active = 1, .repeat = -2}), std::invalid_argument);
  CHECK_THROWS_AS(proftrace::schedule({.skip_first = -1, .wait = 1, .warmup = 1, .active = 1}), std::invalid_argument);
}

TEST_CASE("schedule refuses a cycle whose length overflows 64 bits, and a cycle that just fits runs defined") {
  constexpr std::int64_t max = INT64_MAX;
  CHECK_THROWS_WITH_AS(proftrace::schedule({.wait = max - 1, .warmup = 1, .active = 1}),
                       "Invalid profiler schedule arguments: the cycle wait + warmup + active "
                       "(9223372036854775806 + 1 + 1) overflows a 64-bit step count",
                       std::invalid_argument);
  CHECK_THROWS_AS(proftrace::schedule({.wait = 1, .warmup = max, .active = 1}), std::invalid_argument);
  CHECK_THROWS_AS(proftrace::schedule({.wait = 0, .warmup = 1, .active = max}), std::invalid_argument);
  // wait + warmup + active == INT64_MAX: valid. With skip_first_wait the
  // step plus the wait passes INT64_MAX from step 3 on (UBSan watches it).
  const auto s = proftrace::schedule({.skip_first_wait = true, .wait = max - 2, .warmup = 1, .active = 1});
  CHECK(s(0) == profiler_action::warmup);
  CHECK(s(1) == profiler_action::record_and_save);
  CHECK(s(2) == profiler_action::none);
  CHECK(s(3) == profiler_action::none);
  CHECK(s(max) == profiler_action::warmup);  // (max + max - 2) % max == wait
}

TEST_CASE("transition table is torch's action_map") {
  using A = profiler_action;
  using T = proftrace::transition_op;
  using V = std::vector<T>;
  CHECK(proftrace::transition(A::none, A::none) == V{});
  CHECK(proftrace::transition(A::none, A::warmup) == V{T::prepare_trace});
  CHECK(proftrace::transition(A::none, A::record) == V{T::prepare_trace, T::start_trace});
  CHECK(proftrace::transition(A::none, A::record_and_save) == V{T::prepare_trace, T::start_trace});
  CHECK(proftrace::transition(A::warmup, A::none) == V{T::warn_warmup_then_none, T::start_trace, T::stop_trace});
  CHECK(proftrace::transition(A::warmup, A::warmup) == V{});
  CHECK(proftrace::transition(A::warmup, A::record) == V{T::start_trace});
  CHECK(proftrace::transition(A::warmup, A::record_and_save) == V{T::start_trace});
  CHECK(proftrace::transition(A::record, A::none) == V{T::warn_record_then_none, T::stop_trace});
  CHECK(proftrace::transition(A::record, A::warmup) == V{T::warn_record_then_warmup, T::stop_trace});
  CHECK(proftrace::transition(A::record, A::record) == V{});
  CHECK(proftrace::transition(A::record, A::record_and_save) == V{});
  CHECK(proftrace::transition(A::record_and_save, A::none) == V{T::stop_trace, T::trace_ready});
  CHECK(proftrace::transition(A::record_and_save, A::warmup) == V{T::stop_trace, T::trace_ready, T::prepare_trace});
  CHECK(proftrace::transition(A::record_and_save, A::record) ==
        V{T::stop_trace, T::trace_ready, T::prepare_trace, T::start_trace});
  CHECK(proftrace::transition(A::record_and_save, A::record_and_save) ==
        V{T::stop_trace, T::trace_ready, T::prepare_trace, T::start_trace});
  CHECK(proftrace::transition(A::warmup, std::nullopt) == V{T::start_trace, T::stop_trace});
  CHECK(proftrace::transition(A::record, std::nullopt) == V{T::stop_trace, T::trace_ready});
  CHECK(proftrace::transition(A::record_and_save, std::nullopt) == V{T::stop_trace, T::trace_ready});
  CHECK(proftrace::transition(A::none, std::nullopt) == V{});
}

TEST_CASE("a session runs on_trace_ready where torch does, with ProfilerStep annotations") {
  warning_capture warnings;
  std::vector<std::int64_t> ready_at;
  std::vector<std::vector<std::string>> step_names;
  proftrace::profile p({.schedule = proftrace::schedule({.wait = 1, .warmup = 1, .active = 2, .repeat = 2}),
                        .on_trace_ready = [&](proftrace::session& s) {
                          ready_at.push_back(s.step_num());
                          const auto trace = test_support::read_trace(s.trace_path());
                          std::vector<std::string> names;
                          for (auto& e : trace.at("traceEvents").as_array())
                            if (e.as_object().at("name").as_string().starts_with("ProfilerStep#"))
                              names.emplace_back(e.as_object().at("name").as_string());
                          step_names.push_back(names);
                        }});
  p.start();
  for (int i = 0; i < 10; ++i) {
    { PROF_SCOPE("work"); }
    p.step();
  }
  p.stop();
  // Actions 0..9: 0 1 2 3 0 1 2 3 0 0 -> traces end when step 4 and step 8 begin.
  CHECK(ready_at == std::vector<std::int64_t>{4, 8});
  REQUIRE(step_names.size() == 2);
  CHECK(step_names[0] == std::vector<std::string>{"ProfilerStep#2", "ProfilerStep#3"});
  CHECK(step_names[1] == std::vector<std::string>{"ProfilerStep#6", "ProfilerStep#7"});
  CHECK(warnings.seen.empty());
}

TEST_CASE("incorrect schedules warn like torch") {
  warning_capture warnings;
  int ready = 0;
  // WARMUP then NONE, then RECORD then NONE, then RECORD then WARMUP.
  const std::vector<profiler_action> plan = {profiler_action::warmup, profiler_action::none, profiler_action::record,
                                             profiler_action::none,   profiler_action::record, profiler_action::warmup,
                                             profiler_action::none};
  proftrace::profile p({.schedule = [&](std::int64_t step) { return plan[static_cast<std::size_t>(step)]; },
                        .on_trace_ready = [&](proftrace::session&) { ++ready; }});
  p.start();
  for (int i = 0; i < 6; ++i) p.step();
  p.stop();
  CHECK(warnings.contains("Incorrect schedule: WARMUP followed by NONE"));
  CHECK(warnings.contains("Incorrect schedule: RECORD followed by NONE"));
  CHECK(warnings.contains("Incorrect schedule: RECORD followed by WARMUP"));
  CHECK(ready == 0);  // only RECORD_AND_SAVE (or the exit from RECORD) hands a trace over
}

TEST_CASE("PROF_STEP on several threads drives one schedule") {
  warning_capture warnings;
  test_support::temp_dir out("steps");
  proftrace::profile p({.schedule = proftrace::schedule({.wait = 1, .warmup = 1, .active = 2, .repeat = 1}),
                        .on_trace_ready = proftrace::tensorboard_trace_handler(out.path, "w")});
  constexpr int threads = 3, steps = 6;
  std::barrier sync(threads);
  p.start();
  {
    std::vector<std::jthread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&] {
        for (int s = 0; s < steps; ++s) {
          {
            PROF_STEP();
            PROF_SCOPE("body");
          }
          sync.arrive_and_wait();
        }
      });
  }
  CHECK(p.step_num() == steps - 1);
  p.stop();
  const auto files = test_support::files_in(out.path);
  REQUIRE(files.size() == 1);
  const auto trace = test_support::read_trace(files[0]);
  // Exactly one ProfilerStep#N per step, as torch writes (HTA and
  // TensorBoard take every ProfilerStep#N for a step); every thread still
  // has a span per step: the one that drove it (reached it first) has the
  // ProfilerStep#N, the others a "thread step" whose args carry N.
  std::map<std::string, int> profiler_steps;
  std::map<std::int64_t, std::set<std::int64_t>> per_thread;
  for (auto& e : trace.at("traceEvents").as_array()) {
    const auto& o = e.as_object();
    const std::string name(o.at("name").as_string());
    if (name.starts_with("ProfilerStep#")) {
      ++profiler_steps[name];
      per_thread[o.at("tid").as_int64()].insert(std::stoll(name.substr(13)));
    } else if (name == "thread step") {
      CHECK(o.at("cat").as_string() == "user_annotation");
      per_thread[o.at("tid").as_int64()].insert(o.at("args").at("step").as_int64());
    }
    CHECK_FALSE(name.starts_with("ProfilerStep "));
  }
  CHECK(profiler_steps == std::map<std::string, int>{{"ProfilerStep#2", 1}, {"ProfilerStep#3", 1}});
  CHECK(per_thread.size() == threads);
  for (auto& [tid, numbers] : per_thread) CHECK(numbers == std::set<std::int64_t>{2, 3});
  // The table counts ProfilerStep* once per step, as torch's.
  std::map<std::string, std::int64_t> counts;
  for (const auto& row : p.key_averages().rows) counts[row.key] = row.count;
  CHECK(counts["ProfilerStep*"] == 2);
  CHECK(counts["thread step"] == 2 * (threads - 1));
  CHECK(counts["body"] == 2 * threads);
}

TEST_CASE("a thread whose first PROF_STEP comes late joins the step in progress; steps are the session's") {
  // A runs 6 steps; B starts while A is in step 3 (A waits for it there),
  // and runs 6 too: B's steps are 3..8, so the session reaches step 8, and
  // steps 6..8 are B's alone.
  proftrace::profile p({.retain_events = true});
  p.start();
  std::atomic<int> a_in_step_3{0}, b_started{0};
  std::thread a([&] {
    for (int it = 0; it < 6; ++it) {
      PROF_STEP();
      PROF_SCOPE("a");
      if (it == 3) {
        a_in_step_3 = 1;
        while (!b_started) std::this_thread::yield();
      }
    }
  });
  while (!a_in_step_3) std::this_thread::yield();
  std::thread b([&] {
    for (int it = 0; it < 6; ++it) {
      PROF_STEP();
      PROF_SCOPE("b");
      b_started = 1;
    }
  });
  a.join();
  b.join();
  CHECK(p.step_num() == 8);
  p.stop();
  std::map<std::string, std::set<std::string>> step_threads;  // ProfilerStep#N: the thread that drove it
  std::set<std::string> threads;
  for (const auto& e : p.events()) {
    if (e.name.starts_with("ProfilerStep#")) step_threads[e.name].insert(std::to_string(e.thread));
    if (e.name == "a" || e.name == "b") threads.insert(e.name + "@" + std::to_string(e.thread));
  }
  REQUIRE(step_threads.size() == 9);  // ProfilerStep#0 .. #8, one each
  std::string b_thread;
  for (const auto& t : threads)
    if (t.starts_with("b@")) b_thread = t.substr(2);
  for (const char* n : {"ProfilerStep#6", "ProfilerStep#7", "ProfilerStep#8"}) CHECK(step_threads[n] == std::set{b_thread});
  CHECK(step_threads["ProfilerStep#3"] != std::set{b_thread});  // A drove it; B joined it
}

// torch's profile(acc_events=True): key_averages() after each cycle holds
// every cycle so far; without it, the last cycle only. Each trace file still
// holds its own cycle.
TEST_CASE("acc_events accumulates every schedule cycle into key_averages(), as torch") {
  warning_capture warnings;
  test_support::temp_dir out("acc");
  for (const bool acc : {false, true}) {
    CAPTURE(acc);
    std::vector<std::int64_t> work_counts, step_counts, event_counts;
    std::vector<std::size_t> file_work;
    int cycle = 0;
    proftrace::profile p({.schedule = proftrace::schedule({.wait = 1, .warmup = 1, .active = 2, .repeat = 3}),
                          .on_trace_ready =
                              [&](proftrace::session& q) {
                                std::int64_t work = 0, steps = 0;
                                for (const auto& row : q.key_averages().rows) {
                                  if (row.key == "work") work = row.count;
                                  if (row.key == "ProfilerStep*") steps = row.count;
                                }
                                work_counts.push_back(work);
                                step_counts.push_back(steps);
                                event_counts.push_back(static_cast<std::int64_t>(q.events().size()));
                                const auto path = out.path / ("c" + std::to_string(acc) + std::to_string(cycle++) + ".json");
                                q.export_chrome_trace(path);
                                file_work.push_back(test_support::events_named(test_support::read_trace(path), "work").size());
                              },
                          .retain_events = true,
                          .acc_events = acc});
    p.start();
    for (int i = 0; i < 14; ++i) {
      { PROF_SCOPE("work"); }
      p.step();
    }
    p.stop();
    REQUIRE(work_counts.size() == 3);
    if (acc) {
      CHECK(work_counts == std::vector<std::int64_t>{2, 4, 6});
      CHECK(step_counts == std::vector<std::int64_t>{2, 4, 6});
      CHECK(event_counts == std::vector<std::int64_t>{4, 8, 12});  // work and ProfilerStep#N, per recorded step
    } else {
      CHECK(work_counts == std::vector<std::int64_t>{2, 2, 2});
      CHECK(step_counts == std::vector<std::int64_t>{2, 2, 2});
      CHECK(event_counts == std::vector<std::int64_t>{4, 4, 4});
    }
    CHECK(file_work == std::vector<std::size_t>{2, 2, 2});
  }
}
