// The legacy autograd profiler's semantics: the enabled flag, the
// reentrance error, reports before the profile finished, export_stacks
// without with_stack; async ranges that end on another thread; events
// sorted by start, longest first among equal starts.
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <chrono>
#include <thread>

#include "test_support.hpp"

using namespace std::chrono_literals;
using test_support::read_trace;
using test_support::temp_dir;

namespace {

const proftrace::event_average* row(const proftrace::event_averages& a, std::string_view key) {
  for (const auto& r : a.rows)
    if (r.key == key) return &r;
  return nullptr;
}

std::vector<proftrace::function_event> named(const std::vector<proftrace::function_event>& all, std::string_view name) {
  std::vector<proftrace::function_event> out;
  for (const auto& e : all)
    if (e.name == name) out.push_back(e);
  return out;
}

}  // namespace

TEST_CASE("profile(enabled = false) does nothing: no recording, no error, empty reports say it is disabled") {
  proftrace::profile off({.enabled = false});
  off.start();
  CHECK_FALSE(off.running());
  CHECK(proftrace::detail::session_state.load() == 0);  // macros stay on their off path
  { PROF_SCOPE("not recorded"); }
  off.step();
  off.start();  // not "reentrant": it never started
  off.stop();
  CHECK_FALSE(off.has_trace());
  CHECK(off.key_averages().empty());
  CHECK(off.key_averages().note.find("disabled (enabled = false)") != std::string::npos);
  CHECK(off.table().find("Note: the profiler is disabled (enabled = false)") != std::string::npos);

  // A disabled profile does not compete with a running one.
  proftrace::profile on;
  on.start();
  CHECK_NOTHROW(off.start());
  { PROF_SCOPE("recorded"); }
  off.stop();
  CHECK(on.running());
  on.stop();
  CHECK(row(on.key_averages(), "recorded") != nullptr);
}

TEST_CASE("entering a running profile again is an error that says it is not reentrant") {
  proftrace::profile p;
  p.start();
  CHECK_THROWS_WITH_AS(p.start(), doctest::Contains("not reentrant"), std::logic_error);
  CHECK(p.running());
  p.stop();
}

TEST_CASE("reports before the profile finished are empty and say why; after, they agree with key_averages") {
  temp_dir out("legacy-reports");
  proftrace::profile p;
  const auto unfinished = [&](const char* why) {
    CHECK_FALSE(p.has_trace());
    CHECK(p.key_averages().empty());
    CHECK(p.key_averages().note.find(why) != std::string::npos);
    CHECK(p.table().find(std::string("Note: ") + why) != std::string::npos);
    CHECK(p.total_average().count == 0);
    CHECK(p.self_cpu_time_total() == 0);
    CHECK(p.events().empty());
    CHECK(p.memory_stats().empty());
    p.export_chrome_trace(out.path / "t.json");
    CHECK_FALSE(std::filesystem::exists(out.path / "t.json"));
  };
  unfinished("the profiler was never started");
  p.start();
  {
    PROF_SCOPE("outer");
    std::this_thread::sleep_for(2ms);
    PROF_SCOPE("inner");
  }
  unfinished("no trace has finished yet: the profiler is still running");  // before the first trace ended
  p.stop();
  CHECK(p.has_trace());
  CHECK(p.key_averages().note.empty());
  CHECK(p.table().find("Note:") == std::string::npos);
  const auto averages = p.key_averages();
  const auto total = p.total_average();
  CHECK(total.key == "Total");
  std::int64_t count = 0;
  for (const auto& r : averages.rows) count += r.count;
  CHECK(total.count == count);
  CHECK(p.self_cpu_time_total() == doctest::Approx(averages.self_cpu_time_total()));
  CHECK(p.self_cpu_time_total() > 0);
  CHECK(p.table().find("outer") != std::string::npos);
  CHECK(p.table({.sort_by = "self_cpu_time_total"}) == averages.table({.sort_by = "self_cpu_time_total"}));
}

TEST_CASE("export_stacks without with_stack is an error") {
  temp_dir out("legacy-stacks");
  proftrace::profile p;
  p.start();
  { PROF_SCOPE("s"); }
  p.stop();
  CHECK_THROWS_WITH_AS(p.export_stacks(out.path / "stacks.txt"), doctest::Contains("requires with_stack=true"),
                       std::logic_error);
  CHECK_FALSE(std::filesystem::exists(out.path / "stacks.txt"));
}

TEST_CASE("an async range begun on one thread and ended on another is kept, on its own track, CPU total only") {
  temp_dir out("legacy-async");
  proftrace::profile p({.retain_events = true});
  p.start();
  std::int64_t main_tid = 0, worker_tid = 0;
  proftrace::async_range handed;
  {
    PROF_SCOPE("submit");
    handed = PROF_ASYNC_RANGE("request");
  }
  CHECK(handed.active());
  const std::uint64_t id = handed.id();
  std::thread worker([r = std::move(handed)]() mutable {
    PROF_SCOPE("serve");
    std::this_thread::sleep_for(20ms);
    r.end();
    r.end();  // once only
  });
  worker.join();
  CHECK_FALSE(handed.active());  // moved from
  p.stop();

  const auto events = p.events();
  const auto request = named(events, "request");
  REQUIRE(request.size() == 1);
  CHECK(request[0].is_async);
  CHECK(request[0].category == "async");
  CHECK(request[0].duration_ns >= 20'000'000);
  CHECK(request[0].self_duration_ns == 0);
  const auto submit = named(events, "submit");
  const auto serve = named(events, "serve");
  REQUIRE(submit.size() == 1);
  REQUIRE(serve.size() == 1);
  main_tid = submit[0].thread;
  worker_tid = serve[0].thread;
  CHECK(main_tid != worker_tid);
  CHECK(request[0].thread == main_tid);
  CHECK(request[0].end_thread == worker_tid);
  // Nobody's child: the scopes of either thread keep their self time whole.
  CHECK(submit[0].self_duration_ns == submit[0].duration_ns);
  CHECK(serve[0].self_duration_ns == serve[0].duration_ns);

  const auto averages = p.key_averages();
  const auto* r = row(averages, "request");
  REQUIRE(r != nullptr);
  CHECK(r->count == 1);
  CHECK(r->cpu_time_total_ns >= 20'000'000);
  CHECK(r->self_cpu_time_total_ns == 0);
  CHECK(averages.losses.unpaired == 0);

  p.export_chrome_trace(out.path / "t.json");
  const auto trace = read_trace(out.path / "t.json");
  const auto pair = test_support::events_named(trace, "request");
  REQUIRE(pair.size() == 2);
  const auto& b = pair[0].at("ph").as_string() == "b" ? pair[0] : pair[1];
  const auto& e = pair[0].at("ph").as_string() == "b" ? pair[1] : pair[0];
  CHECK(b.at("ph").as_string() == "b");
  CHECK(e.at("ph").as_string() == "e");
  CHECK(b.at("cat").as_string() == "async");
  CHECK(e.at("cat").as_string() == "async");
  CHECK(b.at("id").to_number<std::uint64_t>() == id);
  CHECK(e.at("id").to_number<std::uint64_t>() == id);
  CHECK(b.at("tid").as_int64() == main_tid);
  CHECK(e.at("tid").as_int64() == worker_tid);
  CHECK(e.at("ts").to_number<double>() - b.at("ts").to_number<double>() >= 20000.0);
  CHECK(b.at("args").at("External id").as_int64() > 0);
}

TEST_CASE("an async range's end drained before its begin still pairs") {
  proftrace::profile p({.retain_events = true});
  p.start();
  const std::uint64_t begin_ticks = proftrace::detail::now_ticks();
  static constexpr proftrace::detail::site request_site{"early-end", "", __FILE__, __LINE__,
                                                        proftrace::detail::category::user_annotation};
  const std::uint64_t id = proftrace::detail::next_async_id.fetch_add(1);
  // The ending thread's ring is created first, so a drain in registration
  // order sees the end before the begin.
  std::thread ender([&] {
    auto* r = proftrace::detail::thread_ring();
    REQUIRE(r != nullptr);
    r->push(begin_ticks + 1000, reinterpret_cast<std::uintptr_t>(&request_site), id,
            proftrace::detail::event_kind::async_end);
  });
  ender.join();
  p.flush();
  std::thread beginner([&] {
    auto* r = proftrace::detail::thread_ring();
    REQUIRE(r != nullptr);
    r->push(begin_ticks, reinterpret_cast<std::uintptr_t>(&request_site), id,
            proftrace::detail::event_kind::async_begin);
  });
  beginner.join();
  p.stop();
  const auto found = named(p.events(), "early-end");
  REQUIRE(found.size() == 1);
  CHECK(found[0].is_async);
  CHECK(found[0].thread != found[0].end_thread);
  CHECK(p.key_averages().losses.unpaired == 0);
}

TEST_CASE("an async range still open when the trace ends is closed there; ending it later is harmless") {
  proftrace::profile p({.retain_events = true});
  p.start();
  auto r = PROF_ASYNC_RANGE("left open");
  std::this_thread::sleep_for(5ms);
  p.stop();
  r.end();
  auto inert = PROF_ASYNC_RANGE("after the session");
  CHECK_FALSE(inert.active());
  const auto found = named(p.events(), "left open");
  REQUIRE(found.size() == 1);
  CHECK(found[0].duration_ns >= 5'000'000);
}

TEST_CASE("ranges with equal start times come out outermost first (start, then longest first)") {
  proftrace::profile p({.retain_events = true});
  p.start();
  static constexpr proftrace::detail::site outer_site{"same-start outer", "", __FILE__, __LINE__,
                                                      proftrace::detail::category::user_annotation};
  static constexpr proftrace::detail::site middle_site{"same-start middle", "", __FILE__, __LINE__,
                                                       proftrace::detail::category::user_annotation};
  static constexpr proftrace::detail::site inner_site{"same-start inner", "", __FILE__, __LINE__,
                                                      proftrace::detail::category::user_annotation};
  const auto push = [](const proftrace::detail::site& s, std::uint64_t t, proftrace::detail::event_kind k) {
    auto* r = proftrace::detail::thread_ring();
    REQUIRE(r != nullptr);
    r->push(t, reinterpret_cast<std::uintptr_t>(&s), 0, k);
  };
  using proftrace::detail::event_kind;
  const std::uint64_t t = proftrace::detail::now_ticks();
  push(outer_site, t, event_kind::begin);
  push(middle_site, t, event_kind::begin);
  push(inner_site, t, event_kind::begin);
  push(inner_site, t + 1000, event_kind::end);  // completes (and reaches the flusher) first
  push(middle_site, t + 2000, event_kind::end);
  push(outer_site, t + 3000, event_kind::end);
  p.stop();
  std::vector<std::string> order;
  for (const auto& e : p.events())
    if (e.name.starts_with("same-start")) order.push_back(e.name);
  REQUIRE(order.size() == 3);
  CHECK(order[0] == "same-start outer");
  CHECK(order[1] == "same-start middle");
  CHECK(order[2] == "same-start inner");
  // And everything is in start order.
  const auto events = p.events();
  for (std::size_t i = 1; i < events.size(); ++i) CHECK(events[i - 1].start_unix_ns <= events[i].start_unix_ns);
}
