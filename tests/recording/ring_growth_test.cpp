// A thread's ring grows when the flusher falls behind (ring::offer_successor,
// registry::follow_move, the flusher's grow_if_behind): the producer moves to
// the larger ring at its next slow path, indices and loss counts go on there,
// a scope open across the move pairs as in one ring, and the ring it left
// forwards a push made through an old reference.
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "recording/registry.hpp"
#include "ring_consume.hpp"
#include "test_support.hpp"

namespace pd = proftrace::detail;

namespace {

const pd::site growth_site{"grows", "test", __FILE__, __LINE__, pd::category::user_annotation};
const std::uint64_t where = reinterpret_cast<std::uintptr_t>(&growth_site);

pd::event_kind kind_of(const pd::event& e) { return static_cast<pd::event_kind>(e.kind); }

}  // namespace

TEST_CASE("ring: the producer moves to the larger ring offered; indices, drops and a gap go on there") {
  pd::set_overflow_policy(proftrace::overflow_policy::drop);
  pd::ring r(64);  // 128 one-slot begins fit
  std::vector<std::uint64_t> begins;
  for (int i = 0; i < 130; ++i) begins.push_back(r.push(r.now(), where, 0, pd::event_kind::begin));
  CHECK(r.dropped() == 2);
  CHECK(begins.back() == pd::no_begin);
  CHECK(r.offer_successor(new pd::ring(256)));
  CHECK_FALSE(r.offer_successor(new pd::ring(256)));  // one at a time; the second is deleted
  CHECK_FALSE(r.moved());

  const std::uint64_t after = r.push(r.now(), where, 0, pd::event_kind::begin);  // full: the slow path moves
  CHECK(r.moved());
  r.push(r.now(), 0, begins[0], pd::event_kind::end);  // through the old reference: forwarded
  const auto old_events = test_support::consume_all(r);
  CHECK(old_events.size() == 128);
  CHECK(r.empty());
  const std::unique_ptr<pd::ring> next(r.hand_over_successor());
  CHECK(next->uid() == r.uid());
  CHECK(next->capacity() == 256);
  CHECK(next->dropped() == 2);

  const auto events = test_support::consume_all(*next);
  REQUIRE(events.size() == 3);
  CHECK(kind_of(events[0]) == pd::event_kind::gap);  // the two drops before the move, marked where they were
  CHECK(events[0].where == 2);  // a gap record counts its drops in `where`
  CHECK(kind_of(events[1]) == pd::event_kind::begin);
  CHECK(kind_of(events[2]) == pd::event_kind::end);
  CHECK(events[2].payload == begins[0]);  // an end there names a begin here
  CHECK(after > begins[127]);
  CHECK(pd::ring_uid_of(after) == r.uid());
}

TEST_CASE("ring: a ring never moved keeps its offer until reset, which frees it") {
  pd::ring r(64);
  CHECK(r.offer_successor(new pd::ring(256)));
  r.reset();
  CHECK_FALSE(r.successor_offered());
  CHECK_FALSE(r.moved());
}

namespace {

// The producer's steps, in turn with the test thread that stalls the flusher
// (the registry's fork lock is the one its snapshot takes).
struct turns {
  std::atomic<int> step{0};
  void wait_for(int s) const {
    while (step.load(std::memory_order_acquire) < s) std::this_thread::yield();
  }
  void go(int s) { step.store(s, std::memory_order_release); }
};

bool wait_until(const std::function<bool()>& done) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done())
    if (std::chrono::steady_clock::now() > give_up) return false;
    else std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return true;
}

}  // namespace

TEST_CASE("flusher: a ring found three quarters full grows, and a burst it would have dropped is kept whole") {
  test_support::temp_dir out("growth");
  proftrace::profile p({.overflow = proftrace::overflow_policy::drop,
                        .ring_events = 64,  // 128 slots, growing to 256 events (PROFTRACE_RING_GROWTH 4)
                        .flush_period = std::chrono::milliseconds(5)});
  p.start();
  turns t;
  bool grew = false, moved = false;
  std::jthread producer([&] {
    PROF_SCOPE("outer");  // open across the move: its end goes to the larger ring
    pd::ring* first = pd::this_thread_ring;
    t.go(1);
    t.wait_for(2);
    for (int i = 0; i < 50; ++i) {  // 100 slots: past three quarters, no loss
      PROF_SCOPE("inner");
    }
    t.go(3);
    grew = wait_until([&] { return first->empty() && first->successor_offered(); });
    t.go(4);
    t.wait_for(5);
    for (int i = 0; i < 200; ++i) {  // 400 slots: only the larger ring holds them
      PROF_SCOPE("inner");
    }
    moved = pd::this_thread_ring != first;
    t.go(6);
  });
  t.wait_for(1);
  pd::registry::instance().lock_for_fork();
  t.go(2);
  t.wait_for(3);
  pd::registry::instance().unlock_after_fork();
  t.wait_for(4);
  pd::registry::instance().lock_for_fork();
  t.go(5);
  t.wait_for(6);
  pd::registry::instance().unlock_after_fork();
  producer.join();
  p.stop();
  CHECK(grew);
  CHECK(moved);
  p.export_chrome_trace(out.path / "t.json");
  const auto trace = test_support::read_trace(out.path / "t.json");
  CHECK(trace.at("proftrace").as_object().at("lost_events_total").as_int64() == 0);
  const auto inner = test_support::events_named(trace, "inner");
  const auto outer = test_support::events_named(trace, "outer");
  CHECK(inner.size() == 250);
  REQUIRE(outer.size() == 1);
  CHECK(outer[0].at("ph").as_string() == "X");  // paired on its thread, not an async range
  const double outer_end = outer[0].at("ts").to_number<double>() + outer[0].at("dur").to_number<double>();
  for (const auto& e : inner) CHECK(e.at("ts").to_number<double>() + e.at("dur").to_number<double>() <= outer_end);
}
