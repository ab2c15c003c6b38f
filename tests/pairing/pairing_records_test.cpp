// Pairing on its own: raw ring records in, finished scopes out, with no
// ring, flusher, session or file — a test sink stands in for the trace
// window and records what pairing delivers. One tick is one nanosecond.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "pairing/pairing.hpp"
#include "recording/record_layout.hpp"
#include "recording/registry.hpp"
#include "proftrace/detail/recorder.hpp"

namespace pt = proftrace::detail;

namespace {

const pt::site site_a{"a", "", "f.cpp", 1, pt::category::user_annotation};
const pt::site site_b{"b", "", "f.cpp", 2, pt::category::user_annotation};

struct finished {
  std::string name;
  std::int64_t tid, begin, end, self;
  std::size_t depth;
  bool truncated;
  std::string category;
};
struct finished_async {
  std::string name;
  std::int64_t begin, end, begin_tid, end_tid;
};
struct seen_memory {
  std::int64_t tid, ns, bytes, total;
  bool scoped;
};

struct test_sink {
  std::uint64_t start_ticks = 0;
  std::uint64_t id = 1;
  std::uint64_t next_external_id = 1;
  proftrace::loss_counts losses;
  pt::pairing_counts counts;
  std::vector<finished> scopes;
  std::vector<finished_async> asyncs;
  std::vector<seen_memory> memories;
  std::vector<pt::open_scope> closed;  // every scope as pairing handed it over

  std::int64_t to_ns(std::uint64_t ticks) const { return static_cast<std::int64_t>(ticks); }
  auto ns_of_ticks() const {
    return [this](std::uint64_t ticks) { return to_ns(ticks); };
  }
  bool record_shapes() const { return true; }
  void thread_seen(pt::thread_state& ts) { ts.window_seen = id; }
  void scope(pt::thread_state& ts, const pt::open_scope& s, std::int64_t end_ns) {
    scopes.push_back({s.where->name, ts.tid, s.begin_ns, end_ns, end_ns - s.begin_ns - s.child_ns, ts.stack.size(),
                      s.truncated, pt::category_name(*s.where)});
    closed.push_back(s);
  }
  void leaves(pt::thread_state& ts, std::span<const pt::closed_leaf> run) {
    ++leaf_runs;
    for (const pt::closed_leaf& l : run) scope(ts, pt::as_leaf(ts, l), l.end_ns);
  }
  int leaf_runs = 0;
  void async(const pt::open_async& a, std::uint64_t, std::int64_t end_ns, std::int64_t end_tid) {
    asyncs.push_back({a.where->name, a.begin_ns, end_ns, a.tid, end_tid});
  }
  void withdrawn(const pt::thread_state&, const pt::open_scope&, std::int64_t) { ++withdrawn_scopes; }
  int withdrawn_scopes = 0;
  void memory(const pt::thread_state&, const pt::memory_event& m, bool scoped) {
    memories.push_back({m.tid, m.ns, m.resolved->bytes, m.resolved->total_allocated, scoped});
  }
  std::int64_t unscoped_bytes = 0, unscoped_events = 0;
  void unscoped_memory(const std::int64_t (&bytes)[2], std::int64_t events) {
    unscoped_bytes += bytes[0] + bytes[1];
    unscoped_events += events;
  }
  void instant(const pt::thread_state&, const pt::site&, std::int64_t) {}
  void counter(const pt::thread_state&, const pt::site&, std::int64_t, double) {}
};

// A thread whose ring has uid `uid`: records get indices uid << 44 | n.
pt::thread_state thread_of(std::int64_t tid, std::uint64_t uid) {
  pt::thread_state ts;
  ts.tid = tid;
  ts.uid = uid;
  ts.next_index = uid << pt::ring_uid_shift;
  return ts;
}
std::uint64_t index_of(std::uint64_t uid, std::uint64_t n) { return uid << pt::ring_uid_shift | n; }

pt::event begin(std::uint64_t t, const pt::site& s) {
  return {t, reinterpret_cast<std::uintptr_t>(&s), 0, static_cast<std::uint32_t>(pt::event_kind::begin), 0};
}
pt::event end(std::uint64_t t, const pt::site& s, std::uint64_t begin_index) {
  return {t, reinterpret_cast<std::uintptr_t>(&s), begin_index, static_cast<std::uint32_t>(pt::event_kind::end), 0};
}

// The same records as consume(..., fuse_leaves) hands them out: a plain
// begin followed at once by the end that names it is one `leaf` event. (A
// gap here is one the producer wrote: two slots.)
std::vector<pt::event> fused(const std::vector<pt::event>& events, std::uint64_t uid) {
  std::vector<pt::event> out;
  std::uint64_t index = uid << pt::ring_uid_shift;
  for (std::size_t i = 0; i < events.size();) {
    const pt::event& e = events[i];
    const auto kind = static_cast<pt::event_kind>(e.kind);
    if (kind == pt::event_kind::begin && e.payload == 0 && i + 1 < events.size() &&
        static_cast<pt::event_kind>(events[i + 1].kind) == pt::event_kind::end && events[i + 1].payload == index) {
      out.push_back({e.ticks, e.where, events[i + 1].ticks, static_cast<std::uint32_t>(pt::event_kind::leaf), 0});
      index += 2;
      i += 2;
      continue;
    }
    index += kind == pt::event_kind::gap ? 2 : pt::ring_slots(e, uid);
    const std::size_t length = pt::record_length(e);
    out.insert(out.end(), events.begin() + static_cast<std::ptrdiff_t>(i),
               events.begin() + static_cast<std::ptrdiff_t>(i + length));
    i += length;
  }
  return out;
}

struct fixture {
  pt::memory_resolver resolver;
  pt::pairing<test_sink> pairs{resolver};
  test_sink sink;
  // As the flusher does: one chunk, leaf scopes in one step.
  void feed(pt::thread_state& ts, const std::vector<pt::event>& events) {
    pairs.process_all(ts, events.data(), events.size(), &sink);
  }
  // Record by record, every scope through the stack.
  void feed_one_by_one(pt::thread_state& ts, const std::vector<pt::event>& events) {
    for (std::size_t i = 0; i < events.size(); i += pt::record_length(events[i])) pairs.process(ts, &events[i], &sink);
  }
};

// Threads 1 and 2, their rings' uids 1 and 2.
struct two_threads : fixture {
  pt::thread_state t1 = thread_of(1, 1), t2 = thread_of(2, 2);
  two_threads() {
    pairs.attach(t1);
    pairs.attach(t2);
  }
};

}  // namespace

TEST_CASE("pairing: nested scopes close innermost first, with self time and depth") {
  fixture f;
  auto ts = thread_of(7, 1);
  f.pairs.attach(ts);
  f.feed(ts, {begin(10, site_a), begin(20, site_b), end(30, site_b, index_of(1, 1)), end(50, site_a, index_of(1, 0))});
  REQUIRE(f.sink.scopes.size() == 2);
  CHECK(f.sink.scopes[0].name == "b");
  CHECK(f.sink.scopes[0].depth == 1);
  CHECK(f.sink.scopes[0].begin == 20);
  CHECK(f.sink.scopes[0].end == 30);
  CHECK(f.sink.scopes[1].name == "a");
  CHECK(f.sink.scopes[1].depth == 0);
  CHECK(f.sink.scopes[1].self == 30);
  CHECK(f.sink.losses.total() == 0);
  CHECK(ts.stack.empty());
}

TEST_CASE("pairing: a gap freezes what is open; a scope whose end was lost there closes truncated") {
  fixture f;
  auto ts = thread_of(7, 1);
  f.pairs.attach(ts);
  // b's end was dropped with one other record: the producer's gap record took slots 2 and 3.
  const pt::event gap{25, 2, 0, static_cast<std::uint32_t>(pt::event_kind::gap), 0};
  f.feed(ts, {begin(10, site_a), begin(20, site_b), gap, end(60, site_a, index_of(1, 0))});
  REQUIRE(f.sink.scopes.size() == 2);
  CHECK(f.sink.scopes[0].name == "b");
  CHECK(f.sink.scopes[0].truncated);
  CHECK(f.sink.scopes[0].end == 20);  // the last moment it was seen open
  CHECK(f.sink.scopes[1].name == "a");
  CHECK_FALSE(f.sink.scopes[1].truncated);
  CHECK(f.sink.scopes[1].end == 60);
  CHECK(f.sink.counts.truncated_scopes == 1);
}

TEST_CASE("pairing: an end with no begin in the trace is counted as unpaired, never matched to another scope") {
  fixture f;
  auto ts = thread_of(7, 1);
  f.pairs.attach(ts);
  f.feed(ts, {begin(10, site_a), end(20, site_a, index_of(1, 99)), end(30, site_a, index_of(1, 0))});
  REQUIRE(f.sink.scopes.size() == 1);
  CHECK(f.sink.scopes[0].end == 30);
  CHECK(f.sink.losses.unpaired == 1);
}

TEST_CASE("pairing: a scope that ends on another thread becomes an async range, in either drain order") {
  for (const bool ending_thread_first : {false, true}) {
    CAPTURE(ending_thread_first);
    two_threads f;
    auto &t1 = f.t1, &t2 = f.t2;
    const std::vector<pt::event> on_1 = {begin(10, site_a)};
    const std::vector<pt::event> on_2 = {end(40, site_a, index_of(1, 0))};
    if (ending_thread_first) {
      f.feed(t2, on_2);
      f.feed(t1, on_1);
    } else {
      f.feed(t1, on_1);
      f.feed(t2, on_2);
    }
    REQUIRE(f.sink.asyncs.size() == 1);
    CHECK(f.sink.asyncs[0].name == "a");
    CHECK(f.sink.asyncs[0].begin == 10);
    CHECK(f.sink.asyncs[0].end == 40);
    CHECK(f.sink.asyncs[0].begin_tid == 1);
    CHECK(f.sink.asyncs[0].end_tid == 2);
    CHECK(f.sink.scopes.empty());
    CHECK(f.sink.counts.moved_scopes == 1);
    CHECK(t1.stack.empty());
  }
}

TEST_CASE("pairing: a scope moved to another thread whose end may have been lost there closes truncated, where last known open") {
  const pt::site spawn{"spawn", "", "f.cpp", 7, pt::category::user_annotation};
  const pt::site moved{"moved", "", "f.cpp", 8, pt::category::user_annotation};
  for (const bool lost : {false, true}) {
    CAPTURE(lost);
    two_threads f;
    // Thread 1: spawn { moved ... } spawn ends at 100 with moved still open: moved goes on elsewhere.
    f.feed(f.t1, {begin(10, spawn), begin(20, moved), end(100, spawn, index_of(1, 0))});
    // Thread 2: a leaf (slots 0-1), then, if lost, a gap: two records (moved's end among them) dropped.
    std::vector<pt::event> on_2 = {begin(30, site_b), end(35, site_b, index_of(2, 0))};
    if (lost) on_2.push_back({60, 2, 0, static_cast<std::uint32_t>(pt::event_kind::gap), 0});
    f.feed(f.t2, on_2);
    f.pairs.clip_and_carry_asyncs(&f.sink, 200, nullptr, 0);
    REQUIRE(f.sink.asyncs.size() == 1);
    CHECK(f.sink.asyncs[0].name == "moved");
    CHECK(f.sink.asyncs[0].begin == 20);
    CHECK(f.sink.asyncs[0].end == (lost ? 35 : 200));  // lost: thread 2's last record before its gap
    CHECK(f.sink.counts.truncated_scopes == (lost ? 1 : 0));
  }
}

TEST_CASE("pairing: a gone thread's open scopes end at its exit when the window closes, unless another thread ends them") {
  for (const bool ended_elsewhere : {false, true}) {
    CAPTURE(ended_elsewhere);
    two_threads f;
    f.feed(f.t1, {begin(10, site_a), begin(20, site_b)});
    f.t1.last_ticks = 50;  // the thread's exit
    REQUIRE(f.pairs.thread_gone(f.t1, &f.sink));  // kept: b or a may still end elsewhere
    CHECK(f.sink.scopes.empty());
    if (ended_elsewhere) f.feed(f.t2, {end(70, site_b, index_of(1, 1))});
    f.pairs.close_at_thread_exit(f.t1, &f.sink);
    CHECK(f.sink.counts.truncated_scopes == 0);
    CHECK(f.sink.losses.unpaired == 0);
    CHECK(f.sink.counts.moved_scopes == (ended_elsewhere ? 1 : 0));
    CHECK(f.sink.counts.closed_at_thread_exit == (ended_elsewhere ? 1 : 2));
    REQUIRE(f.sink.scopes.size() == (ended_elsewhere ? 1u : 2u));
    CHECK(f.sink.scopes.back().name == "a");
    CHECK(f.sink.scopes.back().end == 50);
    CHECK_FALSE(f.sink.scopes.back().truncated);
    // An end that comes after the window closed is counted as such, not lost.
    f.feed(f.t2, {end(90, site_a, index_of(1, 0))});
    CHECK(f.sink.losses.unpaired == 0);
    CHECK(f.sink.counts.ended_after_their_session == 1);
  }
}

TEST_CASE("pairing: what ran inside a scope that ended on another thread is its parent's child time, in either drain order") {
  // spawn { moved { before[20, 1020] } ... } on thread 1; moved ends on thread 2.
  const pt::site spawn{"spawn", "", "f.cpp", 7, pt::category::user_annotation};
  const pt::site moved{"moved", "", "f.cpp", 8, pt::category::user_annotation};
  const pt::site before{"before", "", "f.cpp", 9, pt::category::user_annotation};
  for (const bool ending_thread_first : {false, true}) {
    CAPTURE(ending_thread_first);
    two_threads f;
    auto &t1 = f.t1, &t2 = f.t2;
    const std::vector<pt::event> on_1 = {begin(10, spawn), begin(11, moved), begin(20, before),
                                         end(1020, before, index_of(1, 2)), end(1030, spawn, index_of(1, 0))};
    const std::vector<pt::event> on_2 = {end(1025, moved, index_of(1, 1))};
    if (ending_thread_first) {
      f.feed(t1, {on_1.begin(), on_1.begin() + 4});  // the end comes while spawn is open
      f.feed(t2, on_2);
      f.feed(t1, {on_1.begin() + 4, on_1.end()});
    } else {
      f.feed(t1, on_1);  // spawn's end gives moved up first
      f.feed(t2, on_2);
    }
    REQUIRE(f.sink.scopes.size() == 2);
    CHECK(f.sink.scopes[0].name == "before");
    CHECK(f.sink.scopes[1].name == "spawn");
    CHECK(f.sink.scopes[1].self == 1020 - 1000);  // the trace's nesting: before is spawn's child
    REQUIRE(f.sink.asyncs.size() == 1);
    CHECK(f.sink.asyncs[0].name == "moved");
  }
}

TEST_CASE("pairing: memory resolved in time order across threads, whichever ring is drained first") {
  fixture f;
  auto t1 = thread_of(1, 1);
  auto t2 = thread_of(2, 2);
  const auto kind = [](pt::event_kind k) { return static_cast<std::uint32_t>(k); };
  // Thread 1 allocates 64 bytes at 0x100 inside a; thread 2 frees it later.
  const std::vector<pt::event> on_1 = {begin(5, site_a), {10, 0x100, pt::memory_payload(64, -1), kind(pt::event_kind::alloc), 0},
                                       end(15, site_a, index_of(1, 0))};
  const std::vector<pt::event> on_2 = {{20, 0x100, pt::memory_payload(0, -1), kind(pt::event_kind::free), 0}};
  // As the flusher's memory drain does: note every memory event, resolve in time order, then pair.
  for (auto* batch : {&on_2, &on_1})
    for (const pt::event& e : *batch)
      if (pt::is_memory(static_cast<pt::event_kind>(e.kind)))
        f.resolver.note(e.ticks, &e, &(batch == &on_1 ? t1 : t2).resolved.emplace_back());
  f.resolver.resolve_noted(false, 0);
  f.feed(t2, on_2);  // the free's ring first
  f.feed(t1, on_1);
  REQUIRE(f.sink.memories.size() == 2);
  CHECK(f.sink.memories[0].bytes == -64);  // the free, known although its ring was drained first
  CHECK(f.sink.memories[0].total == 0);
  CHECK_FALSE(f.sink.memories[0].scoped);
  CHECK(f.sink.memories[1].bytes == 64);
  CHECK(f.sink.memories[1].total == 64);
  CHECK(f.sink.memories[1].scoped);
  CHECK(f.sink.counts.unknown_frees == 0);
}

TEST_CASE("pairing: a producer's wait is a child span, out of the open scope's self time") {
  fixture f;
  auto ts = thread_of(7, 1);
  f.pairs.attach(ts);
  const pt::event wait{50, reinterpret_cast<std::uintptr_t>(&pt::ring_wait_site), 20,
                       static_cast<std::uint32_t>(pt::event_kind::complete), 0};
  f.feed(ts, {begin(10, site_a), wait, end(60, site_a, index_of(1, 0))});
  REQUIRE(f.sink.scopes.size() == 2);
  CHECK(f.sink.scopes[0].name == std::string("ring full: waiting"));
  CHECK(f.sink.scopes[0].category == "proftrace");
  CHECK(f.sink.scopes[0].depth == 1);
  CHECK(f.sink.scopes[0].begin == 20);
  CHECK(f.sink.scopes[0].end == 50);
  CHECK(f.sink.scopes[1].name == "a");
  CHECK(f.sink.scopes[1].self == 50 - 30);
}

namespace {
// A record with text in its extension slots, as the recorder writes it.
void push_text_record(std::vector<pt::event>& out, pt::event head, std::string_view text) {
  std::uint64_t words[pt::max_text_words];
  const std::uint32_t slots = pt::encode_text(words, text);
  head.extra = slots;
  out.push_back(head);
  for (std::uint32_t i = 0; i < slots; ++i) {
    pt::event e;
    std::memcpy(&e, words + i * pt::words_per_event, sizeof e);
    e.kind = static_cast<std::uint32_t>(pt::event_kind::extension);
    e.extra = 0;
    out.push_back(e);
  }
}
// The ring index the record at `position` of `events` (from the ring's
// first slot on) would have: records take 16-byte slots (pt::ring_slots).
std::uint64_t ring_index_at(const std::vector<pt::event>& events, std::uint64_t uid, std::size_t position) {
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < position; i += pt::record_length(events[i])) n += pt::ring_slots(events[i], uid);
  return index_of(uid, n);
}
pt::event dynamic_begin(std::uint64_t t, const pt::site& s) {
  return {t, reinterpret_cast<std::uintptr_t>(&s), 0, static_cast<std::uint32_t>(pt::event_kind::dynamic_begin), 0};
}
pt::event arg(std::uint64_t t, const pt::site& key, pt::arg_type type, std::uint64_t bits) {
  return {t, pt::encode_arg_where(&key, type), bits, static_cast<std::uint32_t>(pt::event_kind::arg), 0};
}
const pt::site key_n{"n", "", "f.cpp", 3, pt::category::user_annotation};
const pt::site key_x{"x", "", "f.cpp", 4, pt::category::user_annotation};
const pt::site key_s{"s", "", "f.cpp", 5, pt::category::user_annotation};
}  // namespace

TEST_CASE("pairing: a dynamic begin's name and a scope's args become fields of its open scope") {
  fixture f;
  auto ts = thread_of(7, 1);
  f.pairs.attach(ts);
  std::vector<pt::event> events;
  std::string name = "layer ";
  name += "17";
  push_text_record(events, dynamic_begin(10, site_a), name);
  const std::uint64_t outer = 0;
  double x = 2.5;
  std::uint64_t xbits;
  std::memcpy(&xbits, &x, sizeof xbits);
  events.push_back(arg(11, key_n, pt::arg_type::integer, static_cast<std::uint64_t>(std::int64_t{-42})));
  events.push_back(arg(12, key_x, pt::arg_type::floating, xbits));
  push_text_record(events, arg(13, key_s, pt::arg_type::string, 0), "value with \"quotes\"");
  const std::uint64_t inner = ring_index_at(events, 1, events.size());
  events.push_back(begin(20, site_b));
  events.push_back(end(30, site_b, inner));
  events.push_back(end(50, site_a, index_of(1, outer)));
  events.push_back(arg(60, key_n, pt::arg_type::integer, 1));  // no scope open: dropped, counted
  f.feed(ts, events);
  REQUIRE(f.sink.closed.size() == 2);
  const pt::open_scope& b = f.sink.closed[0];
  CHECK(b.dynamic_name.empty());
  CHECK(b.args.empty());
  const pt::open_scope& a = f.sink.closed[1];
  CHECK(a.dynamic_name == "layer 17");
  CHECK(f.sink.scopes[1].self == 30);
  REQUIRE(a.args.size() == 3);
  CHECK(std::string(a.args[0].key) == "n");
  CHECK(a.args[0].type == pt::arg_type::integer);
  CHECK(a.args[0].integer == -42);
  CHECK(std::string(a.args[1].key) == "x");
  CHECK(a.args[1].type == pt::arg_type::floating);
  CHECK(a.args[1].floating == 2.5);
  CHECK(a.args[2].type == pt::arg_type::string);
  CHECK(a.args[2].text == "value with \"quotes\"");
  CHECK(f.sink.counts.dropped_args == 1);
  CHECK(f.sink.counts.truncated_names == 0);
  CHECK(f.sink.losses.total() == 0);
}

TEST_CASE("pairing: a name longer than the maximum is cut on a UTF-8 boundary and counted") {
  // 255 ASCII bytes, then a 3-byte character across the 256-byte limit.
  std::string name(pt::max_text_bytes - 1, 'a');
  name += "\xE2\x82\xAC";  // U+20AC
  name += "tail";
  CHECK(pt::text_fit(name) == pt::max_text_bytes - 1);
  CHECK(pt::text_fit(std::string(pt::max_text_bytes, 'b')) == pt::max_text_bytes);
  fixture f;
  auto ts = thread_of(7, 1);
  f.pairs.attach(ts);
  std::vector<pt::event> events;
  push_text_record(events, dynamic_begin(10, site_a), name);
  CHECK(events.size() == 1 + pt::max_text_slots);
  push_text_record(events, arg(11, key_s, pt::arg_type::string, 0), std::string(300, 'z'));
  events.push_back(end(50, site_a, index_of(1, 0)));
  f.feed(ts, events);
  REQUIRE(f.sink.closed.size() == 1);
  CHECK(f.sink.closed[0].dynamic_name == std::string(pt::max_text_bytes - 1, 'a'));
  REQUIRE(f.sink.closed[0].args.size() == 1);
  CHECK(f.sink.closed[0].args[0].text == std::string(pt::max_text_bytes, 'z'));
  CHECK(f.sink.counts.truncated_names == 2);
  // An empty name is a record with one slot and reads back empty.
  std::vector<pt::event> empty;
  push_text_record(empty, dynamic_begin(10, site_a), "");
  CHECK(empty.size() == 2);
}

TEST_CASE("pairing: after a loss, an arg or a FLOP count is counted, never given to a scope it may not belong to") {
  fixture f;
  auto ts = thread_of(7, 1);
  f.pairs.attach(ts);
  // a's begin, then a gap (the producer dropped b's begin), then b's arg and
  // FLOPs, then a later scope c whose arg is kept, then a's end.
  const pt::event gap{25, 1, 0, static_cast<std::uint32_t>(pt::event_kind::gap), 0};
  const pt::event flops{27, 0, 100, static_cast<std::uint32_t>(pt::event_kind::flops), 0};
  const pt::site site_c{"c", "", "f.cpp", 3, pt::category::cpu_op};
  // Slots: a 0, the gap 1-2, the arg 3-4, the FLOPs 5-6, c 7, c's arg 8-9, c's end 10, a's end 11.
  f.feed(ts, {begin(10, site_a), gap, arg(26, key_n, pt::arg_type::integer, 5), flops, begin(30, site_c),
              arg(31, key_n, pt::arg_type::integer, 6), end(40, site_c, index_of(1, 7)), end(50, site_a, index_of(1, 0))});
  REQUIRE(f.sink.closed.size() == 2);
  const pt::open_scope& c = f.sink.closed[0];
  REQUIRE(c.args.size() == 1);
  CHECK(c.args[0].integer == 6);
  const pt::open_scope& a = f.sink.closed[1];
  CHECK(a.args.empty());
  CHECK(a.flops == 0);
  CHECK(f.sink.losses.unpaired == 2);
}

TEST_CASE("pairing: an allocation after a loss is the frozen scope's only if its end comes; else it goes outward") {
  const pt::event gap{25, 1, 0, static_cast<std::uint32_t>(pt::event_kind::gap), 0};
  const pt::event alloc{26, 0x100, pt::memory_payload(64, -1), static_cast<std::uint32_t>(pt::event_kind::alloc), 0};
  SUBCASE("the scope's end comes: the bytes were its own") {
    fixture f;
    auto ts = thread_of(7, 1);
    f.pairs.attach(ts);
    // a 0, b 1, the gap 2-3, the allocation 4-5, b's end 6, a's end 7.
    f.feed(ts, {begin(10, site_a), begin(20, site_b), gap, alloc, end(30, site_b, index_of(1, 1)),
                end(50, site_a, index_of(1, 0))});
    REQUIRE(f.sink.closed.size() == 2);
    CHECK(f.sink.closed[0].mem_self[0] == 64);
    CHECK(f.sink.closed[1].mem_self[0] == 0);
    CHECK(f.sink.closed[1].mem_child[0] == 64);
  }
  SUBCASE("its end was lost: the bytes are the enclosing scope's, whose end comes") {
    fixture f;
    auto ts = thread_of(7, 1);
    f.pairs.attach(ts);
    f.feed(ts, {begin(10, site_a), begin(20, site_b), gap, alloc, end(50, site_a, index_of(1, 0))});
    REQUIRE(f.sink.closed.size() == 2);
    CHECK(f.sink.closed[0].truncated);
    CHECK(f.sink.closed[0].mem_self[0] == 0);
    CHECK(f.sink.closed[1].mem_self[0] == 64);
    CHECK(f.sink.unscoped_events == 0);
  }
  SUBCASE("every end around it was lost: the [memory] row") {
    fixture f;
    auto ts = thread_of(7, 1);
    f.pairs.attach(ts);
    f.feed(ts, {begin(10, site_a), begin(20, site_b), gap, alloc});
    CHECK_FALSE(f.pairs.thread_gone(ts, &f.sink));  // all frozen: closed truncated at once
    REQUIRE(f.sink.closed.size() == 2);
    CHECK(f.sink.closed[0].mem_self[0] == 0);
    CHECK(f.sink.closed[1].mem_self[0] == 0);
    CHECK(f.sink.closed[1].mem_child[0] == 0);
    CHECK(f.sink.unscoped_bytes == 64);
    CHECK(f.sink.unscoped_events == 1);
  }
}

TEST_CASE("pairing: under PROF_STEP, profile::step()'s unwritten annotation takes no allocation, arg or FLOP count") {
  fixture f;
  f.pairs.discard_api_steps = true;
  auto ts = thread_of(7, 1);
  f.pairs.attach(ts);
  const pt::event alloc{12, 0x100, pt::memory_payload(64, -1), static_cast<std::uint32_t>(pt::event_kind::alloc), 0};
  const pt::event flops{13, 0, 100, static_cast<std::uint32_t>(pt::event_kind::flops), 0};
  const pt::event alloc_in_a{21, 0x200, pt::memory_payload(8, -1), static_cast<std::uint32_t>(pt::event_kind::alloc), 0};
  // The annotation (slot 0) stays open; outside a: an allocation (slots 1-2), a FLOP count (3-4), an arg
  // (5-6); then a (7) with an allocation (8-9) and its end (10).
  f.feed(ts, {begin(10, pt::api_step_site), alloc, flops, arg(14, key_n, pt::arg_type::integer, 1), begin(20, site_a),
              alloc_in_a, end(30, site_a, index_of(1, 7))});
  REQUIRE(f.sink.memories.size() == 2);
  CHECK_FALSE(f.sink.memories[0].scoped);  // torch's top-level [memory] row
  CHECK(f.sink.memories[1].scoped);
  CHECK(f.sink.counts.unscoped_flop_estimates == 1);
  CHECK(f.sink.counts.dropped_args == 1);
  REQUIRE(f.sink.closed.size() == 1);
  CHECK(f.sink.closed[0].mem_self[0] == 8);
}

TEST_CASE("pairing: a PROF_STEP step's begin tells pairing to step over profile::step()'s annotation") {
  fixture f;
  auto ts = thread_of(7, 1);
  f.pairs.attach(ts);
  const pt::event alloc{22, 0x100, pt::memory_payload(64, -1), static_cast<std::uint32_t>(pt::event_kind::alloc), 0};
  // The annotation (slot 0), PROF_STEP's step 0 (slot 1: its payload, its number, is 0), its end (2), then
  // an allocation outside every scope but the annotation.
  f.feed(ts, {begin(10, pt::api_step_site), begin(11, pt::step_site), end(20, pt::step_site, index_of(1, 1)), alloc});
  CHECK(f.pairs.discard_api_steps);
  REQUIRE(f.sink.memories.size() == 1);
  CHECK_FALSE(f.sink.memories[0].scoped);
}

TEST_CASE("pairing: a begin with payload 0 and an extension (step 0 with a CUDA id) counts its four slots") {
  const pt::site step{"ProfilerStep#0", "", "f.cpp", 9, pt::category::step};
  fixture f;
  auto ts = thread_of(7, 1);
  f.pairs.attach(ts);
  const std::uint64_t cuda_id = pt::cuda_external_id_marker | 42;
  pt::event ext{cuda_id, 0, 0, static_cast<std::uint32_t>(pt::event_kind::extension), 0};
  pt::event head = begin(10, step);
  head.extra = 1;
  // The step's begin takes slots 0 to 3, a's begin slot 4.
  f.feed(ts, {head, ext, begin(11, site_a), end(12, site_a, index_of(1, 4)), end(20, step, index_of(1, 0))});
  REQUIRE(f.sink.closed.size() == 2);
  CHECK(f.sink.scopes[0].name == "a");
  CHECK(f.sink.closed[1].external_id == cuda_id);
  CHECK(f.sink.losses.total() == 0);
  CHECK(ts.stack.empty());
}

TEST_CASE("pairing: leaf scopes closed in one step give what the stack gives, around gaps, nesting and chunk cuts") {
  // a { b{} b{} c{ b{} } } then a gap that freezes an open a, a leaf b
  // under it that ends after the freeze, and a's end: leaves, parents,
  // a frozen parent and a late child all appear.
  const pt::site site_c{"c", "", "f.cpp", 3, pt::category::cpu_op};
  const pt::event gap{95, 1, 0, static_cast<std::uint32_t>(pt::event_kind::gap), 0};
  const std::vector<pt::event> events = {
      begin(10, site_a),  begin(11, site_b), end(15, site_b, index_of(1, 1)), begin(16, site_b),
      end(20, site_b, index_of(1, 3)), begin(21, site_c), begin(22, site_b), end(30, site_b, index_of(1, 6)),
      end(40, site_c, index_of(1, 5)), end(50, site_a, index_of(1, 0)),
      begin(60, site_a), gap, begin(100, site_b), end(120, site_b, index_of(1, 13)), end(130, site_a, index_of(1, 10))};
  // (One slot each but the gap's two: b's begin is at 13.)
  const auto run = [&](int how) {
    fixture f;
    auto ts = thread_of(7, 1);
    f.pairs.attach(ts);
    if (how == 0) f.feed_one_by_one(ts, events);
    if (how == 1) f.feed(ts, events);
    if (how == 2) {  // cut between a begin and its end: that pair goes through the stack
      f.feed(ts, {events.begin(), events.begin() + 4});
      f.feed(ts, {events.begin() + 4, events.end()});
    }
    if (how == 3) f.feed(ts, fused(events, 1));  // as the flusher's streaming drain: runs of leaf events
    if (how == 4) f.feed_one_by_one(ts, fused(events, 1));  // each leaf event as its begin and end
    CHECK(ts.stack.empty());
    return f;
  };
  CHECK(fused(events, 1).size() == events.size() - 4);  // four leaves; the last, under the frozen a, closes through the stack
  const fixture by_stack = run(0);
  REQUIRE(by_stack.sink.scopes.size() == 7);
  CHECK(by_stack.sink.scopes[0].self == 4);  // the first b
  CHECK(by_stack.sink.scopes[3].self == 11);  // c: 19 less its child's 8
  CHECK(by_stack.sink.scopes[4].self == 40 - 4 - 4 - 19);  // a
  for (int how = 1; how <= 4; ++how) {
    CAPTURE(how);
    const fixture f = run(how);
    REQUIRE(f.sink.scopes.size() == by_stack.sink.scopes.size());
    for (std::size_t i = 0; i < f.sink.scopes.size(); ++i) {
      CAPTURE(i);
      const finished& got = f.sink.scopes[i];
      const finished& want = by_stack.sink.scopes[i];
      CHECK(got.name == want.name);
      CHECK(got.begin == want.begin);
      CHECK(got.end == want.end);
      CHECK(got.self == want.self);
      CHECK(got.depth == want.depth);
      CHECK(got.truncated == want.truncated);
      CHECK(f.sink.closed[i].external_id == by_stack.sink.closed[i].external_id);
    }
    CHECK(f.sink.losses.total() == by_stack.sink.losses.total());
    CHECK(f.sink.counts.truncated_scopes == by_stack.sink.counts.truncated_scopes);
  }
}

// A sink that takes runs of leaves as each site's totals (as a profile-only
// window does), or, with `totals` off, one by one.
struct totals_sink : test_sink {
  bool totals = true;
  std::vector<pt::leaf_totals> runs;
  bool takes_leaf_totals(const pt::thread_state&) const { return totals; }
  using test_sink::leaves;
  void leaves(pt::thread_state&, const pt::leaf_totals& t) { runs.push_back(t); }
};

TEST_CASE("pairing: leaves as each site's totals sum what the same leaves give one by one") {
  // Before the window's start (22), a leaf of b that the window leaves out;
  // then a { a{} a{} b{} step{} a{} }, the step's leaf through the stack, and leaves
  // of b outside any scope: runs of one site, cut by another site and by
  // the step, and a parent whose self time the leaves' totals make.
  const pt::site step{"ProfilerStep#1", "", "f.cpp", 9, pt::category::step};
  std::vector<pt::event> events = {begin(20, site_b), end(21, site_b, index_of(1, 0)), begin(30, site_a)};
  std::uint64_t n = 3, t = 31;
  const auto leaf = [&](const pt::site& s, std::uint64_t dur) {
    events.push_back(begin(t, s));
    events.push_back(end(t + dur, s, index_of(1, n)));
    n += 2;
    t += dur + 1;
  };
  leaf(site_a, 3), leaf(site_a, 4), leaf(site_b, 5), leaf(step, 2), leaf(site_a, 6);
  events.push_back(end(t, site_a, index_of(1, 2)));
  ++n, ++t;
  for (int i = 0; i < 300; ++i) leaf(site_b, 1 + i % 7);  // past a block of closed leaves
  const auto run = [&](bool totals) {
    pt::memory_resolver resolver;
    pt::pairing<totals_sink> pairs{resolver};
    totals_sink sink;
    sink.totals = totals;
    sink.start_ticks = 22;
    auto ts = thread_of(7, 1);
    pairs.attach(ts);
    const std::vector<pt::event> records = fused(events, 1);
    pairs.process_all(ts, records.data(), records.size(), &sink);
    CHECK(ts.stack.empty());
    CHECK(ts.next_index == index_of(1, n));
    return sink;
  };
  const totals_sink by_totals = run(true), one_by_one = run(false);
  CHECK(one_by_one.runs.empty());
  CHECK(one_by_one.scopes.size() == 2 + 4 + 300);
  REQUIRE(by_totals.runs.size() == 4);  // a a | b | a | b x 300
  std::int64_t leaves = 0;
  for (const pt::leaf_totals& r : by_totals.runs) leaves += r.count;
  CHECK(leaves == 4 + 300);
  CHECK(by_totals.runs[0].count == 2);
  CHECK(by_totals.runs[0].total_ns == 7);
  CHECK(by_totals.runs[0].first_begin_ns == 31);
  // The scopes that are no leaves (the step, a) as one by one,
  // and every leaf's time, site by site.
  const auto find = [](const std::vector<finished>& in, const finished& f) {
    return std::find_if(in.begin(), in.end(), [&](const finished& g) { return g.name == f.name && g.begin == f.begin; });
  };
  REQUIRE(by_totals.scopes.size() == 2);
  for (const finished& f : by_totals.scopes) {
    CAPTURE(f.name);
    const auto same = find(one_by_one.scopes, f);
    REQUIRE(same != one_by_one.scopes.end());
    CHECK(same->end == f.end);
    CHECK(same->self == f.self);
    CHECK(same->depth == f.depth);
    if (f.name == "a") CHECK(f.self == (56 - 30) - (3 + 4 + 5 + 2 + 6));
  }
  for (const pt::site* site : {&site_a, &site_b}) {
    std::int64_t total = 0, count = 0, want_total = 0, want_count = 0;
    for (const pt::leaf_totals& r : by_totals.runs)
      if (r.where == site) total += r.total_ns, count += r.count;
    for (const finished& f : one_by_one.scopes)
      if (f.name == site->name && find(by_totals.scopes, f) == by_totals.scopes.end()) want_total += f.end - f.begin, ++want_count;
    CHECK(total == want_total);
    CHECK(count == want_count);
  }
  CHECK(by_totals.next_external_id == one_by_one.next_external_id);
}

TEST_CASE("pairing: at a window switch, a leaf across it closes there and goes on in the next, fused or not") {
  // a { b{} b{ across the switch at 25 } } b{} (after it): what the old and
  // the next window get is the same whether leaves come fused or as pairs.
  const std::vector<pt::event> events = {begin(10, site_a),
                                         begin(12, site_b),
                                         end(14, site_b, index_of(1, 1)),
                                         begin(20, site_b),
                                         end(30, site_b, index_of(1, 3)),
                                         end(40, site_a, index_of(1, 0)),
                                         begin(50, site_b),
                                         end(60, site_b, index_of(1, 6))};
  const auto run = [&](const std::vector<pt::event>& records) {
    fixture f;
    test_sink next;
    next.id = 2;
    next.start_ticks = 25;
    auto ts = thread_of(7, 1);
    f.pairs.attach(ts);
    bool parking = false;
    f.pairs.process_until(ts, records.data(), records.size(), 25, parking, &f.sink);
    CHECK(parking);
    f.pairs.clip_and_carry(ts, &f.sink, 25, &next, 25);
    const std::vector<pt::event> parked = std::move(ts.pending);
    f.pairs.process_all(ts, parked.data(), parked.size(), &next);
    CHECK(ts.stack.empty());
    return std::pair{f.sink.scopes, next.scopes};
  };
  const auto [old_pairs, next_pairs] = run(events);
  const std::vector<pt::event> leaves = fused(events, 1);
  REQUIRE(leaves.size() == events.size() - 3);
  const auto [old_fused, next_fused] = run(leaves);
  const auto same = [](const std::vector<finished>& got, const std::vector<finished>& want) {
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      CAPTURE(i);
      CHECK(got[i].name == want[i].name);
      CHECK(got[i].begin == want[i].begin);
      CHECK(got[i].end == want[i].end);
      CHECK(got[i].self == want[i].self);
      CHECK(got[i].depth == want[i].depth);
    }
  };
  same(old_fused, old_pairs);
  same(next_fused, next_pairs);
  // The old window: b [12, 14], b clipped [20, 25], a [10, 25]; the next: b
  // [25, 30], a [25, 40], b [50, 60].
  REQUIRE(old_fused.size() == 3);
  CHECK(old_fused[1].begin == 20);
  CHECK(old_fused[1].end == 25);
  CHECK(old_fused[2].self == 15 - 2 - 5);
  REQUIRE(next_fused.size() == 3);
  CHECK(next_fused[0].begin == 25);
  CHECK(next_fused[0].end == 30);
  CHECK(next_fused[1].name == "a");
  CHECK(next_fused[1].end == 40);
  CHECK(next_fused[2].begin == 50);
}
