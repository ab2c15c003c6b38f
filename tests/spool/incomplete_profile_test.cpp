// A program that used the API in order never dies in its last line,
// `std::cout << p.key_averages().table()`: a run shorter than its schedule,
// one cut short during its active steps, and one with no schedule each give
// a report (empty or partial, with a note saying why) and has_trace() tells
// which. The EventList forms torch users write (iteration, indexing) work.
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <filesystem>
#include <string>

#include "test_support.hpp"

namespace {

void work(int steps, proftrace::session& p, bool scoped_steps) {
  for (int i = 0; i < steps; ++i) {
    if (scoped_steps) {
      PROF_STEP();
      PROF_SCOPE("work");
    } else {
      { PROF_SCOPE("work"); }
      p.step();
    }
  }
}

}  // namespace

TEST_CASE("a run shorter than its schedule: an empty report that says why, no exception, one warning per export") {
  for (const bool scoped_steps : {false, true}) {
    CAPTURE(scoped_steps);
    test_support::temp_dir out("incomplete-short");
    test_support::warning_capture warnings;
    proftrace::profile p({.schedule = proftrace::schedule({.wait = 3, .warmup = 1, .active = 3}),
                          .on_trace_ready = proftrace::tensorboard_trace_handler(out.path / "log")});
    p.start();
    work(2, p, scoped_steps);  // still waiting (torch finishes a trace when stopped in warmup)
    p.stop();
    CHECK_FALSE(p.has_trace());
    const proftrace::event_averages avg = p.key_averages();
    CHECK(avg.empty());
    // p.step() twice leaves step 2 begun; two PROF_STEP()s are steps 0 and 1.
    CHECK(avg.note == "no trace finished: the run stopped at step " + std::to_string(scoped_steps ? 1 : 2) +
                          ", before its schedule recorded a trace (its first recording step is 4)");
    std::string table;
    CHECK_NOTHROW(table = p.table());
    CHECK(table.find("Note: no trace finished") != std::string::npos);
    CHECK(p.total_average().count == 0);
    CHECK_NOTHROW(p.export_chrome_trace(out.path / "t.json"));
    CHECK_NOTHROW(p.export_chrome_trace(out.path / "t2.json"));
    CHECK_FALSE(std::filesystem::exists(out.path / "t.json"));
    CHECK_FALSE(std::filesystem::exists(out.path / "log"));  // on_trace_ready never ran
    std::size_t export_warnings = 0;
    for (const auto& w : warnings.seen) export_warnings += w.find("nothing written") != std::string::npos;
    CHECK(export_warnings == 1);
  }
}

TEST_CASE("a run stopped during its active steps: the partial trace is reported, with a note") {
  test_support::temp_dir out("incomplete-partial");
  proftrace::profile p({.schedule = proftrace::schedule({.wait = 1, .warmup = 1, .active = 5})});
  p.start();
  work(4, p, false);  // steps 0..3: wait, warmup, then active from step 2
  p.stop();
  REQUIRE(p.has_trace());
  const auto avg = p.key_averages();
  CHECK(avg.note == "partial trace: stop() ended it at step 4, before its schedule's last active step");
  CHECK(p.table().find("Note: partial trace") != std::string::npos);
  std::int64_t work_count = 0;
  for (const auto& row : avg)
    if (row.key == "work") work_count = row.count;
  CHECK(work_count == 2);  // steps 2 and 3
  p.export_chrome_trace(out.path / "t.json");
  CHECK(std::filesystem::exists(out.path / "t.json"));
}

TEST_CASE("a run stopped during its warmup: an empty trace, as torch's, with a note saying so") {
  proftrace::profile p({.schedule = proftrace::schedule({.wait = 2, .warmup = 2, .active = 1})});
  p.start();
  work(3, p, false);  // steps 0..2: wait, wait, warmup
  p.stop();
  CHECK(p.has_trace());
  const auto avg = p.key_averages();
  CHECK(avg.empty());
  CHECK(avg.note == "empty trace: stop() ended it at step 3, during its schedule's warmup (a schedule records from "
                    "its first active step)");
  CHECK(p.table().find("Note: empty trace") != std::string::npos);
}

TEST_CASE("without a schedule, or with a complete cycle, there is no note") {
  proftrace::profile whole;
  whole.start();
  { PROF_SCOPE("work"); }
  whole.stop();
  CHECK(whole.has_trace());
  CHECK(whole.key_averages().note.empty());

  proftrace::profile cycle({.schedule = proftrace::schedule({.wait = 1, .warmup = 1, .active = 2, .repeat = 1})});
  cycle.start();
  work(6, cycle, false);
  cycle.stop();
  CHECK(cycle.has_trace());
  CHECK(cycle.key_averages().note.empty());
}

TEST_CASE("key_averages() is iterable and indexable like torch's EventList") {
  proftrace::profile p;
  p.start();
  {
    PROF_SCOPE("a");
    PROF_SCOPE("b");
  }
  p.stop();
  const auto avg = p.key_averages();
  REQUIRE(avg.size() == 2);
  CHECK(avg.size() == avg.rows.size());
  std::size_t n = 0;
  for (const proftrace::event_average& row : p.key_averages()) {
    CHECK(row.key == avg[n].key);
    ++n;
  }
  CHECK(n == 2);
  CHECK(avg[0].key != avg[1].key);
  CHECK((avg[0].key == "a" || avg[0].key == "b"));
  CHECK((avg[1].key == "a" || avg[1].key == "b"));
}
