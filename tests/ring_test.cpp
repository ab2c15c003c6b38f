// The per-thread ring and the flusher: every event written exactly once with
// its thread's order kept, and every loss counted under each overflow policy.
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <atomic>
#include <map>
#include <thread>

#include "flusher.hpp"
#include "registry.hpp"
#include "test_support.hpp"

namespace pd = proftrace::detail;

namespace {

// A producer thread pushes `count` sequence numbers while the test thread
// consumes; returns the sequence numbers the consumer saw, in order.
std::vector<std::uint64_t> run_ring(pd::ring& r, std::uint64_t count, bool slow_consumer) {
  std::vector<std::uint64_t> seen;
  std::atomic<bool> done{false};
  std::thread producer([&] {
    for (std::uint64_t i = 0; i < count; ++i) r.push(i, 0, i, pd::event_kind::instant);
    done.store(true, std::memory_order_release);
  });
  std::vector<pd::event> buf(256);
  for (;;) {
    const bool finished = done.load(std::memory_order_acquire);
    std::size_t first = 0;
    const std::size_t n = r.consume(buf.data(), buf.size(), &first);
    for (std::size_t i = 0; i < n; ++i)
      if (static_cast<pd::event_kind>(buf[first + i].kind) != pd::event_kind::gap) seen.push_back(buf[first + i].payload);
    if (slow_consumer) std::this_thread::sleep_for(std::chrono::microseconds(200));
    if (finished && n == 0 && first == 0 && r.empty()) break;
  }
  producer.join();
  return seen;
}

void check_increasing(const std::vector<std::uint64_t>& seen) {
  for (std::size_t i = 1; i < seen.size(); ++i) {
    REQUIRE(seen[i] > seen[i - 1]);
  }
}

}  // namespace

TEST_CASE("ring: block loses nothing and keeps order") {
  pd::flusher::instance().ensure_running(std::chrono::milliseconds(50));  // block needs a live flusher
  pd::set_overflow_policy(proftrace::overflow_policy::block);
  pd::ring r(64);
  const auto seen = run_ring(r, 200000, false);
  REQUIRE(seen.size() == 200000);
  for (std::uint64_t i = 0; i < seen.size(); ++i) REQUIRE(seen[i] == i);
  CHECK(r.dropped() == 0);
  CHECK(r.overwritten() == 0);
}

TEST_CASE("ring: drop counts every discarded event") {
  pd::set_overflow_policy(proftrace::overflow_policy::drop);
  pd::ring r(64);
  const std::uint64_t count = 100000;
  const auto seen = run_ring(r, count, true);
  check_increasing(seen);
  CHECK(r.dropped() > 0);
  CHECK(seen.size() + r.dropped() == count);
  CHECK(r.overwritten() == 0);
}

TEST_CASE("ring: drop_oldest keeps the newest and counts the overwritten") {
  pd::set_overflow_policy(proftrace::overflow_policy::drop_oldest);
  pd::ring r(64);
  const std::uint64_t count = 100000;
  const auto seen = run_ring(r, count, true);
  check_increasing(seen);
  CHECK(r.overwritten() > 0);
  CHECK(seen.size() + r.overwritten() == count);
  CHECK(r.dropped() == 0);
  REQUIRE(!seen.empty());
  CHECK(seen.back() == count - 1);  // the newest event survives
  pd::set_overflow_policy(proftrace::overflow_policy::drop);
}

TEST_CASE("ring: block waits for the consumer, then goes on") {
  // A full ring under `block` with the flusher running: the producer waits
  // and resumes once the consumer drains.
  pd::set_overflow_policy(proftrace::overflow_policy::block);
  pd::ring r(64);
  for (int i = 0; i < 64; ++i) r.push(1, 0, 0, pd::event_kind::instant);
  std::atomic<bool> pushed{false};
  std::thread producer([&] {
    r.push(2, 0, 0, pd::event_kind::instant);
    pushed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(pushed.load());
  std::vector<pd::event> buf(128);
  std::size_t first = 0;
  CHECK(r.consume(buf.data(), buf.size(), &first) == 64);
  producer.join();
  CHECK(pushed.load());
  CHECK(r.dropped() == 0);
  pd::set_overflow_policy(proftrace::overflow_policy::drop);
}

TEST_CASE("ring: records with extension slots stay whole") {
  pd::set_overflow_policy(proftrace::overflow_policy::drop);
  pd::ring r(64);
  std::uint64_t words[8] = {1, 2, 3, 0, 4, 5, 6, 0};
  for (int i = 0; i < 10; ++i) r.push_record(7, 0, static_cast<std::uint64_t>(i), pd::event_kind::shapes, words, 2);
  std::vector<pd::event> buf(5);  // room for one record and part of the next
  std::size_t first = 0;
  std::size_t total = 0;
  for (int round = 0; round < 20; ++round) {
    const std::size_t n = r.consume(buf.data(), buf.size(), &first);
    REQUIRE(n % 3 == 0);
    for (std::size_t i = 0; i < n; i += 3) {
      CHECK(static_cast<pd::event_kind>(buf[first + i].kind) == pd::event_kind::shapes);
      CHECK(buf[first + i].extra == 2);
      CHECK(buf[first + i + 1].ticks == 1);
      CHECK(buf[first + i + 2].where == 5);
    }
    total += n;
  }
  CHECK(total == 30);
}

TEST_CASE("two producers and the flusher: count in = count out, order per thread kept") {
  test_support::warning_capture warnings;
  test_support::temp_dir out("rings");
  constexpr int per_thread = 50000;
  // A small ring so that it wraps many times while the flusher drains it.
  proftrace::profile p({.overflow = proftrace::overflow_policy::block,
                        .ring_events = 256,
                        .flush_period = std::chrono::milliseconds(1)});
  p.start();
  std::map<std::int64_t, int> expected_tids;
  {
    std::vector<std::jthread> producers;
    for (int t = 0; t < 2; ++t)
      producers.emplace_back([&] {
        for (int i = 0; i < per_thread; ++i) {
          PROF_SCOPE("item");
          PROF_COUNTER("seq", i);
        }
      });
  }
  p.stop();
  p.export_chrome_trace(out.path / "trace.json");
  const auto trace = test_support::read_trace(out.path / "trace.json");
  std::map<std::int64_t, std::vector<double>> seq;
  std::map<std::int64_t, int> items;
  for (auto& e : trace.at("traceEvents").as_array()) {
    const auto& o = e.as_object();
    if (o.at("name").as_string() == "seq") seq[o.at("tid").as_int64()].push_back(o.at("args").as_object().at("seq").to_number<double>());
    if (o.at("name").as_string() == "item") items[o.at("tid").as_int64()] += 1;
  }
  REQUIRE(seq.size() == 2);
  for (auto& [tid, values] : seq) {
    REQUIRE(values.size() == per_thread);
    for (int i = 0; i < per_thread; ++i) REQUIRE(values[static_cast<std::size_t>(i)] == i);
    CHECK(items[tid] == per_thread);
  }
  CHECK(trace.at("proftrace").as_object().at("lost_events_total").as_int64() == 0);
  CHECK(p.key_averages().losses.total() == 0);
  CHECK(warnings.seen.empty());
}

TEST_CASE("overflow under drop: losses are counted in the trace and the summary") {
  test_support::temp_dir out("drop");
  proftrace::profile p({.overflow = proftrace::overflow_policy::drop,
                        .ring_events = 64,
                        .flush_period = std::chrono::milliseconds(1000)});
  std::uint64_t written = 0;
  p.start();
  std::jthread([&] {
    for (int i = 0; i < 20000; ++i) {
      PROF_INSTANT("tick");
      ++written;
    }
  }).join();
  p.stop();
  p.export_chrome_trace(out.path / "t.json");
  const auto trace = test_support::read_trace(out.path / "t.json");
  const auto ticks = test_support::events_named(trace, "tick").size();
  const auto dropped = static_cast<std::uint64_t>(trace.at("proftrace").as_object().at("dropped_events").as_int64());
  CHECK(dropped > 0);
  CHECK(ticks + dropped == written);
  CHECK(p.key_averages().losses.dropped == dropped);
  CHECK(p.key_averages().table().find("Lost events: ") != std::string::npos);
}

TEST_CASE("overflow under drop_oldest: the newest survive and the overwritten are counted") {
  test_support::temp_dir out("oldest");
  proftrace::profile p({.overflow = proftrace::overflow_policy::drop_oldest,
                        .ring_events = 64,
                        .flush_period = std::chrono::milliseconds(1000)});
  p.start();
  std::jthread([&] {
    for (int i = 0; i < 20000; ++i) PROF_COUNTER("n", i);
  }).join();
  p.stop();
  p.export_chrome_trace(out.path / "t.json");
  const auto trace = test_support::read_trace(out.path / "t.json");
  const auto n = test_support::events_named(trace, "n");
  const auto overwritten = trace.at("proftrace").as_object().at("overwritten_events").as_int64();
  CHECK(overwritten > 0);
  CHECK(static_cast<std::int64_t>(n.size()) + overwritten == 20000);
  REQUIRE(!n.empty());
  CHECK(n.back().at("args").as_object().at("n").to_number<double>() == 19999);
}

TEST_CASE("threads that exit are drained, then their rings freed") {
  proftrace::profile p({.flush_period = std::chrono::milliseconds(5)});
  p.start();
  const auto before = pd::registry::instance().snapshot().size();
  for (int round = 0; round < 3; ++round) {
    std::vector<std::jthread> pool;
    for (int t = 0; t < 4; ++t) pool.emplace_back([] { PROF_SCOPE("short-lived"); });
  }
  p.flush();  // drains the exited threads' rings and frees them
  CHECK(pd::registry::instance().snapshot().size() <= before);
  p.stop();
  for (auto& r : p.key_averages().rows)
    if (r.key == "short-lived") CHECK(r.count == 12);
}

TEST_CASE("clock: ticks convert to Unix nanoseconds close to the system clock") {
  const auto cal = pd::calibrate_clock();
  const std::int64_t unix_now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();
  const std::int64_t converted = cal.to_unix_ns(pd::now_ticks());
  CHECK(std::llabs(converted - unix_now) < 2'000'000);  // 2 ms
  // A 10 ms sleep measures as 10 ms on the converted scale.
  const auto t0 = pd::now_ticks();
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const auto t1 = pd::now_ticks();
  const double ms = static_cast<double>(cal.to_unix_ns(t1) - cal.to_unix_ns(t0)) / 1e6;
  CHECK(ms >= 9.5);
  CHECK(ms < 50);
#if PROFTRACE_DETAIL_HAS_TSC
  MESSAGE("time source: " << (pd::clock_uses_tsc.load() ? "invariant TSC" : "CLOCK_MONOTONIC_RAW")
                          << ", ns per tick " << cal.ns_per_tick);
#endif
}

TEST_CASE("clock: the portable fallback counts nanoseconds") {
  const auto a = pd::fallback_clock_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const auto b = pd::fallback_clock_ns();
  CHECK(b - a >= 2'000'000);
  CHECK(b - a < 50'000'000);
}
