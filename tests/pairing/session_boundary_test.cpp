// Scopes that outlive what they were recorded in: a session's stop (the
// scope is written closed there, and its end, recorded in the next session,
// is counted as "ended after their session", never as a loss) or their
// thread's exit (c_api_test: written closed at the exit, counted "closed at
// thread exit", not truncated, unless another thread ends it: here).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <proftrace/proftrace.h>
#include <proftrace/proftrace.hpp>

#include "test_support.hpp"

using test_support::events_named;
using test_support::files_in;
using test_support::read_trace;
using test_support::temp_dir;

namespace {

std::int64_t counter(const boost::json::object& trace, const char* key) {
  return trace.at("proftrace").as_object().at(key).as_int64();
}

void check_no_loss(const boost::json::object& trace) {
  CHECK(counter(trace, "lost_events_total") == 0);
  CHECK(counter(trace, "unpaired_events") == 0);
  CHECK(counter(trace, "truncated_scopes") == 0);
}

proftrace::profile_options json_session() {
  return {.overflow = proftrace::overflow_policy::block, .stream_format = proftrace::trace_format::json};
}

}  // namespace

TEST_CASE("a PROF_SCOPE and an async range across a stop and a start: closed at the stop, their ends counted after it") {
  temp_dir out("across-sessions");
  proftrace::profile first(json_session()), second(json_session());
  first.start();
  {
    PROF_SCOPE("across");
    auto range = PROF_ASYNC_RANGE("request");
    { PROF_SCOPE("in the first"); }
    first.stop();
    second.start();
    { PROF_SCOPE("in the second"); }
    range.end();
  }
  second.stop();
  first.export_chrome_trace(out.path / "first.json");
  second.export_chrome_trace(out.path / "second.json");

  const auto one = read_trace(out.path / "first.json");
  REQUIRE(events_named(one, "across").size() == 1);
  CHECK(events_named(one, "request").size() == 2);  // its async pair, closed at the stop
  check_no_loss(one);
  CHECK(counter(one, "scopes_ended_after_their_session") == 0);

  const auto two = read_trace(out.path / "second.json");
  CHECK(events_named(two, "in the second").size() == 1);
  CHECK(events_named(two, "across").empty());
  check_no_loss(two);
  CHECK(counter(two, "scopes_ended_after_their_session") == 2);
  const auto table = second.key_averages().table();
  CHECK(table.find("Lost events") == std::string::npos);
}

TEST_CASE("C pushes popped, and a worker's C step ended, in the next session: no phantom loss") {
  temp_dir out("c-across-sessions");
  const std::string first = "out=" + (out.path / "first").string() + ",format=json";
  const std::string second = "out=" + (out.path / "second").string() + ",format=json";
  std::atomic<int> phase{0};
  const auto wait_for = [&phase](int p) {
    while (phase.load() < p) std::this_thread::yield();
  };
  REQUIRE(proftrace_start(first.c_str()) == 0);
  proftrace_push("main across");
  std::thread worker([&] {
    proftrace_step();
    proftrace_push("worker across");
    phase = 1;
    wait_for(2);
    proftrace_pop();
    proftrace_step();  // ends the step begun in the first session
    proftrace_push("worker inside");
    proftrace_pop();
    phase = 3;
    wait_for(4);
  });
  wait_for(1);
  proftrace_stop();
  REQUIRE(proftrace_start(second.c_str()) == 0);
  proftrace_pop();
  phase = 2;
  wait_for(3);
  proftrace_stop();
  phase = 4;
  worker.join();
  const auto files = files_in(out.path / "second");
  REQUIRE(files.size() == 1);
  const auto trace = read_trace(files[0]);
  CHECK(events_named(trace, "worker inside").size() == 1);
  check_no_loss(trace);
  CHECK(counter(trace, "scopes_ended_after_their_session") == 3);
}

TEST_CASE("a scope whose thread exited before another thread ended it: an async range to that end, not closed at the exit") {
  namespace pd = proftrace::detail;
  static constexpr pd::site moved{"moved after exit", "", __FILE__, __LINE__, pd::category::user_annotation};
  temp_dir out("exit-then-moved");
  proftrace::profile p(json_session());
  p.start();
  pd::scope_token token = 0;
  std::thread([&token] {
    token = pd::start_scope(&moved, pd::session_state.load());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }).join();
  p.flush();  // the flusher has seen the thread gone
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  pd::finish_scope(&moved, token);
  p.stop();
  p.export_chrome_trace(out.path / "t.json");
  const auto trace = read_trace(out.path / "t.json");
  const auto spans = events_named(trace, "moved after exit");
  REQUIRE(spans.size() == 2);
  CHECK(spans[0].at("ph").as_string() == "b");
  CHECK(spans[1].at("ph").as_string() == "e");
  CHECK(spans[1].at("ts").as_double() - spans[0].at("ts").as_double() >= 10000);
  check_no_loss(trace);
  CHECK(counter(trace, "scopes_closed_at_thread_exit") == 0);
  CHECK(counter(trace, "scopes_ended_on_another_thread") == 1);
}
