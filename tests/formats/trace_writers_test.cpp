// The two trace writers fed the same records: pairing drives a sink that
// hands every finished record to the Kineto JSON writer and to the Perfetto
// writer, as a trace window does with one of them. The JSON is parsed, the
// protobuf decoded by the tests' own wire decoder (tests/support/protobuf_wire.hpp),
// and their slices must be equal: names, categories, start and duration to
// the nanosecond, nesting, threads, args.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "formats/json_text.hpp"
#include "pairing/pairing.hpp"
#include "protobuf_wire.hpp"
#include "recording/record_layout.hpp"
#include "formats/kineto_json/kineto_json_writer.hpp"
#include "formats/perfetto/perfetto_reader.hpp"
#include "formats/perfetto/perfetto_writer.hpp"

namespace pt = proftrace::detail;
using namespace test_wire;

namespace {

const pt::site outer_site{"outer", "", "a.cpp", 10, pt::category::user_annotation};
const pt::site op_site{"matmul", "", "a.cpp", 20, pt::category::cpu_op};
const pt::site send_site{"MPI_Send", "", "a.cpp", 30, pt::category::cpu_op};

struct dual_sink {
  std::uint64_t start_ticks = 0, id = 1, next_external_id = 1;
  proftrace::loss_counts losses;
  pt::pairing_counts counts;
  pt::trace_head head;
  pt::kineto_json_writer json;
  pt::perfetto_writer perfetto;
  explicit dual_sink(const pt::trace_head& h) : head(h), json(head), perfetto(head) {}

  std::int64_t to_ns(std::uint64_t ticks) const { return 1'700'000'000'000'000'000 + static_cast<std::int64_t>(ticks); }
  auto ns_of_ticks() const {
    return [this](std::uint64_t ticks) { return to_ns(ticks); };
  }
  bool record_shapes() const { return true; }
  void thread_seen(pt::thread_state& ts) {
    ts.window_seen = id;
    json.thread(ts.tid, "worker " + std::to_string(ts.tid));
    perfetto.thread(ts.tid, "worker " + std::to_string(ts.tid));
  }
  void scope(pt::thread_state& ts, const pt::open_scope& s, std::int64_t end_ns) {
    json.scope(ts, s, end_ns);
    perfetto.scope(ts, s, end_ns);
  }
  void leaves(pt::thread_state& ts, std::span<const pt::closed_leaf> run) {
    json.leaves(ts, run);
    perfetto.leaves(ts, run);
  }
  void async(const pt::open_async& a, std::uint64_t async_id, std::int64_t end_ns, std::int64_t end_tid) {
    json.async(a, async_id, end_ns, end_tid);
    perfetto.async(a, async_id, end_ns, end_tid);
  }
  void withdrawn(const pt::thread_state& ts, const pt::open_scope& s, std::int64_t ns) {
    json.withdrawn(ts.tid, s, ns);
    perfetto.withdrawn(ts.tid, s, ns);
  }
  void memory(const pt::thread_state&, const pt::memory_event& m, bool) {
    json.memory(m);
    perfetto.memory(m);
  }
  void unscoped_memory(const std::int64_t (&)[2], std::int64_t) {}  // the aggregator's: no writer's
  void instant(const pt::thread_state& ts, const pt::site& w, std::int64_t ns) {
    json.instant(ts.tid, w, ns);
    perfetto.instant(ts.tid, w, ns);
  }
  void counter(const pt::thread_state& ts, const pt::site& w, std::int64_t ns, double v) {
    json.counter(ts.tid, w, ns, v);
    perfetto.counter(ts.tid, w, ns, v);
  }
};

// A slice as either format shows it; args as JSON text by name.
struct slice {
  std::string name, category;
  std::int64_t tid = 0, begin_ns = 0, dur_ns = 0;
  std::size_t depth = 0;
  std::map<std::string, std::string> args;
  bool operator<(const slice& o) const { return std::tie(tid, begin_ns, depth) < std::tie(o.tid, o.begin_ns, o.depth); }
  bool operator==(const slice& o) const {
    return std::tie(name, category, tid, begin_ns, dur_ns, depth, args) ==
           std::tie(o.name, o.category, o.tid, o.begin_ns, o.dur_ns, o.depth, o.args);
  }
};

std::int64_t ns_of_us3(const boost::json::value& v) {  // "ts": 12.345 is exactly 12345 ns
  return static_cast<std::int64_t>(std::llround(v.to_number<double>() * 1000.0));
}

std::vector<slice> json_slices(const std::string& events, std::int64_t base_ns) {
  const boost::json::array all = boost::json::parse("[" + events + "]").as_array();
  std::vector<slice> out;
  for (const auto& v : all) {
    const auto& e = v.as_object();
    if (e.at("ph").as_string() != "X") continue;
    slice s{std::string(e.at("name").as_string()), std::string(e.at("cat").as_string()), e.at("tid").to_number<std::int64_t>(),
            base_ns + ns_of_us3(e.at("ts")), ns_of_us3(e.at("dur")), 0, {}};
    for (const auto& [k, a] : e.at("args").as_object()) s.args[std::string(k)] = boost::json::serialize(a);
    out.push_back(std::move(s));
  }
  // Depth: how many slices of its thread contain it.
  for (auto& s : out)
    for (const auto& o : out)
      if (&o != &s && o.tid == s.tid && o.begin_ns <= s.begin_ns && s.begin_ns + s.dur_ns <= o.begin_ns + o.dur_ns &&
          (o.dur_ns > s.dur_ns || o.begin_ns < s.begin_ns))
        ++s.depth;
  std::sort(out.begin(), out.end());
  return out;
}

std::string json_string(std::string_view text) {
  return boost::json::serialize(boost::json::value(boost::json::string_view(text.data(), text.size())));
}
// An arg's value as JSON text; an interned string (17) from the sequence's values.
std::string annotation_json(const std::vector<pb_field>& a, const std::map<std::uint64_t, std::string>& values) {
  if (const auto* f = one(a, 17)) return json_string(values.at(f->value));
  if (const auto* f = one(a, 4)) return std::to_string(static_cast<std::int64_t>(f->value));
  if (const auto* f = one(a, 3)) return std::to_string(f->value);
  if (const auto* f = one(a, 2)) return f->value ? "true" : "false";
  if (const auto* f = one(a, 6)) return json_string(f->bytes);
  if (const auto* f = one(a, 9)) return boost::json::serialize(boost::json::parse(f->bytes));  // legacy_json_value
  FAIL("an annotation of no type this test knows");
  return {};
}

// Thread slices from the packets: BEGIN/END per track with a stack,
// interned names and annotation names per sequence, thread tracks by uuid;
// a sequence's default track and its incremental clock 64 (deltas from
// the value its clock snapshot gives, beside REALTIME) as Perfetto reads them.
struct sequence_state {
  std::map<std::uint64_t, std::string> names, categories, arg_names, values;
  std::uint64_t default_track = 0, default_clock = 0;
  std::int64_t clock64 = 0, clock64_to_realtime = 0;
};
std::int64_t realtime_of(const std::vector<pb_field>& packet, sequence_state& q) {
  const auto* clock = one(packet, 58);
  const std::uint64_t id = clock ? clock->value : q.default_clock;
  const auto raw = static_cast<std::int64_t>(one(packet, 8)->value);
  if (id == 1) return raw;
  REQUIRE(id == 64);
  q.clock64 += raw;  // a delta, negative as a two's complement varint
  return q.clock64 + q.clock64_to_realtime;
}
void read_sequence_setup(const std::vector<pb_field>& p, sequence_state& q) {
  if (const auto* defaults = one(p, 59)) {
    const auto d = decode(defaults->bytes);
    if (const auto* c = one(d, 58)) q.default_clock = c->value;
    if (const auto* te = one(d, 11)) q.default_track = one(decode(te->bytes), 11)->value;
  }
  if (const auto* snapshot = one(p, 6)) {
    std::map<std::uint64_t, std::pair<std::int64_t, bool>> clocks;  // id -> (timestamp, incremental)
    for (const auto& c : all(decode(snapshot->bytes), 1)) {
      const auto clock = decode(c.bytes);
      clocks[one(clock, 1)->value] = {static_cast<std::int64_t>(one(clock, 2)->value), one(clock, 3) != nullptr};
    }
    if (clocks.count(64)) {
      REQUIRE(clocks.count(1));
      CHECK(clocks[64].second);
      q.clock64 = clocks[64].first;
      q.clock64_to_realtime = clocks[1].first - clocks[64].first;
    }
  }
  if (const auto* interned = one(p, 12)) {
    const auto in = decode(interned->bytes);
    for (auto [field, table] : {std::pair{2u, &q.names}, {1u, &q.categories}, {3u, &q.arg_names}, {29u, &q.values}})
      for (const auto& e : all(in, field)) {
        const auto entry = decode(e.bytes);
        (*table)[one(entry, 1)->value] = std::string(one(entry, 2)->bytes);
      }
  }
}
std::vector<slice> perfetto_slices(const std::string& bytes) {
  std::map<std::uint64_t, sequence_state> sequences;
  std::map<std::uint64_t, std::int64_t> thread_of_track;
  std::map<std::uint64_t, std::vector<slice>> open;
  std::vector<slice> out;
  const auto read_args = [&](const std::vector<pb_field>& ev, const sequence_state& q, slice& s) {
    for (const auto& f : all(ev, 4)) {
      const auto a = decode(f.bytes);
      const auto* n = one(a, 1);
      REQUIRE(n != nullptr);
      s.args[q.arg_names.at(n->value)] = annotation_json(a, q.values);
    }
  };
  for (const auto& packet : decode(bytes)) {
    const auto p = decode(packet.bytes);
    sequence_state& q = sequences[one(p, 10)->value];
    read_sequence_setup(p, q);
    if (const auto* td = one(p, 60)) {
      const auto d = decode(td->bytes);
      if (const auto* thread = one(d, 4)) thread_of_track[one(d, 1)->value] = static_cast<std::int64_t>(one(decode(thread->bytes), 2)->value);
    }
    const auto* te = one(p, 11);
    if (te == nullptr) continue;
    const auto ev = decode(te->bytes);
    const std::uint64_t track = one(ev, 11) ? one(ev, 11)->value : q.default_track;
    const auto type = one(ev, 9)->value;
    const std::int64_t ts = realtime_of(p, q);
    if (!thread_of_track.count(track) || (type != 1 && type != 2)) continue;
    if (type == 1) {
      slice s;
      s.name = one(ev, 23) ? std::string(one(ev, 23)->bytes) : q.names.at(one(ev, 10)->value);
      s.category = q.categories.at(one(ev, 3)->value);
      s.tid = thread_of_track.at(track);
      s.begin_ns = ts;
      s.depth = open[track].size();
      read_args(ev, q, s);
      open[track].push_back(std::move(s));
    } else {
      REQUIRE_FALSE(open[track].empty());
      slice s = std::move(open[track].back());
      open[track].pop_back();
      s.dur_ns = ts - s.begin_ns;
      read_args(ev, q, s);
      out.push_back(std::move(s));
    }
  }
  for (const auto& [track, stack] : open) CHECK(stack.empty());
  std::sort(out.begin(), out.end());
  return out;
}

// A thread whose ring has uid `uid`: records get indices uid << 44 | n.
pt::thread_state thread_of(std::int64_t tid, std::uint64_t uid) {
  pt::thread_state ts;
  ts.tid = tid;
  ts.uid = uid;
  ts.next_index = uid << pt::ring_uid_shift;
  return ts;
}

pt::event rec(std::uint64_t t, const pt::site* s, std::uint64_t payload, pt::event_kind k, std::uint32_t extra = 0) {
  return {t, reinterpret_cast<std::uintptr_t>(s), payload, static_cast<std::uint32_t>(k), extra};
}
std::uint64_t idx(std::uint64_t uid, std::uint64_t n) { return uid << pt::ring_uid_shift | n; }

// Both writers behind pairing, with threads 11 (ring uid 1) and 12 (uid 2).
struct two_threads {
  dual_sink sink;
  pt::memory_resolver resolver;
  pt::pairing<dual_sink> pairs{resolver};
  pt::thread_state t1 = thread_of(11, 1), t2 = thread_of(12, 2);
  explicit two_threads(const pt::trace_head& head) : sink(head) {
    pairs.attach(t1);
    pairs.attach(t2);
  }
  // A batch of one thread's records, as a drain of its ring hands them over.
  void feed(pt::thread_state& t, const std::vector<pt::event>& batch) {
    for (std::size_t i = 0; i < batch.size(); ++i) pairs.process(t, &batch[i], &sink);
  }
};

// A process 4242 whose trace starts (and is based) at 1.7e18 Unix ns.
pt::trace_head head_at_1_7e18() {
  pt::trace_head head;
  head.pid = 4242;
  head.start_ns = 1'700'000'000'000'000'000;
  head.base_ns = head.start_ns;
  return head;
}

}  // namespace

TEST_CASE("the JSON and Perfetto writers give the same slices for the same records") {
  pt::trace_head head;
  head.pid = 4242;
  head.process_name = "writers_test";
  head.start_ns = 1'700'000'000'000'000'000;
  head.base_ns = head.start_ns - head.start_ns % (std::int64_t{1} << 51);
  head.with_stack = true;
  two_threads f(head);
  auto& sink = f.sink;
  auto& pairs = f.pairs;
  auto &t1 = f.t1, &t2 = f.t2;
  // Thread 11: outer { matmul [[2, 3], [3, 4]] with 48 FLOPs; MPI_Send 4096 bytes to rank 3 } — begins tie
  // with their parent's at 100 ns: the Perfetto writer must still nest them.
  // Shapes as the recorder packs them: [count, ndim, dims..., ndim, dims...] in extension slots.
  std::uint64_t shape_words[3 * pt::words_per_event] = {};
  std::uint32_t used = 0;
  for (std::int64_t v : {2, 2, 2, 3, 2, 3, 4}) REQUIRE(pt::put_data_word(shape_words, 3 * pt::words_per_event, used, v));
  std::vector<pt::event> shape_slots(pt::slots_for_words(used));
  for (std::size_t i = 0; i < shape_slots.size(); ++i) {
    std::memcpy(&shape_slots[i], shape_words + i * pt::words_per_event, sizeof(pt::event));
    shape_slots[i].kind = static_cast<std::uint32_t>(pt::event_kind::extension);
  }
  std::uint64_t comm_words[pt::words_per_event] = {};
  pt::encode_comm(comm_words, 4096, 3);
  pt::event comm_ext{comm_words[0], comm_words[1], 0, static_cast<std::uint32_t>(pt::event_kind::extension), 0};
  std::vector<pt::event> on_1 = {rec(100, &outer_site, 0, pt::event_kind::begin),
                                 rec(100, &op_site, 0, pt::event_kind::shapes, static_cast<std::uint32_t>(shape_slots.size()))};
  on_1.insert(on_1.end(), shape_slots.begin(), shape_slots.end());
  const std::uint64_t after_shapes = on_1.size();
  for (const pt::event& e : {rec(150, nullptr, 48, pt::event_kind::flops), rec(400, &op_site, idx(1, 1), pt::event_kind::end),
                             rec(400, &send_site, 0, pt::event_kind::comm, 1), comm_ext})
    on_1.push_back(e);
  // The send's begin is the record after the flops and op's end: its ring
  // index counts the 16-byte slots before it (pt::ring_slots).
  std::uint64_t send_slot = 0;
  for (std::size_t i = 0; i < after_shapes + 2; i += pt::record_length(on_1[i])) send_slot += pt::ring_slots(on_1[i], 1);
  on_1.push_back(rec(900, &send_site, idx(1, send_slot), pt::event_kind::end));
  on_1.push_back(rec(1000, &outer_site, idx(1, 0), pt::event_kind::end));
  // Thread 12: outer { outer } — same site nested.
  const std::vector<pt::event> on_2 = {rec(200, &outer_site, 0, pt::event_kind::begin),
                                       rec(300, &outer_site, 0, pt::event_kind::begin),
                                       rec(350, &outer_site, idx(2, 1), pt::event_kind::end),
                                       rec(700, &outer_site, idx(2, 0), pt::event_kind::end)};
  const auto feed = [&](pt::thread_state& ts, const std::vector<pt::event>& events) {
    for (std::size_t i = 0; i < events.size(); i += pt::record_length(events[i])) pairs.process(ts, &events[i], &sink);
  };
  feed(t1, on_1);
  feed(t2, on_2);
  CHECK(sink.losses.total() == 0);

  const std::vector<slice> from_json = json_slices(sink.json.buffer(), head.base_ns);
  const std::vector<slice> from_perfetto = perfetto_slices(sink.perfetto.buffer());
  REQUIRE(from_json.size() == 5);
  REQUIRE(from_perfetto.size() == from_json.size());
  for (std::size_t i = 0; i < from_json.size(); ++i) {
    CAPTURE(i);
    CAPTURE(from_json[i].name);
    CHECK(from_perfetto[i].name == from_json[i].name);
    CHECK(from_perfetto[i].category == from_json[i].category);
    CHECK(from_perfetto[i].tid == from_json[i].tid);
    CHECK(from_perfetto[i].begin_ns == from_json[i].begin_ns);
    CHECK(from_perfetto[i].dur_ns == from_json[i].dur_ns);
    CHECK(from_perfetto[i].depth == from_json[i].depth);
    CHECK(from_perfetto[i].args == from_json[i].args);
  }
  // What the records said, as both show it.
  const slice& matmul = from_json[1];
  CHECK(matmul.name == "matmul");
  CHECK(matmul.depth == 1);
  CHECK(matmul.args.at("Input Dims") == "[[2,3],[3,4]]");
  CHECK(matmul.args.at("flops") == "48");
  CHECK(from_json[2].args.at("bytes") == "4096");
  CHECK(from_json[2].args.at("peer") == "3");
  CHECK(from_json[0].args.at("Call stack") == "\"a.cpp(10): outer\"");
}

TEST_CASE("a scope whose begin the Perfetto writer wrote early and that ends on another thread still ends on its track") {
  two_threads f(head_at_1_7e18());
  auto& sink = f.sink;
  // outer begins on 11, a child closes inside it (so outer's begin is written), then outer ends on 12,
  // and 11 records one more scope.
  const std::vector<pt::event> on_1 = {rec(100, &outer_site, 0, pt::event_kind::begin),
                                       rec(110, &op_site, 0, pt::event_kind::begin),
                                       rec(120, &op_site, idx(1, 1), pt::event_kind::end)};
  const std::vector<pt::event> on_2 = {rec(300, &outer_site, idx(1, 0), pt::event_kind::end)};
  const std::vector<pt::event> later_1 = {rec(400, &send_site, 0, pt::event_kind::begin),
                                          rec(450, &send_site, idx(1, 3), pt::event_kind::end)};
  f.feed(f.t1, on_1);
  f.feed(f.t2, on_2);
  f.feed(f.t1, later_1);
  CHECK(sink.counts.moved_scopes == 1);
  const std::vector<slice> slices = perfetto_slices(sink.perfetto.buffer());  // CHECKs every track balanced
  REQUIRE(slices.size() == 3);
  CHECK(slices[0].name == "outer");
  CHECK(slices[0].dur_ns == 200);
  CHECK(slices[0].args.at("ended on another thread") == std::to_string(slices[0].begin_ns));  // names its slice by its begin
  CHECK(slices[1].name == "matmul");
  CHECK(slices[1].depth == 1);
  CHECK(slices[2].name == "MPI_Send");
  CHECK(slices[2].depth == 0);  // not nested in a slice left open
}

TEST_CASE("a scope that ends on another thread under scopes its thread opened later: the reader skips it, not them") {
  two_threads f(head_at_1_7e18());
  auto& sink = f.sink;
  // On 11: outer (the coroutine's scope) begins and its coroutine moves to 12;
  // 11 then opens MPI_Send, closes a matmul inside it (both begins are
  // written), 12 ends outer while MPI_Send is still open, and MPI_Send ends.
  const std::vector<pt::event> on_1 = {rec(100, &outer_site, 0, pt::event_kind::begin),
                                       rec(200, &send_site, 0, pt::event_kind::begin),
                                       rec(210, &op_site, 0, pt::event_kind::begin),
                                       rec(220, &op_site, idx(1, 2), pt::event_kind::end)};
  const std::vector<pt::event> on_2 = {rec(300, &outer_site, idx(1, 0), pt::event_kind::end)};
  const std::vector<pt::event> later_1 = {rec(400, &send_site, idx(1, 1), pt::event_kind::end)};
  f.feed(f.t1, on_1);
  f.feed(f.t2, on_2);
  f.feed(f.t1, later_1);
  CHECK(sink.counts.moved_scopes == 1);
  std::map<std::string, std::int64_t> durations;  // the reader's slices on thread 11
  pt::perfetto_callbacks cb;
  cb.on_event = [&](const pt::decoded_event& e) {
    if (e.type == pt::decoded_event::kind::slice && e.track->is_thread) durations[e.name] = e.dur_ns;
    return true;
  };
  std::istringstream in(sink.perfetto.buffer());
  const pt::perfetto_read_result r = pt::read_perfetto(in, cb);
  CHECK(r.withdrawn_slices == 1);
  CHECK(r.unmatched_ends == 0);
  CHECK(r.open_slices == 0);
  CHECK(durations.count("outer") == 0);  // the async range beside it is the scope
  CHECK(durations.at("MPI_Send") == 200);
  CHECK(durations.at("matmul") == 10);
}

TEST_CASE("the Perfetto writer drops an ended thread's sequence; the same tid later starts another, read back the same") {
  pt::trace_head head;
  head.pid = 4242;
  head.start_ns = 1'700'000'000'000'000'000;
  head.base_ns = head.start_ns;
  pt::perfetto_writer w(head);
  pt::thread_state ts = thread_of(11, 1);
  const auto scope_at = [&](std::int64_t begin, std::int64_t end, std::uint64_t id) {
    pt::open_scope s;
    s.where = &op_site;
    s.begin_ns = head.start_ns + begin;
    s.external_id = id;
    w.scope(ts, s, head.start_ns + end);
  };
  scope_at(100, 150, 1);
  w.thread_done(11);
  w.thread_done(99);  // never seen: nothing
  scope_at(200, 260, 2);
  const std::string& bytes = w.buffer();
  std::map<std::uint64_t, int> events_by_sequence;
  for (const auto& packet : decode(bytes)) {
    const auto p = decode(packet.bytes);
    if (one(p, 11)) ++events_by_sequence[one(p, 10)->value];
  }
  CHECK(events_by_sequence.size() == 2);  // two sequences of two packets each
  for (const auto& [sequence, n] : events_by_sequence) CHECK(n == 2);
  const std::vector<slice> slices = perfetto_slices(bytes);
  REQUIRE(slices.size() == 2);
  CHECK(slices[0].begin_ns == head.start_ns + 100);
  CHECK(slices[0].dur_ns == 50);
  CHECK(slices[1].begin_ns == head.start_ns + 200);
  CHECK(slices[1].dur_ns == 60);
  CHECK(slices[1].tid == 11);
  CHECK(slices[1].args.at("External id") == "2");
}

// The JSON writer's short path reuses a timestamp's digits above its last
// eight and formats small durations and ids on its own: every value it
// writes must read back exact, across those digits' changes in both
// directions and past the short forms' ranges.
TEST_CASE("the JSON writer's common scopes read back with exact ts, dur and External id") {
  pt::trace_head head;
  head.pid = 7;
  head.start_ns = 1'700'000'000'000'000'000;
  head.base_ns = head.start_ns - head.start_ns % (std::int64_t{1} << 51);
  pt::kineto_json_writer json(head);
  pt::thread_state ts;
  ts.tid = 3;
  struct one {
    std::int64_t ts_ns, dur_ns;
    std::uint64_t id;
  };
  const std::int64_t t0 = 123'456'789'012'345;  // from the base: 15 digits
  const one scopes[] = {{t0, 0, 1},
                        {t0 + 1, 999, 9},
                        {t0 + 54'321'000, 1'000, 10},                // up to the next 10^8 ...
                        {t0 + 87'654'654, 99'999'999, 99'999'999},  // ... across it
                        {t0 + 87'654'656, 100'000'000, 100'000'000},
                        {t0 + 12, 123'456'789'012, 18'446'744'073'709'551'615ull},  // back below it
                        {50'000, 5, 2},                                              // ts below 10^8
                        {t0 + 900'000'000, 42, 3}};
  for (const one& o : scopes) {
    pt::open_scope s;
    s.where = &op_site;
    s.begin_ns = head.base_ns + o.ts_ns;
    s.external_id = o.id;
    json.scope(ts, s, s.begin_ns + o.dur_ns);
  }
  // The numbers' text, as written (a parsed double would lose digits).
  const std::string text = json.buffer();
  boost::json::parse("[" + text + "]");  // valid JSON
  const auto number_after = [&](std::string_view key, std::size_t from) {
    const std::size_t at = text.find(key, from) + key.size();
    return text.substr(at, text.find_first_of(",}", at) - at);
  };
  std::size_t at = 0;
  for (std::size_t i = 0; i < std::size(scopes); ++i) {
    CAPTURE(i);
    at = text.find("\"ph\": \"X\"", at);
    REQUIRE(at != std::string::npos);
    const one& o = scopes[i];
    char want[32];
    CHECK(number_after("\"ts\": ", at) == std::string(want, pt::put_us3(want, o.ts_ns)));
    CHECK(number_after("\"dur\": ", at) == std::string(want, pt::put_us3(want, o.dur_ns)));
    CHECK(number_after("\"External id\": ", at) == std::to_string(o.id));
    ++at;
  }
}

TEST_CASE("an async range closed truncated says so in both formats") {
  pt::trace_head head;
  head.pid = 4242;
  head.start_ns = 1'700'000'000'000'000'000;
  head.base_ns = head.start_ns;
  for (const bool truncated : {false, true}) {
    CAPTURE(truncated);
    pt::kineto_json_writer json(head);
    pt::perfetto_writer perfetto(head);
    pt::open_async a{.where = &outer_site, .begin_ns = head.start_ns + 100, .tid = 11, .external_id = 5, .truncated = truncated};
    json.async(a, 1, head.start_ns + 300, 12);
    perfetto.async(a, 1, head.start_ns + 300, 12);
    CHECK((json.buffer().find("\"truncated\": true") != std::string::npos) == truncated);
    CHECK((perfetto.buffer().find("truncated") != std::string::npos) == truncated);
  }
}

TEST_CASE("runs of leaf events reach both writers as the same slices as the stack gives them") {
  // Thread 11: outer { leaves of two sites, alternating and repeated, one
  // site first seen mid-run } then leaves at the top: fed as the streaming
  // drain hands them over (fused leaf events, one chunk through
  // process_all) and record by record through the stack; both writers must
  // give the same slices either way, and the same as each other.
  static const pt::site leaf_a{"leaf a", "", "w.cpp", 20, pt::category::user_annotation};
  static const pt::site leaf_b{"leaf b", "", "w.cpp", 21, pt::category::cpu_op};
  static const pt::site leaf_c{"leaf c", "", "w.cpp", 22, pt::category::user_annotation};
  const pt::site* order[] = {&leaf_a, &leaf_a, &leaf_b, &leaf_a, &leaf_c, &leaf_c, &leaf_b};
  const auto leaf = [](std::uint64_t t, const pt::site* s, std::uint64_t dur) {
    return rec(t, s, t + dur, pt::event_kind::leaf);
  };
  std::vector<pt::event> fused = {rec(100, &outer_site, 0, pt::event_kind::begin)};
  std::vector<pt::event> pairs_of = fused;
  std::uint64_t t = 110, slot = 1;
  for (const pt::site* s : order) {
    fused.push_back(leaf(t, s, 7));
    pairs_of.push_back(rec(t, s, 0, pt::event_kind::begin));
    pairs_of.push_back(rec(t + 7, s, idx(1, slot), pt::event_kind::end));
    t += 10;
    slot += 2;
  }
  fused.push_back(rec(t, &outer_site, idx(1, 0), pt::event_kind::end));
  pairs_of.push_back(fused.back());
  for (const pt::site* s : order) {
    t += 10;
    fused.push_back(leaf(t, s, 3));
    pairs_of.push_back(rec(t, s, 0, pt::event_kind::begin));
    pairs_of.push_back(rec(t + 3, s, idx(1, slot + 1), pt::event_kind::end));
    slot += 2;
  }
  const auto slices_of = [](const std::vector<pt::event>& events, bool in_one_chunk) {
    two_threads f(head_at_1_7e18());
    if (in_one_chunk) f.pairs.process_all(f.t1, events.data(), events.size(), &f.sink);
    else f.feed(f.t1, events);
    CHECK(f.t1.stack.empty());
    CHECK(f.sink.losses.total() == 0);
    return std::pair{json_slices(f.sink.json.buffer(), f.sink.head.base_ns), perfetto_slices(f.sink.perfetto.buffer())};
  };
  const auto [json_runs, perfetto_runs] = slices_of(fused, true);
  const auto [json_stack, perfetto_stack] = slices_of(pairs_of, false);
  REQUIRE(json_stack.size() == 1 + 2 * std::size(order));
  CHECK(json_runs == json_stack);
  CHECK(perfetto_runs == perfetto_stack);
  CHECK(perfetto_runs == json_runs);
  CHECK(json_runs[0].name == "outer");
  CHECK(json_runs[1].depth == 1);
  CHECK(json_runs[1].dur_ns == 7);
  CHECK(json_runs.back().depth == 0);
  CHECK(json_runs.back().name == "leaf b");
  CHECK(json_runs.back().category == "cpu_op");
}

TEST_CASE("a long run of leaves fills the writers' staging blocks and crosses a timestamp's high digits") {
  // 3000 leaves of two sites in one chunk (more than either writer's 16 KiB
  // staging block holds), durations and gaps of one- to three-byte varints,
  // across 10^8 ns (JSON's shared high digits of "ts" change mid-run): as
  // runs and through the stack, both writers give the same slices.
  static const pt::site leaf_a{"leaf a", "", "w.cpp", 30, pt::category::user_annotation};
  static const pt::site leaf_b{"leaf b", "", "w.cpp", 31, pt::category::cpu_op};
  std::vector<pt::event> fused, pairs_of;
  std::uint64_t t = 99'000'000, slot = 0;
  const std::uint64_t durations[] = {3, 200, 70'000}, gaps[] = {5, 300, 1'000'000};
  for (std::size_t i = 0; i < 3000; ++i) {
    const pt::site* s = i % 7 < 4 ? &leaf_a : &leaf_b;
    const std::uint64_t dur = durations[i % 3];
    fused.push_back(rec(t, s, t + dur, pt::event_kind::leaf));
    pairs_of.push_back(rec(t, s, 0, pt::event_kind::begin));
    pairs_of.push_back(rec(t + dur, s, idx(1, slot), pt::event_kind::end));
    t += dur + gaps[i % 2 == 0 ? (i / 2) % 3 : 0];
    slot += 2;
  }
  const auto slices_of = [](const std::vector<pt::event>& events, bool in_one_chunk) {
    two_threads f(head_at_1_7e18());
    if (in_one_chunk) f.pairs.process_all(f.t1, events.data(), events.size(), &f.sink);
    else f.feed(f.t1, events);
    CHECK(f.sink.losses.total() == 0);
    return std::pair{json_slices(f.sink.json.buffer(), f.sink.head.base_ns), perfetto_slices(f.sink.perfetto.buffer())};
  };
  const auto [json_runs, perfetto_runs] = slices_of(fused, true);
  const auto [json_stack, perfetto_stack] = slices_of(pairs_of, false);
  REQUIRE(json_runs.size() == 3000);
  const std::int64_t base_ns = head_at_1_7e18().base_ns;
  CHECK(json_runs.front().begin_ns - base_ns < 100'000'000);
  CHECK(json_runs.back().begin_ns - base_ns > 100'000'000);
  CHECK(json_runs == json_stack);
  CHECK(perfetto_runs == perfetto_stack);
  CHECK(perfetto_runs == json_runs);
  std::set<std::int64_t> durs;
  for (const auto& s : json_runs) durs.insert(s.dur_ns);
  CHECK(durs == std::set<std::int64_t>{3, 200, 70'000});
}
