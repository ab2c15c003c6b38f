// The helpers in a translation unit built with PROFTRACE_ENABLED=0 (the
// macros compiled out) and linked with the library: timeit still times,
// PROF_ASYNC_RANGE is an inert range, profileit measures, and the
// execution trace observer writes a valid graph with no nodes.
#undef PROFTRACE_ENABLED
#define PROFTRACE_ENABLED 0

#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <chrono>
#include <thread>

#include "test_support.hpp"

using namespace std::chrono_literals;

static_assert(!PROFTRACE_ENABLED);

TEST_CASE("PROFTRACE_ENABLED=0: timeit still times") {
  proftrace::timeit t({.log = false});
  std::this_thread::sleep_for(20ms);
  t.stop();
  CHECK(t.duration() >= 0.020);
  CHECK(proftrace::timeit::call([] { return 7; }).value == 7);
}

TEST_CASE("PROFTRACE_ENABLED=0: PROF_ASYNC_RANGE is inert and its name is not evaluated") {
  int evaluated = 0;
  auto r = PROF_ASYNC_RANGE((++evaluated, "never recorded"));
  CHECK(evaluated == 0);
  CHECK_FALSE(r.active());
  CHECK(r.id() == 0);
  r.end();
  auto moved = std::move(r);
  CHECK_FALSE(moved.active());
}

TEST_CASE("PROFTRACE_ENABLED=0: profileit measures the CPU") {
  const auto run = proftrace::profileit("cpu", [] { std::this_thread::sleep_for(20ms); });
  CHECK(run.stats.time >= 0.020);
  CHECK(run.stats.peak_resident_bytes.has_value());
}

TEST_CASE("PROFTRACE_ENABLED=0: the observer writes a valid, empty graph") {
  test_support::temp_dir out("et-disabled");
  proftrace::execution_trace_observer et;
  et.register_callback(out.path / "et.json");
  et.start();
  { PROF_SCOPE("compiled out"); }
  et.stop();
  const auto g = boost::json::parse(test_support::read_text(out.path / "et.json")).as_object();
  CHECK(g.at("schema").as_string() == "proftrace.execution_trace/1");
  CHECK(g.at("nodes").as_array().empty());
  CHECK(et.node_count() == 0);
}
