// Reliability promises that hold inside one process: exact loss counts under
// every overflow policy, thread churn, a spool removed while recording, and
// names and sizes a program should not pass but might.
#include <doctest/doctest.h>

#include <malloc.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <proftrace/proftrace.h>
#include <proftrace/proftrace.hpp>

#include "flusher_stall.hpp"
#include "recording/registry.hpp"
#include "test_support.hpp"

namespace pd = proftrace::detail;
using test_support::events_named;
using test_support::read_trace;
using test_support::temp_dir;
using test_support::warning_capture;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool sanitized_allocator = true;  // mallinfo2 does not see the sanitizer's heap
#else
constexpr bool sanitized_allocator = false;
#endif

namespace {

std::int64_t counter(const boost::json::object& trace, const char* key) {
  return trace.at("proftrace").as_object().at(key).as_int64();
}

}  // namespace

TEST_CASE("overflow, every policy: written + lost = produced, exactly, in the trace and in the table") {
  for (const auto policy : {proftrace::overflow_policy::drop, proftrace::overflow_policy::drop_oldest,
                            proftrace::overflow_policy::block}) {
    CAPTURE(static_cast<int>(policy));
    temp_dir out("overflow");
    // A 64-event ring and a flusher that wakes rarely (kept away from the rings
    // under the losing policies): two producers outrun it.
    proftrace::profile p({.overflow = policy, .ring_events = 64, .flush_period = std::chrono::milliseconds(500)});
    constexpr int per_thread = 20000;
    p.start();
    if (policy == proftrace::overflow_policy::block) {
      std::vector<std::jthread> producers;
      for (int t = 0; t < 2; ++t)
        producers.emplace_back([] {
          for (int i = 0; i < per_thread; ++i) PROF_COUNTER("produced", i);
        });
    } else {
      test_support::with_flusher_stalled([] { PROF_COUNTER("produced", 0); }, [] {
        for (int i = 1; i < per_thread; ++i) PROF_COUNTER("produced", i);
      }, 2);
    }
    p.stop();
    p.export_chrome_trace(out.path / "t.json");
    const auto trace = read_trace(out.path / "t.json");
    const auto written = static_cast<std::int64_t>(events_named(trace, "produced").size());
    const auto dropped = counter(trace, "dropped_events"), overwritten = counter(trace, "overwritten_events");
    CHECK(written + dropped + overwritten == 2 * per_thread);
    CHECK(counter(trace, "lost_events_total") == dropped + overwritten);
    const auto table = p.key_averages();
    CHECK(static_cast<std::int64_t>(table.losses.dropped) == dropped);
    CHECK(static_cast<std::int64_t>(table.losses.overwritten) == overwritten);
    CHECK(static_cast<std::int64_t>(table.counter_events) == written);
    CHECK(counter(trace, "counter_events") == written);
    switch (policy) {
      case proftrace::overflow_policy::drop:
        CHECK(dropped > 0);
        CHECK(overwritten == 0);
        CHECK(table.table().find("Lost events: " + std::to_string(dropped) + " (dropped " + std::to_string(dropped)) !=
              std::string::npos);
        break;
      case proftrace::overflow_policy::drop_oldest:
        CHECK(overwritten > 0);
        CHECK(dropped == 0);
        CHECK(table.table().find("overwritten " + std::to_string(overwritten)) != std::string::npos);
        break;
      case proftrace::overflow_policy::block:
        CHECK(written == 2 * per_thread);
        CHECK(table.table().find("Lost events") == std::string::npos);
        break;
    }
  }
}

TEST_CASE("overflow: a scope of every kind is two events, lost or written (runtime names, C pushes included)") {
  for (const auto policy : {proftrace::overflow_policy::drop, proftrace::overflow_policy::drop_oldest}) {
    CAPTURE(static_cast<int>(policy));
    temp_dir out("kinds");
    proftrace::profile p({.overflow = policy, .ring_events = 64, .flush_period = std::chrono::milliseconds(500)});
    constexpr int rounds = 5000;
    p.start();
    const auto round = [] {
      { PROF_SCOPE_DYNAMIC(std::string("dynamic")); }
      proftrace_push("c push");
      proftrace_pop();
      proftrace_push_literal("c literal");
      proftrace_pop();
      { PROF_SCOPE("plain"); }
    };
    test_support::with_flusher_stalled(round, [&] {
      for (int i = 1; i < rounds; ++i) round();
    });
    p.stop();
    p.export_chrome_trace(out.path / "t.json");
    const auto trace = read_trace(out.path / "t.json");
    // A complete scope is both its events; a truncated one its begin only.
    std::int64_t written = 0;
    for (const char* name : {"dynamic", "c push", "c literal", "plain"})
      for (const auto& e : events_named(trace, name)) {
        const auto* args = e.if_contains("args");
        written += args && args->as_object().contains("truncated") ? 1 : 2;
      }
    CHECK(counter(trace, "lost_events_total") > 0);
    CHECK(written + counter(trace, "lost_events_total") == 2 * 4 * rounds);
  }
}

namespace {

// `threads` short-lived threads, at most 64 alive at once, each recording
// three scopes.
void churn(int threads) {
  for (int started = 0; started < threads;) {
    std::vector<std::jthread> batch;
    for (int i = 0; i < 64 && started < threads; ++i, ++started)
      batch.emplace_back([] {
        for (int k = 0; k < 3; ++k) {
          PROF_SCOPE("churn");
        }
      });
  }
}

std::size_t heap_in_use() { return mallinfo2().uordblks; }

}  // namespace

TEST_CASE("thread churn: 10,000 short-lived threads, every event written once, memory back to its baseline") {
  temp_dir out("churn");
  proftrace::profile p({.ring_events = 256, .flush_period = std::chrono::milliseconds(5)});
  // A first round sizes the pools and maps that stay (the ring pool, the
  // flusher's tables): the baseline is taken after it.
  p.start();
  churn(256);
  p.stop();
  const std::size_t records_before = pd::registry::instance().snapshot().size();
  const std::size_t heap_before = heap_in_use();

  p.start();
  churn(10000);
  p.stop();
  // The exited threads' records are gone; what is left is the threads that
  // are still alive (this one; the flusher has none).
  CHECK(pd::registry::instance().snapshot().size() <= records_before);
  if (!sanitized_allocator) {
    const std::size_t heap_after = heap_in_use();
    MESSAGE("heap in use: ", heap_before, " bytes before, ", heap_after, " after 10,000 threads");
    // The last trace's table (one row) and the session's state stay; 10,000
    // rings of 8 KiB would be 80 MB.
    CHECK(heap_after < heap_before + 256 * 1024);
  }

  p.export_chrome_trace(out.path / "t.json");
  const auto trace = read_trace(out.path / "t.json");
  CHECK(events_named(trace, "churn").size() == 30000);
  CHECK(counter(trace, "lost_events_total") == 0);
  for (const auto& row : p.key_averages().rows)
    if (row.key == "churn") CHECK(row.count == 30000);
}

TEST_CASE("a spool file removed while recording: one warning, and the trace still exports whole") {
  warning_capture warnings;
  temp_dir spool("removed");
  temp_dir out("removed-out");
  proftrace::profile p({.spool_dir = spool.path});
  p.start();
  for (int i = 0; i < 100; ++i) {
    PROF_SCOPE("before");
  }
  p.flush();
  const auto files = test_support::files_in(spool.path);
  REQUIRE(files.size() == 1);
  std::filesystem::remove(files[0]);
  for (int i = 0; i < 100; ++i) {
    PROF_SCOPE("after");
  }
  p.stop();
  CHECK(warnings.contains("was removed while recording; the trace is complete in the still open file"));
  p.export_chrome_trace(out.path / "t.json.gz");
  const auto trace = read_trace(out.path / "t.json.gz");
  CHECK(events_named(trace, "before").size() == 100);
  CHECK(events_named(trace, "after").size() == 100);
}

// A name of 4096 characters, as a literal.
#define PROFTRACE_TEST_X16 "xxxxxxxxxxxxxxxx"
#define PROFTRACE_TEST_X256                                                                                  \
  PROFTRACE_TEST_X16 PROFTRACE_TEST_X16 PROFTRACE_TEST_X16 PROFTRACE_TEST_X16 PROFTRACE_TEST_X16            \
      PROFTRACE_TEST_X16 PROFTRACE_TEST_X16 PROFTRACE_TEST_X16 PROFTRACE_TEST_X16 PROFTRACE_TEST_X16        \
          PROFTRACE_TEST_X16 PROFTRACE_TEST_X16 PROFTRACE_TEST_X16 PROFTRACE_TEST_X16 PROFTRACE_TEST_X16    \
              PROFTRACE_TEST_X16
#define PROFTRACE_TEST_X4096                                                                                 \
  PROFTRACE_TEST_X256 PROFTRACE_TEST_X256 PROFTRACE_TEST_X256 PROFTRACE_TEST_X256 PROFTRACE_TEST_X256       \
      PROFTRACE_TEST_X256 PROFTRACE_TEST_X256 PROFTRACE_TEST_X256 PROFTRACE_TEST_X256 PROFTRACE_TEST_X256   \
          PROFTRACE_TEST_X256 PROFTRACE_TEST_X256 PROFTRACE_TEST_X256 PROFTRACE_TEST_X256                    \
              PROFTRACE_TEST_X256 PROFTRACE_TEST_X256

TEST_CASE("odd names: empty, 4 KiB long, quotes, control characters and invalid UTF-8 give valid JSON") {
  temp_dir out("names");
  proftrace::profile p({.record_shapes = true, .with_stack = true});
  p.start();
  PROF_THREAD_NAME("thread \"\xff\xfe\" name\n");
  {
    PROF_SCOPE("");
    PROF_SCOPE(PROFTRACE_TEST_X4096);
    PROF_SCOPE("quote \" backslash \\ newline \n tab \t bell \x07 del \x7f");
    PROF_SCOPE("invalid utf-8: \xff \xc3 \xe2\x82 end");
    PROF_SCOPE("valid utf-8: \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    PROF_INSTANT("instant \xc0\xaf overlong");
    PROF_COUNTER("counter \"quoted\"", 1);
  }
  p.add_metadata("key \"with\" \xff quotes", "value\nwith \xfe newline");
  p.stop();
  for (const char* name : {"t.json", "t.json.gz"}) {
    CAPTURE(name);
    p.export_chrome_trace(out.path / name);
    // boost::json::parse rejects invalid UTF-8 and unescaped control characters.
    const auto trace = read_trace(out.path / name);
    CHECK(events_named(trace, "").size() == 1);
    CHECK(events_named(trace, PROFTRACE_TEST_X4096).size() == 1);
    CHECK(events_named(trace, "quote \" backslash \\ newline \n tab \t bell \x07 del \x7f").size() == 1);
    CHECK(events_named(trace, "valid utf-8: \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80").size() == 1);
    bool found_invalid = false;
    for (const auto& e : trace.at("traceEvents").as_array()) {
      const auto& o = e.as_object();
      if (o.contains("name") && std::string_view(o.at("name").as_string()).starts_with("invalid utf-8: "))
        found_invalid = std::string_view(o.at("name").as_string()).ends_with(" end");
    }
    CHECK(found_invalid);
  }
  CHECK(p.key_averages().table().find("quote") != std::string::npos);
}

TEST_CASE("zero and negative sizes: zero FLOPs valid, negative ones counted as invalid, negative memory sizes taken as 0") {
  temp_dir out("sizes");
  proftrace::profile p({.profile_memory = true, .with_flops = true});
  p.start();
  {
    PROF_SCOPE("sizes");
    PROF_MATMUL(-1, 2, 3);  // invalid
    PROF_MATMUL(0, 2, 3);   // an empty loop: valid, 0 FLOPs
    PROF_ELEMENTWISE(0);    // valid, 0 FLOPs
    PROF_FLOPS(0);          // valid, 0 FLOPs
    PROF_CONV(.batch = 0, .in_channels = 3, .out_channels = 8, .input = {32, 32}, .kernel = {3, 3});  // valid, 0
    PROF_ELEMENTWISE(-5);   // invalid
    PROF_FLOPS(-7);         // invalid
    PROF_MATMUL(2, 2, 2);   // the one estimate with work: 16 FLOPs
    int a = 0, b = 0, c = 0;
    PROF_ALLOC(&a, 0);     // an empty allocation: recorded, no bytes
    PROF_ALLOC(&b, 128);
    PROF_ALLOC(&c, -64);   // a negative size is taken as an empty allocation
    PROF_FREE(nullptr);    // never allocated: counted as unknown
  }
  p.stop();
  bool found = false;
  for (const auto& row : p.key_averages().rows)
    if (row.key == "sizes") {
      found = true;
      CHECK(row.flops == 16);
    }
  CHECK(found);
  const auto stats = p.memory_stats();
  REQUIRE(stats.size() == 1);
  CHECK(stats[0].current_allocated == 128);
  CHECK(stats[0].trace.max_allocated == 128);
  p.export_chrome_trace(out.path / "t.json");
  const auto trace = read_trace(out.path / "t.json");
  CHECK(counter(trace, "invalid_flop_estimates") == 3);  // the negative ones only
  CHECK(counter(trace, "unknown_frees") == 1);
}

TEST_CASE("the API used out of order: defined results, clear errors") {
  proftrace::profile p;
  CHECK_THROWS_WITH_AS(p.step(), "proftrace: step() called on a profiler that is not running", std::logic_error);
  {
    PROF_STEP();  // no session: nothing happens
  }
  CHECK_NOTHROW(p.stop());  // never started
  p.start();
  {
    proftrace::profile nested;
    CHECK_THROWS_WITH_AS(nested.start(), doctest::Contains("another profiler is already running"), std::logic_error);
  }
  CHECK_THROWS_WITH_AS(p.start(), doctest::Contains("this profiler is already running"), std::logic_error);
  p.stop();
  CHECK_NOTHROW(p.stop());  // twice
  CHECK_FALSE(p.running());
  CHECK_NOTHROW(p.key_averages());
}
