// The per-thread ring and the flusher: every event written exactly once with
// its thread's order kept, and every loss counted under each overflow policy.
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <atomic>
#include <map>
#include <thread>
#include <tuple>

#include "drain/flusher.hpp"
#include "recording/registry.hpp"
#include "flusher_stall.hpp"
#include "ring_consume.hpp"
#include "test_support.hpp"

namespace pd = proftrace::detail;

namespace {

pd::event_kind kind_of(const pd::event& e) { return static_cast<pd::event_kind>(e.kind); }
bool is_wait(const pd::event& e) {
  return kind_of(e) == pd::event_kind::complete && e.where == reinterpret_cast<std::uintptr_t>(&pd::ring_wait_site);
}

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
  pd::event_kind previous = pd::event_kind::gap;
  for (;;) {
    const bool finished = done.load(std::memory_order_acquire);
    std::size_t first = 0;
    const std::size_t n = r.consume(buf.data(), buf.size(), &first);
    for (std::size_t i = 0; i < n; ++i) {
      const pd::event& e = buf[first + i];
      // A wait for room (block) comes right after the instant that waited.
      if (is_wait(e)) REQUIRE((previous == pd::event_kind::instant && e.payload < e.ticks));
      else if (kind_of(e) != pd::event_kind::gap) seen.push_back(e.payload);
      previous = kind_of(e);
    }
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

namespace {

const pd::site scope_site{"scope", "", __FILE__, 0, pd::category::user_annotation};
const std::uintptr_t scope = reinterpret_cast<std::uintptr_t>(&scope_site);

// Consumes until at least `count` slots came out (the producer may still be writing them).
std::vector<pd::event> consume_slots(pd::ring& r, std::size_t count) {
  std::vector<pd::event> out;
  std::vector<pd::event> buf(128);
  while (out.size() < count) {
    std::size_t first = 0;
    const std::size_t n = r.consume(buf.data(), buf.size(), &first);
    out.insert(out.end(), buf.begin() + static_cast<std::ptrdiff_t>(first),
               buf.begin() + static_cast<std::ptrdiff_t>(first + n));
    if (n == 0) std::this_thread::yield();
  }
  return out;
}

// `r` is full under block, with `filled` records: runs `produce` on a
// thread of its own, which waits for room, drains the ring once that thread
// sleeps for room and returns the `count` records written after it was full. `drained_at`: when
// the consumer made room, in the ring's ticks.
template <class Produce>
std::vector<pd::event> drain_after_wait(pd::ring& r, std::size_t filled, std::size_t count, Produce produce,
                                        std::uint64_t& drained_at) {
  std::thread producer([&] { produce(); });
  // The producer's wait has begun once it sleeps for room (its record's
  // start is taken before): seen, however late a loaded machine runs it.
  bool asleep = false;
  for (int i = 0; i < 100'000 && !asleep; ++i) {
    asleep = r.producer_asleep();
    if (!asleep) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  drained_at = r.now();
  const std::size_t drained = consume_slots(r, filled).size();
  producer.join();
  REQUIRE(asleep);
  REQUIRE(drained == filled);
  auto rest = consume_slots(r, count);
  CHECK(rest.size() == count);
  CHECK(r.empty());
  CHECK(r.dropped() == 0);
  return rest;
}

// The wait began before the consumer made room and ended only after it.
void check_waited(const pd::event& wait, std::uint64_t drained_at) {
  REQUIRE(is_wait(wait));
  CHECK(wait.payload < drained_at);
  CHECK(wait.ticks >= drained_at);
}

}  // namespace

TEST_CASE("ring: a begin that waited under block follows the wait's record and starts when it ended") {
  pd::flusher::instance().ensure_running(std::chrono::milliseconds(50));  // block needs a live flusher
  pd::set_overflow_policy(proftrace::overflow_policy::block);
  pd::ring r(64);
  const std::uint64_t base = r.uid() << pd::ring_uid_shift;
  for (int i = 0; i < 64; ++i) r.push(r.now(), scope, 0, pd::event_kind::instant);
  std::uint64_t stamped = 0;
  std::uint64_t begin = 0;
  std::uint64_t drained_at = 0;
  const auto rest = drain_after_wait(r, 64, 3, [&] {
    stamped = r.now();
    begin = r.push(stamped, scope, 0, pd::event_kind::begin);
    r.push(r.now(), scope, begin, pd::event_kind::end);
  }, drained_at);
  check_waited(rest[0], drained_at);
  CHECK(rest[0].payload >= stamped);
  CHECK(kind_of(rest[1]) == pd::event_kind::begin);
  CHECK(rest[1].ticks >= rest[0].ticks);  // re-stamped: the scope does not contain the wait
  CHECK(begin == base + 130);            // its own slot, after the wait's two (64 instants took 128)
  CHECK(kind_of(rest[2]) == pd::event_kind::end);
  CHECK(rest[2].payload == begin);
  CHECK(rest[2].ticks >= rest[1].ticks);
  pd::set_overflow_policy(proftrace::overflow_policy::drop);
}

TEST_CASE("ring: a begin with extension slots that waited comes whole after the wait's record") {
  pd::flusher::instance().ensure_running(std::chrono::milliseconds(50));
  pd::set_overflow_policy(proftrace::overflow_policy::block);
  pd::ring r(64);
  const std::uint64_t base = r.uid() << pd::ring_uid_shift;
  for (int i = 0; i < 64; ++i) r.push(r.now(), scope, 0, pd::event_kind::instant);
  const std::uint64_t words[8] = {1, 2, 3, 0, 4, 5, 6, 0};
  std::uint64_t begin = 0;
  std::uint64_t after = 0;
  std::uint64_t drained_at = 0;
  const auto rest = drain_after_wait(r, 64, 5, [&] {
    begin = r.push_record(r.now(), scope, 7, pd::event_kind::shapes, words, 2);
    after = r.push(r.now(), scope, begin, pd::event_kind::end);
  }, drained_at);
  check_waited(rest[0], drained_at);
  CHECK(kind_of(rest[1]) == pd::event_kind::shapes);
  CHECK(rest[1].extra == 2);
  CHECK(rest[1].payload == 7);
  CHECK(rest[1].ticks >= rest[0].ticks);
  CHECK(rest[2].ticks == 1);
  CHECK(rest[3].where == 5);
  CHECK(begin == base + 130);
  CHECK(after == base + 136);  // the shapes' record took six slots: two per event
  CHECK(rest[4].payload == begin);
  pd::set_overflow_policy(proftrace::overflow_policy::drop);
}

TEST_CASE("ring: an end that waited under block comes before the wait's record") {
  pd::flusher::instance().ensure_running(std::chrono::milliseconds(50));
  pd::set_overflow_policy(proftrace::overflow_policy::block);
  pd::ring r(64);
  const std::uint64_t base = r.uid() << pd::ring_uid_shift;
  // A plain begin takes one slot, an instant two: 128 slots in all.
  const std::uint64_t begin = r.push(r.now(), scope, 0, pd::event_kind::begin);
  for (int i = 1; i < 64; ++i) r.push(r.now(), scope, 0, pd::event_kind::instant);
  r.push(r.now(), scope, 0, pd::event_kind::begin);
  std::uint64_t stamped = 0;
  std::uint64_t end = 0;
  std::uint64_t next = 0;
  std::uint64_t drained_at = 0;
  const auto rest = drain_after_wait(r, 65, 3, [&] {
    stamped = r.now();
    end = r.push(stamped, scope, begin, pd::event_kind::end);
    next = r.push(r.now(), scope, 0, pd::event_kind::instant);
  }, drained_at);
  CHECK(kind_of(rest[0]) == pd::event_kind::end);
  CHECK(rest[0].payload == begin);  // still names its begin
  CHECK(rest[0].ticks == stamped);  // an end keeps its time: the wait came after it
  check_waited(rest[1], drained_at);
  CHECK(rest[1].payload >= stamped);
  CHECK(kind_of(rest[2]) == pd::event_kind::instant);
  CHECK(end == base + 128);
  CHECK(next == base + 131);  // after the end's slot and the wait's two
  pd::set_overflow_policy(proftrace::overflow_policy::drop);
}

TEST_CASE("ring: under block, a ring that never waits holds exactly what was pushed") {
  pd::flusher::instance().ensure_running(std::chrono::milliseconds(50));
  pd::set_overflow_policy(proftrace::overflow_policy::block);
  pd::ring r(64);
  const std::uint64_t base = r.uid() << pd::ring_uid_shift;
  const std::uint64_t words[4] = {1, 2, 3, 0};
  const std::uint64_t begin = r.push(10, scope, 0, pd::event_kind::begin);
  const std::uint64_t shapes = r.push_record(11, scope, 0, pd::event_kind::shapes, words, 1);
  CHECK(begin == base);
  CHECK(shapes == base + 1);  // a plain begin takes one slot
  // The shapes' head and extension took two slots each.
  CHECK(r.push(15, scope, shapes, pd::event_kind::end) == base + 5);  // ticks: 10 + its slot
  // Up to the last slot: room for a wait's record is asked only when waiting.
  for (std::uint64_t i = 6; i < 128; ++i) CHECK(r.push(i + 10, scope, begin, pd::event_kind::end) == base + i);
  std::vector<pd::event> buf(256);
  std::size_t first = 0;
  REQUIRE(r.consume(buf.data(), buf.size(), &first) == 126);
  CHECK(buf[0].ticks == 10);
  CHECK(buf[1].ticks == 11);
  CHECK(buf[2].ticks == 1);  // the shapes' extension: its words
  for (std::uint64_t i = 0; i < 126; ++i) {
    CHECK_FALSE(is_wait(buf[i]));
    if (i >= 3) CHECK(buf[i].ticks == i + 12);  // from the end at slot 5 on, one slot each
  }
  CHECK(r.dropped() == 0);
  pd::set_overflow_policy(proftrace::overflow_policy::drop);
}

TEST_CASE("ring: under block with a slow consumer, every wait lies outside the scopes and every end names its begin") {
  pd::flusher::instance().ensure_running(std::chrono::milliseconds(50));
  pd::set_overflow_policy(proftrace::overflow_policy::block);
  pd::ring r(64);
  constexpr std::uint64_t scopes = 20000;
  std::atomic<bool> done{false};
  std::thread producer([&] {
    for (std::uint64_t i = 0; i < scopes; ++i)
      r.push(r.now(), scope, r.push(r.now(), scope, i, pd::event_kind::begin), pd::event_kind::end);
    done.store(true, std::memory_order_release);
  });
  std::vector<pd::event> all;
  std::vector<pd::event> buf(256);
  for (bool finished = false; !(finished && r.empty());) {
    finished = done.load(std::memory_order_acquire);
    std::size_t first = 0;
    const std::size_t n = r.consume(buf.data(), buf.size(), &first);
    all.insert(all.end(), buf.begin() + static_cast<std::ptrdiff_t>(first),
               buf.begin() + static_cast<std::ptrdiff_t>(first + n));
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  producer.join();
  // Walk the records as the flusher does: each record's index counts the
  // slots before it.
  std::uint64_t index = r.uid() << pd::ring_uid_shift;
  std::uint64_t open = pd::no_begin;
  std::uint64_t begins = 0;
  std::uint64_t waits = 0;
  for (std::size_t i = 0; i < all.size(); index += pd::ring_slots(all[i], r.uid()), ++i) {
    const pd::event& e = all[i];
    if (is_wait(e)) {
      ++waits;
      REQUIRE(e.payload < e.ticks);
      REQUIRE(open == pd::no_begin);  // never inside a scope
      const bool before_begin = i + 1 < all.size() && kind_of(all[i + 1]) == pd::event_kind::begin &&
                                all[i + 1].ticks == e.ticks;
      const bool after_end = i > 0 && kind_of(all[i - 1]) == pd::event_kind::end && all[i - 1].ticks <= e.payload;
      REQUIRE((before_begin || after_end));
    } else if (kind_of(e) == pd::event_kind::begin) {
      REQUIRE(e.payload == begins++);
      open = index;
    } else {
      REQUIRE(kind_of(e) == pd::event_kind::end);
      REQUIRE(e.payload == open);
      open = pd::no_begin;
    }
  }
  CHECK(begins == scopes);
  CHECK(waits > 0);
  CHECK(r.dropped() == 0);
  MESSAGE(waits << " waits for room recorded");
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

TEST_CASE("ring: a copy cut anywhere keeps records whole, one-slot and longer ones mixed") {
  pd::set_overflow_policy(proftrace::overflow_policy::drop);
  const std::uint64_t words[8] = {1, 2, 3, 0, 4, 5, 6, 0};
  for (std::size_t room = 3; room <= 9; ++room) {
    CAPTURE(room);
    pd::ring r(64);
    std::size_t pushed = 0;
    for (int i = 0; i < 18; ++i) {  // records of 1, 2 and 6 slots (1, 1 and 3 events)
      const auto ticks = static_cast<std::uint64_t>(i);
      if (i % 3 == 0) r.push(ticks, scope, 0, pd::event_kind::begin);
      else if (i % 3 == 1) r.push(ticks, 0, 0, pd::event_kind::instant);
      else r.push_record(ticks, 0, 0, pd::event_kind::shapes, words, 2);
      pushed += i % 3 == 2 ? 3 : 1;
    }
    std::vector<pd::event> buf(room);
    std::size_t first = 0, total = 0;
    std::uint64_t next_ticks = 0;
    for (int round = 0; round < 40 && total < pushed; ++round) {
      const std::size_t n = r.consume(buf.data(), buf.size(), &first);
      for (std::size_t i = 0; i < n;) {
        const pd::event& head = buf[first + i];
        REQUIRE(static_cast<pd::event_kind>(head.kind) != pd::event_kind::extension);
        CHECK(head.ticks == next_ticks++);  // in order, none skipped
        REQUIRE(i + 1 + head.extra <= n);        // whole
        i += 1 + head.extra;
      }
      total += n;
    }
    CHECK(total == pushed);
    CHECK(r.empty());
  }
}

TEST_CASE("ring: the slots a consumer counts for each record are the slots its producer used") {
  pd::set_overflow_policy(proftrace::overflow_policy::drop);
  pd::ring r(64);
  const std::uint64_t base = r.uid() << pd::ring_uid_shift;
  const std::uint64_t stale = base + 1000;  // an index of a former ring with this uid, not reached here
  const std::uint64_t other = (r.uid() + 1) << pd::ring_uid_shift;
  const std::uint64_t words[4] = {77, 0, 0, 0};
  std::vector<std::uint64_t> at;
  at.push_back(r.push(1, scope, 0, pd::event_kind::begin));                       // one slot
  at.push_back(r.push_record(2, scope, 0, pd::event_kind::begin, words, 1));     // step 0 with a CUDA id: four
  at.push_back(r.push(3, scope, at[1], pd::event_kind::end));                    // one
  at.push_back(r.push(4, scope, stale, pd::event_kind::end));                    // no_begin, two
  at.push_back(r.push_record(5, scope, stale, pd::event_kind::end, nullptr, 0));  // the same, out of line
  at.push_back(r.push(6, scope, other, pd::event_kind::end));                    // another ring's begin: two
  at.push_back(r.push(7, scope, 0, pd::event_kind::end));                        // by site: two
  at.push_back(r.push(8, scope, at[0], pd::event_kind::end));                    // one
  at.push_back(r.push(9, scope, 5, pd::event_kind::begin));                      // a payload: two
  CHECK(at[2] == at[1] + 4);
  std::vector<pd::event> buf(64);
  std::size_t first = 0;
  const std::size_t n = r.consume(buf.data(), buf.size(), &first);
  std::uint64_t index = base;
  std::size_t record = 0;
  for (std::size_t i = 0; i < n; i += 1 + buf[i].extra, ++record) {
    CAPTURE(record);
    REQUIRE(record < at.size());
    CHECK(buf[i].ticks == record + 1);
    CHECK(index == at[record]);
    index += pd::ring_slots(buf[i], r.uid());
  }
  CHECK(record == at.size());
  CHECK(index == r.published());
  CHECK(buf[1].extra == 1);
  CHECK(buf[2].ticks == 77);  // the extension's words
  CHECK(buf[3].payload == at[1]);
  CHECK(buf[4].payload == pd::no_begin);
  CHECK(buf[5].payload == pd::no_begin);
  CHECK(buf[6].payload == other);
  CHECK(buf[7].where == scope);  // an end in two slots keeps its site
  CHECK(buf[8].payload == at[0]);
}

TEST_CASE("ring: fuse_leaves hands a begin and the end right after it that names it out as one leaf event") {
  pd::set_overflow_policy(proftrace::overflow_policy::drop);
  for (std::size_t room : {2, 3, 64}) {
    CAPTURE(room);
    pd::ring r(64);
    const std::uint64_t a = r.push(1, scope, 0, pd::event_kind::begin);
    r.push(2, scope, a, pd::event_kind::end);                        // a leaf
    const std::uint64_t outer = r.push(3, scope, 0, pd::event_kind::begin);
    const std::uint64_t inner = r.push(4, scope, 0, pd::event_kind::begin);
    r.push(5, scope, inner, pd::event_kind::end);                    // a leaf inside `outer`
    r.push(6, scope, outer, pd::event_kind::end);                    // names a begin two slots back: not fused
    const std::uint64_t cuda = r.push(7, scope, 5, pd::event_kind::begin);  // a payload: two slots, not fused
    r.push(8, scope, cuda, pd::event_kind::end);
    r.push(9, scope, 0, pd::event_kind::begin);                      // its end not yet pushed: a begin
    std::vector<pd::event> got;
    std::vector<pd::event> buf(room);
    for (int round = 0; round < 20; ++round) {
      std::size_t first = 0;
      const std::size_t n = r.consume(buf.data(), buf.size(), &first, true);
      got.insert(got.end(), buf.begin() + static_cast<std::ptrdiff_t>(first),
                 buf.begin() + static_cast<std::ptrdiff_t>(first + n));
    }
    CHECK(r.empty());
    std::vector<std::tuple<pd::event_kind, std::uint64_t, std::uint64_t>> want = {
        {pd::event_kind::leaf, 1, 2},  {pd::event_kind::begin, 3, 0}, {pd::event_kind::leaf, 4, 5},
        {pd::event_kind::end, 6, outer}, {pd::event_kind::begin, 7, 5}, {pd::event_kind::end, 8, cuda},
        {pd::event_kind::begin, 9, 0}};
    REQUIRE(got.size() == want.size());
    std::uint64_t index = r.uid() << pd::ring_uid_shift;
    for (std::size_t i = 0; i < got.size(); ++i) {
      CAPTURE(i);
      CHECK(kind_of(got[i]) == std::get<0>(want[i]));
      CHECK(got[i].ticks == std::get<1>(want[i]));
      CHECK(got[i].payload == std::get<2>(want[i]));  // a leaf's: its end's ticks
      if (kind_of(got[i]) != pd::event_kind::end) CHECK(got[i].where == scope);
      index += pd::ring_slots(got[i], r.uid());
    }
    CHECK(index == r.published());  // a leaf counts its two slots
  }
}

TEST_CASE("ring: drop_oldest overwrites whole records of every size, and ends still name their begins") {
  pd::set_overflow_policy(proftrace::overflow_policy::drop_oldest);
  pd::ring r(64);
  constexpr std::uint64_t count = 60000;
  const std::uint64_t words[8] = {1, 2, 3, 0, 4, 5, 6, 0};
  std::vector<std::uint64_t> index(count);
  std::atomic<bool> done{false};
  std::thread producer([&] {
    for (std::uint64_t i = 0; i < count; ++i) {  // 1, 1, 2 and 6 slots
      if (i % 4 == 0) index[i] = r.push(i, scope, 0, pd::event_kind::begin);
      else if (i % 4 == 1) index[i] = r.push(i, scope, index[i - 1], pd::event_kind::end);
      else if (i % 4 == 2) index[i] = r.push(i, 0, 0, pd::event_kind::instant);
      else index[i] = r.push_record(i, scope, 0, pd::event_kind::shapes, words, 2);
    }
    done.store(true, std::memory_order_release);
  });
  std::vector<pd::event> all;
  std::vector<pd::event> buf(7);
  for (bool finished = false; !(finished && r.empty());) {
    finished = done.load(std::memory_order_acquire);
    std::size_t first = 0;
    const std::size_t n = r.consume(buf.data(), buf.size(), &first);
    all.insert(all.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  producer.join();
  std::uint64_t seen = 0;
  std::uint64_t last = 0;
  for (std::size_t i = 0; i < all.size(); i += 1 + all[i].extra) {
    const pd::event& e = all[i];
    REQUIRE(kind_of(e) != pd::event_kind::extension);  // a record is never cut
    if (kind_of(e) == pd::event_kind::gap) continue;
    REQUIRE((seen == 0 || e.ticks > last));
    last = e.ticks;
    ++seen;
    const std::uint64_t kinds[4] = {1, 2, 4, 6};  // begin, end, instant, shapes
    REQUIRE(e.kind == kinds[e.ticks % 4]);
    if (kind_of(e) == pd::event_kind::end) CHECK(e.payload == index[e.ticks - 1]);
    if (kind_of(e) == pd::event_kind::begin) CHECK(e.where == scope);
    if (kind_of(e) == pd::event_kind::shapes) {
      REQUIRE(e.extra == 2);
      REQUIRE(i + 2 < all.size());
      CHECK(all[i + 1].ticks == 1);
      CHECK(all[i + 2].payload == 6);
    }
  }
  CHECK(r.overwritten() > 0);
  CHECK(seen + r.overwritten() == count);
  CHECK(last == count - 1);  // the newest record survives
  pd::set_overflow_policy(proftrace::overflow_policy::drop);
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
  test_support::with_flusher_stalled([&] {
    PROF_INSTANT("tick");
    ++written;
  }, [&] {
    for (int i = 0; i < 20000; ++i) {
      PROF_INSTANT("tick");
      ++written;
    }
  });
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
  test_support::with_flusher_stalled([] { PROF_COUNTER("n", 0); }, [] {
    for (int i = 1; i < 20000; ++i) PROF_COUNTER("n", i);
  });
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
  const auto unix_now = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  // The reading between two system clock reads, of the tries the tightest
  // (a loaded machine may preempt the test between two reads).
  std::int64_t before = 0, converted = 0, after = 0;
  for (int i = 0; i < 20; ++i) {
    const std::int64_t b = unix_now(), c = cal.to_unix_ns(pd::now_ticks()), a = unix_now();
    if (i == 0 || a - b < after - before) std::tie(before, converted, after) = std::tuple{b, c, a};
  }
  CHECK(converted > before - 2'000'000);  // 2 ms
  CHECK(converted < after + 2'000'000);
  // A 10 ms sleep measures as 10 ms on the converted scale, and no more than
  // the steady clock saw around it.
  const auto s0 = std::chrono::steady_clock::now();
  const auto t0 = pd::now_ticks();
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const auto t1 = pd::now_ticks();
  const auto s1 = std::chrono::steady_clock::now();
  const double ms = static_cast<double>(cal.to_unix_ns(t1) - cal.to_unix_ns(t0)) / 1e6;
  const double around_ms = std::chrono::duration<double, std::milli>(s1 - s0).count();
  CHECK(ms >= 9.5);
  CHECK(ms <= around_ms * 1.05 + 0.5);  // the calibration is good to far better than 5%
#if PROFTRACE_DETAIL_HAS_TSC
  MESSAGE("time source: " << (pd::clock_uses_tsc.load() ? "invariant TSC" : "CLOCK_MONOTONIC_RAW")
                          << ", ns per tick " << cal.ns_per_tick);
#endif
}

TEST_CASE("clock: the portable fallback counts nanoseconds") {
  const auto s0 = std::chrono::steady_clock::now();
  const auto a = pd::fallback_clock_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const auto b = pd::fallback_clock_ns();
  const auto s1 = std::chrono::steady_clock::now();
  CHECK(b - a >= 2'000'000);
  CHECK(static_cast<double>(b - a) <= static_cast<double>((s1 - s0).count()) * 1.01 + 50'000);
}

namespace {

const pd::site fast_path_site{"fast path", "test", __FILE__, __LINE__, pd::category::user_annotation};

}  // namespace

TEST_CASE("ring: the short fast path writes a plain begin and its end, and leaves every other end to the full path") {
  pd::set_overflow_policy(proftrace::overflow_policy::drop);
  pd::ring r(64);
  const std::uint64_t where = reinterpret_cast<std::uintptr_t>(&fast_path_site);
  int full = 0;
  const std::uint64_t begin = r.push_short_begin_or(where, [&] {
    ++full;
    return r.push(r.now(), where, 0, pd::event_kind::begin);
  });
  if (!pd::clock_uses_tsc.load()) {  // without the TSC every push takes the full path
    CHECK(full == 1);
    return;
  }
  CHECK(full == 0);
  CHECK(pd::ring_uid_of(begin) == r.uid());
  r.push_short_end_or(begin, [&] { ++full; });
  CHECK(full == 0);
  // Ends that name no begin of this ring: another ring's, a dropped one's
  // (no_begin), a step annotation's (0, cancel_end), one not reached yet.
  pd::ring other(64);
  const std::uint64_t foreign = other.push(other.now(), where, 0, pd::event_kind::begin);
  for (const std::uint64_t token : {foreign, pd::no_begin, pd::cancel_end, std::uint64_t{0}, r.published() + 3}) {
    const int before = full;
    r.push_short_end_or(token, [&] { ++full; });
    CHECK(full == before + 1);
  }
  const auto events = test_support::consume_all(r);
  REQUIRE(events.size() == 2);
  CHECK(kind_of(events[0]) == pd::event_kind::begin);
  CHECK(events[0].where == where);
  CHECK(kind_of(events[1]) == pd::event_kind::end);
  CHECK(events[1].payload == begin);
  CHECK(events[1].ticks >= events[0].ticks);
}

TEST_CASE("ring: the fast path leaves at the ring's limit, and with the full path every push is kept or counted") {
  pd::set_overflow_policy(proftrace::overflow_policy::drop);
  pd::ring r(64);
  const std::uint64_t where = reinterpret_cast<std::uintptr_t>(&fast_path_site);
  const std::uint64_t pushes = 1000;  // far more than the ring's 128 slots: no consumer runs
  std::uint64_t full = 0;
  for (std::uint64_t i = 0; i < pushes; ++i) {
    r.push_short_begin_or(where, [&] {
      ++full;
      return r.push(r.now(), where, 0, pd::event_kind::begin);
    });
  }
  CHECK(full > 0);
  const auto events = test_support::consume_all(r);
  CHECK(events.size() + r.dropped() == pushes);
  CHECK(r.dropped() > 0);
  for (const pd::event& e : events) {
    CHECK(kind_of(e) == pd::event_kind::begin);
    CHECK(e.where == where);
  }
}
