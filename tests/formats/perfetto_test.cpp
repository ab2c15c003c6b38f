// The Perfetto writer checked by an independent wire-format decoder written
// here from ../shared/reference/perfetto-trace-format.md (not the library's
// reader), then the library's reader: round trip, cut files, garbage.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "protobuf_wire.hpp"
#include "kineto_event_check.hpp"
#include "test_support.hpp"
#include "formats/kineto_json/json_events_scanner.hpp"
#include "formats/perfetto/kineto_event.hpp"
#include "formats/perfetto/kineto_to_perfetto.hpp"
#include "formats/perfetto/perfetto_builder.hpp"
#include "formats/perfetto/perfetto_reader.hpp"
#include "formats/perfetto/proto_encoder.hpp"
#include "formats/perfetto/perfetto_to_kineto.hpp"

using namespace proftrace::detail;
using namespace std::string_view_literals;

using namespace test_wire;
using test_kineto::kineto_event_mismatch;

namespace {

// A string arg long enough to be interned (DebugAnnotation.string_value_iid).
constexpr std::string_view long_text = "demo.cpp(82): gemm_block;demo.cpp(98): blocked_matmul";

// A builder trace with every kind of track, event and annotation.
struct sample {
  std::string out;
  std::uint64_t process = 0, thread = 0, counter = 0, stream = 0;
  sample() {
    perfetto_builder b(out, 7);
    process = b.process_track(100, "proc");
    thread = b.thread_track(100, 101, "main");
    CHECK(b.thread_track(100, 101, "main") == thread);
    const annotation args[] = {{.name = "i", .value = std::int64_t{-5}},   {.name = "u", .value = std::uint64_t{7}},
                               {.name = "d", .value = 2.5},                {.name = "b", .value = true},
                               {.name = "s", .value = "text"sv},           {.name = "j", .value = json_value{"[[2, 3]]"}},
                               {.name = "stack", .value = long_text}};
    const std::uint64_t flow[] = {42}, terminating[] = {43};
    b.slice_begin(thread, 1000, "outer", "user_annotation", args, flow);
    b.slice_begin(thread, 1100, "inner", "cpu_op");
    b.slice_end(thread, 1200);
    b.slice_end(thread, 2000, {}, terminating);
    const annotation again[] = {{.name = "stack", .value = long_text}};  // interned with the first: its id alone
    b.instant(thread, 1500, "mark", "cpu_op", again);
    counter = b.counter_track("mem", process);
    b.counter(counter, 1600, 3.5);
    stream = b.named_track("stream 7", process, 7);
    const std::uint64_t name = b.intern_name("outer");  // interned already: the same id, nothing new written
    CHECK(name == 1);
    b.slice_begin(stream, 3000, name, b.intern_category("kernel"));
    b.slice_end(stream, 3100);
  }
};

}  // namespace

namespace {

// The packets of a sample, checked one by one with what earlier ones declared.
struct trace_check {
  explicit trace_check(const sample& checked) : s(checked) {}
  const sample& s;
  std::map<std::uint64_t, std::string> names, categories, annotation_names, string_values;
  int interned_value_uses = 0;
  std::set<std::uint64_t> tracks;
  std::map<std::uint64_t, std::vector<std::string>> open;  // per track
  std::vector<std::string> seen;                            // "B outer", "E outer", ...
  std::map<std::string, int> interned_count;

  // State cleared, REALTIME and BOOTTIME read together.
  void first_packet(const std::vector<pb_field>& p) {
    REQUIRE(one(p, 13));
    CHECK(one(p, 13)->value == 1);
    REQUIRE(one(p, 6));
    std::set<std::uint64_t> clocks;
    for (const auto& c : all(decode(one(p, 6)->bytes), 1)) {
      const auto clock = decode(c.bytes);
      REQUIRE(one(clock, 1));
      REQUIRE(one(clock, 2));
      CHECK(one(clock, 2)->value > 0);
      clocks.insert(one(clock, 1)->value);
    }
    CHECK(clocks == std::set<std::uint64_t>{1, 6});
  }

  void descriptor(const std::vector<pb_field>& desc) {
    REQUIRE(one(desc, 1));
    CHECK(tracks.insert(one(desc, 1)->value).second);  // once per uuid
    if (const pb_field* parent = one(desc, 5)) CHECK(tracks.count(parent->value) == 1);  // parent first
    if (const pb_field* t = one(desc, 4)) {
      const auto thread = decode(t->bytes);
      CHECK(one(thread, 1)->value == 100);
      CHECK(one(thread, 2)->value == 101);
      CHECK(one(thread, 5)->bytes == "main");
      CHECK(one(desc, 5)->value == s.process);
    }
    if (const pb_field* pr = one(desc, 3)) CHECK(one(decode(pr->bytes), 6)->bytes == "proc");
    if (one(desc, 1)->value == s.counter) {
      CHECK(one(desc, 8) != nullptr);
      CHECK(one(desc, 2)->bytes == "mem");
    }
  }

  void interned(std::string_view bytes) {
    const auto fields = decode(bytes);
    for (auto [table, number] : {std::pair{&categories, 1u}, std::pair{&names, 2u}, std::pair{&annotation_names, 3u},
                                 std::pair{&string_values, 29u}})
      for (const auto& e : all(fields, number)) {
        const auto entry = decode(e.bytes);
        const std::string text(one(entry, 2)->bytes);
        CHECK(table->emplace(one(entry, 1)->value, text).second);
        ++interned_count[text + "/" + std::to_string(number)];
      }
  }

  // Each arg's value in the field (and wire type) of its type.
  void annotation(std::string_view bytes) {
    const auto ann = decode(bytes);
    REQUIRE(annotation_names.count(one(ann, 1)->value) == 1);
    const std::string& n = annotation_names[one(ann, 1)->value];
    const std::map<std::string, std::pair<std::uint32_t, int>> expect = {
        {"i", {4, 0}}, {"u", {3, 0}}, {"d", {5, 1}}, {"b", {2, 0}}, {"s", {6, 2}}, {"j", {9, 2}}, {"stack", {17, 0}}};
    REQUIRE(expect.count(n) == 1);
    const pb_field* v = one(ann, expect.at(n).first);
    REQUIRE(v);
    CHECK(v->wire == expect.at(n).second);
    if (n == "i") CHECK(static_cast<std::int64_t>(v->value) == -5);
    if (n == "d") CHECK(as_double(v->value) == 2.5);
    if (n == "j") CHECK(v->bytes == "[[2, 3]]");
    if (n == "stack") {
      CHECK(string_values[v->value] == long_text);  // interned in this packet or before
      ++interned_value_uses;
    }
  }

  void event(const std::vector<pb_field>& p) {
    REQUIRE(one(p, 8));
    REQUIRE(one(p, 58));
    CHECK(one(p, 58)->value == 1);
    REQUIRE(one(p, 13));
    CHECK((one(p, 13)->value & 2) == 2);
    if (const pb_field* in = one(p, 12)) interned(in->bytes);
    const auto ev = decode(one(p, 11)->bytes);
    const std::uint64_t track = one(ev, 11)->value, type = one(ev, 9)->value;
    CHECK(tracks.count(track) == 1);  // declared before use
    if (type == 1 || type == 3) {
      REQUIRE(names.count(one(ev, 10)->value) == 1);  // interned in this packet or before
      for (const auto& c : all(ev, 3)) CHECK(categories.count(c.value) == 1);
    }
    for (const auto& a : all(ev, 4)) annotation(a.bytes);
    nesting(ev, track, type);
  }

  void nesting(const std::vector<pb_field>& ev, std::uint64_t track, std::uint64_t type) {
    switch (type) {
      case 1:
        open[track].push_back(names[one(ev, 10)->value]);
        seen.push_back("B " + open[track].back());
        for (const auto& f : all(ev, 47)) CHECK((f.wire == 1 && f.value == 42));
        break;
      case 2:
        REQUIRE(!open[track].empty());
        CHECK(one(ev, 10) == nullptr);  // an END has no name
        seen.push_back("E " + open[track].back());
        open[track].pop_back();
        for (const auto& f : all(ev, 48)) CHECK((f.wire == 1 && f.value == 43));
        break;
      case 3: seen.push_back("I " + names[one(ev, 10)->value]); break;
      case 4:
        REQUIRE(one(ev, 44));
        CHECK(one(ev, 44)->wire == 1);
        CHECK(as_double(one(ev, 44)->value) == 3.5);
        seen.push_back("C");
        break;
      default: FAIL("unexpected type " << type);
    }
  }
};

}  // namespace

TEST_CASE("builder packets decoded independently: fields, flags, interning, tracks, nesting, annotations") {
  const sample s;
  const auto trace = decode(s.out);
  REQUIRE(trace.size() > 5);
  trace_check check(s);
  for (std::size_t k = 0; k < trace.size(); ++k) {
    CAPTURE(k);
    REQUIRE(trace[k].number == 1);
    REQUIRE(trace[k].wire == 2);
    const auto p = decode(trace[k].bytes);
    REQUIRE(one(p, 10));
    CHECK(one(p, 10)->value == 7);
    if (k == 0) check.first_packet(p);
    else if (const pb_field* d = one(p, 60)) check.descriptor(decode(d->bytes));
    else if (one(p, 11)) check.event(p);
    else FAIL("packet " << k << " is neither a descriptor nor an event");
  }
  const std::vector<std::string> expected = {"B outer", "B inner", "E inner", "E outer", "I mark",
                                             "C",       "B outer", "E outer"};
  CHECK(check.seen == expected);
  CHECK(check.interned_count["outer/2"] == 1);
  CHECK(check.interned_count["cpu_op/1"] == 1);
  CHECK(check.interned_count[std::string(long_text) + "/29"] == 1);  // once, for both of its uses
  CHECK(check.interned_value_uses == 2);
  CHECK(check.string_values.size() == 1);  // "text" is too short to gain: written in place
  CHECK(check.tracks.size() == 4);
}

namespace {
struct collected {
  std::vector<decoded_event> events;
  std::vector<decoded_track> tracks;
  perfetto_read_result result;
};
collected read_bytes(const std::string& bytes) {
  collected c;
  perfetto_callbacks cb;
  cb.on_track = [&](const decoded_track& t) { c.tracks.push_back(t); };
  cb.on_event = [&](const decoded_event& e) {
    c.events.push_back(e);
    return true;
  };
  std::istringstream in(bytes);
  c.result = read_perfetto(in, cb);
  return c;
}
}  // namespace

TEST_CASE("string args past the interning bounds are written in place; those interned before keep their ids") {
  std::string out;
  {
    perfetto_builder b(out, 1);
    const std::uint64_t track = b.thread_track(1, 2, "main");
    const auto value = [](std::size_t i) { return "a value that never repeats #" + std::to_string(i); };
    for (std::size_t i = 0; i <= perfetto_builder::max_interned_values + 1; ++i) {
      const std::string v = value(i == perfetto_builder::max_interned_values + 1 ? 0 : i);  // the last: the first again
      const annotation args[] = {{.name = "s", .value = std::string_view(v)}};
      b.instant(track, 1000 + static_cast<std::int64_t>(i), "mark", "cpu_op", args);
    }
  }
  std::vector<std::pair<std::uint32_t, std::uint64_t>> values;  // per instant: the value's field, its iid
  std::size_t interned_entries = 0;
  for (const auto& packet : decode(out)) {
    const auto p = decode(packet.bytes);
    if (const pb_field* in = one(p, 12)) interned_entries += all(decode(in->bytes), 29).size();
    if (const pb_field* ev = one(p, 11))
      for (const auto& a : all(decode(ev->bytes), 4)) {
        const auto ann = decode(a.bytes);
        if (const pb_field* iid = one(ann, 17)) values.emplace_back(17, iid->value);
        else if (one(ann, 6)) values.emplace_back(6, 0);
      }
  }
  const std::size_t cap = perfetto_builder::max_interned_values;
  REQUIRE(values.size() == cap + 2);
  CHECK(interned_entries == cap);
  CHECK(values[0] == std::pair<std::uint32_t, std::uint64_t>{17, 1});
  CHECK(values[cap - 1].first == 17);
  CHECK(values[cap].first == 6);  // past the bound: in place
  CHECK(values[cap + 1] == std::pair<std::uint32_t, std::uint64_t>{17, 1});  // the first value, by its id still
  const collected c = read_bytes(out);
  REQUIRE(c.events.size() == cap + 2);
  CHECK(std::get<std::string>(c.events[cap].args[0].value) == "a value that never repeats #" + std::to_string(cap));
  CHECK(std::get<std::string>(c.events[cap + 1].args[0].value) == "a value that never repeats #0");
}

TEST_CASE("read_perfetto gives back slices (in END order), instants, counters, tracks and typed args") {
  const sample s;
  const collected c = read_bytes(s.out);
  CHECK_FALSE(c.result.truncated);
  CHECK(c.result.open_slices == 0);
  REQUIRE(c.events.size() == 5);
  const decoded_event &inner = c.events[0], &outer = c.events[1];
  CHECK(inner.name == "inner");
  CHECK(inner.start_ns == 1100);
  CHECK(inner.dur_ns == 100);
  CHECK(outer.name == "outer");
  CHECK(outer.category == "user_annotation");
  CHECK(outer.dur_ns == 1000);
  CHECK(outer.track->pid == 100);
  CHECK(outer.track->tid == 101);
  CHECK(outer.track->thread_name == "main");
  REQUIRE(outer.args.size() == 7);
  CHECK(std::get<std::int64_t>(outer.args[0].value) == -5);
  CHECK(std::get<std::uint64_t>(outer.args[1].value) == 7);
  CHECK(std::get<double>(outer.args[2].value) == 2.5);
  CHECK(std::get<bool>(outer.args[3].value));
  CHECK(std::get<std::string>(outer.args[4].value) == "text");
  CHECK(std::get<decoded_json>(outer.args[5].value).text == "[[2, 3]]");
  CHECK(std::get<std::string>(outer.args[6].value) == long_text);
  CHECK(outer.flow_ids == std::vector<std::uint64_t>{42});
  CHECK(outer.terminating_flow_ids == std::vector<std::uint64_t>{43});
  CHECK(c.events[2].type == decoded_event::kind::instant);
  REQUIRE(c.events[2].args.size() == 1);
  CHECK(std::get<std::string>(c.events[2].args[0].value) == long_text);
  CHECK(c.events[3].type == decoded_event::kind::counter);
  CHECK(c.events[3].name == "mem");
  CHECK(c.events[3].value == 3.5);
  CHECK(c.events[4].track->name == "stream 7");
  CHECK(c.events[4].track->pid == 100);  // from its process
  CHECK(c.events[4].category == "kernel");
  CHECK(c.tracks.size() == 4);
}

TEST_CASE("a thread's sequence: its track and clock by default, timestamps as deltas (one negative), read back exactly; "
          "a one-off name written in the event") {
  std::string out;
  std::uint64_t thread = 0, other = 0;
  {
    packet_stage stage(out);  // shared: the main sequence's packets and the thread's interleave in order
    perfetto_builder main(stage, 1);
    thread = main.thread_track(100, 101, "main");
    other = main.named_track("elsewhere", 0, 1);
    perfetto_builder t(stage, 3, {.default_track = thread, .origin_unix_ns = 5'000});
    const std::uint64_t id = t.intern_annotation_name("External id");
    t.slice_pair(thread, 6'000, 6'500, t.intern_name("leaf"), t.intern_category("cpu_op"), id, 9);  // interned: general path
    t.slice_pair(thread, 7'000, 7'040, t.intern_name("leaf"), t.intern_category("cpu_op"), id, 10);  // the fast path
    t.slice_begin(thread, 8'000, perfetto_builder::one_off_name{"outer"}, "user_annotation");  // not interned
    t.instant(thread, 7'500, "late", "cpu_instant_event");  // before the last: a negative delta
    t.slice_begin(other, 8'050, "away", "c");  // another track: named, still a delta
    t.slice_end(other, 8'100);
    main.instant(other, 8'060, "main's", "c");  // absolute, between the thread's packets
    t.slice_pair(thread, 8'010, 8'030, t.intern_name("leaf"), t.intern_category("cpu_op"), id, 11);  // negative, fast path
    t.slice_end(thread, 9'000);
  }
  // By hand: the thread's first packet sets the defaults and clock 64; its
  // events name neither track nor clock, but the one on the other track.
  std::vector<std::int64_t> deltas;
  std::vector<std::string> inline_names;
  int omitted_tracks = 0;
  bool defaults_seen = false;
  for (const auto& packet : decode(out)) {
    const auto p = decode(packet.bytes);
    if (one(p, 10)->value != 3) continue;
    if (const pb_field* d = one(p, 59)) {
      const auto defaults = decode(d->bytes);
      CHECK(one(defaults, 58)->value == 64);
      CHECK(one(decode(one(defaults, 11)->bytes), 11)->value == thread);
      CHECK(one(p, 13)->value == 1);
      std::map<std::uint64_t, std::pair<std::uint64_t, bool>> clocks;
      for (const auto& c : all(decode(one(p, 6)->bytes), 1)) {
        const auto clock = decode(c.bytes);
        clocks[one(clock, 1)->value] = {one(clock, 2)->value, one(clock, 3) && one(clock, 3)->value == 1};
      }
      CHECK(clocks == std::map<std::uint64_t, std::pair<std::uint64_t, bool>>{{1, {5'000, false}}, {64, {5'000, true}}});
      defaults_seen = true;
    }
    if (!one(p, 11)) continue;
    CHECK(one(p, 58) == nullptr);
    deltas.push_back(static_cast<std::int64_t>(one(p, 8)->value));
    const auto ev = decode(one(p, 11)->bytes);
    if (const pb_field* name = one(ev, 23)) {
      inline_names.emplace_back(name->bytes);
      CHECK(one(ev, 10) == nullptr);
    }
    if (const pb_field* in = one(p, 12)) {
      for (const auto& e : all(decode(in->bytes), 2)) CHECK(one(decode(e.bytes), 2)->bytes != "outer");
    }
    if (!one(ev, 11)) ++omitted_tracks;
    else CHECK(one(ev, 11)->value == other);
  }
  CHECK(defaults_seen);
  CHECK(deltas == std::vector<std::int64_t>{1'000, 500, 500, 40, 960, -500, 550, 50, -90, 20, 970});
  CHECK(omitted_tracks == 9);
  CHECK(inline_names == std::vector<std::string>{"outer"});
  // And the library's reader.
  const collected c = read_bytes(out);
  CHECK(c.result.open_slices == 0);
  CHECK(c.result.unmatched_ends == 0);
  std::vector<std::string> got;
  for (const decoded_event& e : c.events)
    got.push_back(e.name + " " + std::to_string(e.start_ns) + "+" + std::to_string(e.dur_ns) + " on " + e.track->name +
                  std::to_string(e.track->tid));
  CHECK(got == std::vector<std::string>{"leaf 6000+500 on 101", "leaf 7000+40 on 101", "late 7500+0 on 101",
                                        "away 8050+50 on elsewhere0", "main's 8060+0 on elsewhere0",
                                        "leaf 8010+20 on 101", "outer 8000+1000 on 101"});
}

TEST_CASE("an event on a sequence clock that no snapshot declared is skipped and counted, the rest read") {
  std::string out;
  {
    perfetto_builder main(out, 1);
    const std::uint64_t thread = main.thread_track(100, 101, "main");
    main.instant(thread, 1'000, "placed", "c");
    // By hand: sequence 5, clock 64 (never declared on it), an instant.
    std::string packet, event;
    proto::put_uint(event, 9, 3);  // TYPE_INSTANT
    proto::put_uint(event, 11, thread);
    proto::put_string(event, 23, "unplaced");
    proto::put_uint(packet, 10, 5);
    proto::put_uint(packet, 8, 2'000);
    proto::put_uint(packet, 58, 64);
    proto::put_string(packet, 11, event);
    main.out();  // what the builder staged, first
    proto::put_string(out, 1, packet);
    main.instant(thread, 3'000, "placed too", "c");
  }
  const collected c = read_bytes(out);
  CHECK(c.result.unplaced == 1);
  REQUIRE(c.events.size() == 2);
  CHECK(c.events[0].name == "placed");
  CHECK(c.events[1].name == "placed too");
  CHECK(c.events[1].start_ns == 3'000);
}

TEST_CASE("a file cut anywhere: everything before the cut, `truncated` unless the cut is between packets") {
  const sample s;
  std::set<std::size_t> boundaries = {0};
  std::size_t at = 0;
  for (const auto& packet : decode(s.out)) {
    at = static_cast<std::size_t>(packet.bytes.data() + packet.bytes.size() - s.out.data());
    boundaries.insert(at);
  }
  CHECK(at == s.out.size());
  std::size_t last_events = 0;
  for (std::size_t cut = 0; cut <= s.out.size(); ++cut) {
    CAPTURE(cut);
    collected c;
    REQUIRE_NOTHROW(c = read_bytes(s.out.substr(0, cut)));
    CHECK(c.result.truncated == (boundaries.count(cut) == 0));
    if (c.result.truncated) CHECK(c.result.truncation.find("inside packet") != std::string::npos);
    CHECK(c.events.size() >= last_events);
    last_events = c.events.size();
  }
  CHECK(last_events == 5);
}

TEST_CASE("garbage is refused with a clear error, and no mutation of a trace crashes the reader") {
  CHECK_THROWS_WITH_AS(read_bytes("{\"traceEvents\": []}"), doctest::Contains("not a Perfetto trace"), perfetto_error);
  CHECK_THROWS_WITH_AS(read_bytes(std::string("\x0a\x02\x08", 3) + std::string("\xff\xff", 2)),
                       doctest::Contains("malformed TracePacket"), perfetto_error);
  const sample s;
  CHECK_THROWS_WITH_AS(read_bytes(s.out + "xyz"), doctest::Contains("garbage"), perfetto_error);
  std::mt19937 rng(12345);
  for (int round = 0; round < 3000; ++round) {
    std::string m = s.out;
    for (int k = 0; k < 1 + round % 4; ++k) m[rng() % m.size()] = static_cast<char>(rng());
    try {
      (void)read_bytes(m);
    } catch (const perfetto_error&) {
    }
  }
}

TEST_CASE("the Kineto JSON written from a decoded trace") {
  const sample s;
  std::ostringstream json;
  decoded_json_writer w(json);
  std::istringstream in(s.out);
  read_perfetto(in, w.callbacks());
  w.finish();
  const auto doc = boost::json::parse(json.str()).as_object();
  CHECK(doc.at("displayTimeUnit") == "ms");
  const std::int64_t base = doc.at("baseTimeNanoseconds").as_int64();
  std::map<std::string, boost::json::object> by_name;
  std::set<std::string> metadata;
  for (const auto& v : doc.at("traceEvents").as_array()) {
    const auto& e = v.as_object();
    if (e.at("ph") == "M") metadata.insert(std::string(e.at("name").as_string()) + "=" +
                                           std::string(e.at("args").at("name").as_string()));
    else by_name.emplace(std::string(e.at("ph").as_string()) + std::string(e.at("name").as_string()), e);  // the first
  }
  CHECK(metadata == std::set<std::string>{"process_name=proc", "thread_name=main"});
  const auto& outer = by_name.at("Xinner");
  CHECK(outer.at("pid") == 100);
  CHECK(outer.at("tid") == 101);
  CHECK(base + std::llround(outer.at("ts").to_number<double>() * 1000) == 1100);
  CHECK(outer.at("dur").to_number<double>() == doctest::Approx(0.1));
  const auto& args = by_name.at("Xouter").at("args").as_object();
  CHECK(args.at("j") == boost::json::parse("[[2, 3]]"));
  CHECK(args.at("s") == "text");
  CHECK(args.at("i") == -5);
  CHECK(by_name.at("imark").at("s") == "t");
  CHECK(by_name.at("Cmem").at("args").at("mem").to_number<double>() == 3.5);
}

TEST_CASE("json_events_scanner: elements and members whatever the chunking, strings and escapes respected") {
  const std::string text =
      "{\"schemaVersion\": 1, \"name\\\"}]\": \"a, \\\"b\\\" }]\",\n \"traceEvents\": [\n  {\"name\": \"x}]\\\\\", "
      "\"args\": {\"a\": [1, {\"b\": \"]\"}]}},\n  {\"name\": \"y\"}\n ],\n \"baseTimeNanoseconds\": 1000 }\n";
  for (const std::size_t chunk : {std::size_t{1}, std::size_t{7}, text.size()}) {
    CAPTURE(chunk);
    std::vector<std::string> elements, members;
    json_events_scanner s([&](std::string_view e) { elements.emplace_back(e); },
                          [&](std::string_view k, std::string_view v) { members.push_back(std::string(k) + "=" + std::string(v)); });
    for (std::size_t i = 0; i < text.size(); i += chunk) s.feed(std::string_view(text).substr(i, chunk));
    CHECK_FALSE(s.finish());
    REQUIRE(elements.size() == 2);
    CHECK(boost::json::parse(elements[0]).at("name") == "x}]\\");
    CHECK(elements[1] == "{\"name\": \"y\"}");
    CHECK(members == std::vector<std::string>{"schemaVersion=1", "name\\\"}]=\"a, \\\"b\\\" }]\"",
                                              "baseTimeNanoseconds=1000"});
  }
  json_events_scanner cut([](std::string_view) {}, {});
  cut.feed(std::string_view(text).substr(0, text.find("{\"name\": \"y")));
  CHECK(cut.finish());  // cut inside traceEvents
  json_events_scanner array([](std::string_view) {}, {});
  CHECK_THROWS_WITH(array.feed("[1, 2]"), doctest::Contains("not a JSON object"));
  json_events_scanner none([](std::string_view) {}, {});
  none.feed("{\"a\": 1}");
  CHECK_THROWS_WITH(none.finish(), doctest::Contains("traceEvents"));
  // A top-level key is bounded like an element: nothing longer is held.
  json_events_scanner long_key([](std::string_view) {}, {}, 64);
  long_key.feed("{\"" + std::string(64, 'k'));
  CHECK_THROWS_WITH(long_key.feed("k"), doctest::Contains("a top-level key is longer than"));
}

TEST_CASE("json_events_scanner: an element over the bound is refused at the same byte whatever the chunking") {
  const std::string text = "{\"traceEvents\": [{\"name\": \"x\"},\n {\"name\": \"" + std::string(40, 'y') + "\"}]}";
  const std::size_t second = text.find("{\"name\": \"y");
  const std::string at = "(at byte " + std::to_string(second + 33) + ")";  // its 33rd byte passes 32
  for (const std::size_t chunk : {std::size_t{1}, std::size_t{5}, std::size_t{16}, text.size()}) {
    CAPTURE(chunk);
    std::size_t elements = 0;
    json_events_scanner s([&](std::string_view) { ++elements; }, {}, 32);
    std::string message;
    try {
      for (std::size_t i = 0; i < text.size(); i += chunk) s.feed(std::string_view(text).substr(i, chunk));
    } catch (const json_events_scanner::error& e) {
      CHECK(e.what_kind == json_events_scanner::error::kind::too_long);
      message = e.what();
    }
    CHECK(elements == 1);
    CHECK(message.ends_with(at));
  }
}

TEST_CASE("kineto_event_reader reads what boost::json::parse reads: the same texts refused, the same fields and args") {
  std::string long_name = "\"name\": \"";
  for (int i = 0; i < 3000; ++i) long_name += "ab\\n";  // escapes past the parser's 4 KiB buffer: a string in parts
  long_name += "\"";
  std::string deep = "{\"args\": {\"a\": ";
  for (int i = 0; i < 40; ++i) deep += "[";  // past the default maximum depth
  const std::vector<std::string> texts = {
      R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 1.5, "dur": 2,
          "args": {"External id": 3, "Input Dims": [[64, 128], []], "s": "t\"x\u00e9\\", "b": true, "n": null,
                   "d": -0.0, "big": 18446744073709551615, "f": 1.25e-3, "e": 1E2, "o": {"k": [1, {"z": null}]}}})",
      R"({"ph": "i", "ph": "X", "args": {"a": 1, "b": {"x": 1, "x": [2]}, "a": "again"}, "args": {"c": 3, "c": 4}})",
      R"({"ph": "C", "name": "mem", "args": [1, {"a": 2}], "ts": 1e400})",
      R"({"args": {"a": 1}, "args": null, "id": {"local": 7}})",
      R"({"n\u0061me": "escaped key", "args": {"k\"ey": 1, "": "empty key"}, "s": "p"})",
      R"({"pid": "stream 7", "tid": 1.0, "id": 2.5, "ts": -9223372036854775809})",
      R"({"pid": -9223372036854775808, "tid": 9223372036854775808, "id": "x", "cat": 5, "name": ["n"]})",
      R"({"ph": "s", "id": 7, "pid": 1000, "tid": 1000, "ts": 1.000, "cat": "ac2g", "name": "ac2g"})",
      "{" + long_name + ", \"args\": {" + long_name + "}}",
      "  {}  ",
      R"({"ph": "X",})", R"({"ts": NaN})", R"({"a": 1} x)", "{\"a\": \"\xff\"}", R"({"a": 01})", "[1]", "\"str\"", "",
      deep,
  };
  kineto_event_reader reader;
  for (const std::string& t : texts) {
    CAPTURE(t);
    CHECK(kineto_event_mismatch(reader, t) == "");
  }
  // Mutations of the valid ones: refused and read alike.
  std::mt19937 random(36);
  const std::string_view alphabet = "{}[]\",:\\0123456789.-+eEtrufalsn u\x80\xc3\xa9";
  for (int i = 0; i < 6000; ++i) {
    std::string t = texts[i % 8];
    for (int n = 1 + static_cast<int>(random() % 3); n > 0; --n)
      t[random() % t.size()] = alphabet[random() % alphabet.size()];
    CAPTURE(t);
    CHECK(kineto_event_mismatch(reader, t) == "");
  }
}

TEST_CASE("kineto_to_perfetto nests a thread's X events whatever their order in the file") {
  test_support::temp_dir dir("perfetto-nesting");
  const auto in = dir.path / "t.json", out = dir.path / "t.pftrace";
  // In END order (children first), a child sharing its parent's start, and
  // a child that outlives its parent (cut at the parent's end).
  std::ofstream(in) << R"({"traceEvents": [
    {"ph": "X", "name": "leaf", "cat": "c", "pid": 1, "tid": 1, "ts": 10, "dur": 2},
    {"ph": "X", "name": "child", "cat": "c", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
    {"ph": "X", "name": "parent", "cat": "c", "pid": 1, "tid": 1, "ts": 10, "dur": 20},
    {"ph": "X", "name": "late", "cat": "c", "pid": 1, "tid": 1, "ts": 25, "dur": 10}
  ], "baseTimeNanoseconds": 0})";
  const kineto_conversion r = kineto_to_perfetto(in, out);
  CHECK(r.slices == 4);
  std::vector<std::string> ends;
  perfetto_callbacks cb;
  cb.on_event = [&](const decoded_event& e) {
    ends.push_back(e.name + " " + std::to_string(e.start_ns) + "+" + std::to_string(e.dur_ns));
    return true;
  };
  const auto result = read_perfetto(out, cb);
  CHECK(result.open_slices == 0);
  CHECK(result.unmatched_ends == 0);
  CHECK(ends == std::vector<std::string>{"leaf 10000+2000", "child 10000+5000", "late 25000+5000", "parent 10000+20000"});
}

TEST_CASE("kineto_to_perfetto binds a flow to one slice, the innermost starting at its time") {
  test_support::temp_dir dir("perfetto-flows");
  const auto in = dir.path / "t.json", out = dir.path / "t.pftrace";
  // A kernel inside a GPU annotation, both starting at 20 on stream 7: the flow ends on the kernel only.
  std::ofstream(in) << R"({"traceEvents": [
    {"ph": "X", "name": "cudaLaunchKernel", "cat": "cuda_runtime", "pid": 1, "tid": 1, "ts": 10, "dur": 2},
    {"ph": "s", "id": 501, "cat": "ac2g", "name": "ac2g", "pid": 1, "tid": 1, "ts": 10},
    {"ph": "X", "name": "annotation", "cat": "gpu_user_annotation", "pid": 0, "tid": 7, "ts": 20, "dur": 30},
    {"ph": "X", "name": "kernel", "cat": "kernel", "pid": 0, "tid": 7, "ts": 20, "dur": 5},
    {"ph": "f", "id": 501, "bp": "e", "cat": "ac2g", "name": "ac2g", "pid": 0, "tid": 7, "ts": 20}
  ], "baseTimeNanoseconds": 0})";
  const kineto_conversion r = kineto_to_perfetto(in, out);
  CHECK(r.flows == 2);
  std::map<std::string, std::size_t> starts, ends;
  perfetto_callbacks cb;
  cb.on_event = [&](const decoded_event& e) {
    starts[e.name] += e.flow_ids.size();
    ends[e.name] += e.terminating_flow_ids.size();
    return true;
  };
  read_perfetto(out, cb);
  CHECK(starts["cudaLaunchKernel"] == 1);
  CHECK(ends["kernel"] == 1);
  CHECK(ends["annotation"] == 0);
}

TEST_CASE("an instant's scope survives JSON -> .pftrace -> JSON: thread, process and global") {
  test_support::temp_dir dir("perfetto-instant-scope");
  const auto in = dir.path / "t.json", mid = dir.path / "t.pftrace", back = dir.path / "back.json";
  std::ofstream(in) << R"({"traceEvents": [
    {"ph": "X", "name": "work", "cat": "c", "pid": 7, "tid": 8, "ts": 10, "dur": 20},
    {"ph": "i", "s": "t", "name": "on thread", "cat": "c", "pid": 7, "tid": 8, "ts": 12},
    {"ph": "i", "s": "p", "name": "on process", "cat": "c", "pid": 7, "tid": 8, "ts": 13},
    {"ph": "i", "s": "g", "name": "global", "cat": "c", "pid": 7, "tid": 8, "ts": 14}
  ], "baseTimeNanoseconds": 0})";
  kineto_to_perfetto(in, mid);
  perfetto_to_kineto(mid, back);
  std::ifstream text(back);
  std::stringstream all;
  all << text.rdbuf();
  std::map<std::string, std::string> scope;
  const boost::json::value trace = boost::json::parse(all.str());
  for (const auto& e : trace.at("traceEvents").as_array())
    if (e.at("ph").as_string() == "i") scope[std::string(e.at("name").as_string())] = e.at("s").as_string();
  CHECK(scope["on thread"] == "t");
  CHECK(scope["on process"] == "p");
  CHECK(scope["global"] == "g");
}

TEST_CASE("a counter's non-finite samples (null in JSON) survive JSON -> .pftrace -> JSON as null") {
  test_support::temp_dir dir("perfetto-nan-counter");
  const auto in = dir.path / "t.json", mid = dir.path / "t.pftrace", back = dir.path / "back.json";
  std::ofstream(in) << R"({"traceEvents": [
    {"ph": "C", "name": "residual", "pid": 7, "tid": 8, "ts": 10, "args": {"residual": 0.5}},
    {"ph": "C", "name": "residual", "pid": 7, "tid": 8, "ts": 11, "args": {"residual": null}},
    {"ph": "C", "name": "residual", "pid": 7, "tid": 8, "ts": 12, "args": {"residual": 0.25}}
  ], "baseTimeNanoseconds": 0})";
  const kineto_conversion r = kineto_to_perfetto(in, mid);
  CHECK(r.counters == 3);
  perfetto_to_kineto(mid, back);
  std::ifstream text(back);
  std::stringstream all;
  all << text.rdbuf();
  std::vector<boost::json::value> samples;
  const boost::json::value trace = boost::json::parse(all.str());
  for (const auto& e : trace.at("traceEvents").as_array())
    if (e.at("ph").as_string() == "C") samples.push_back(e.at("args").at("residual"));
  REQUIRE(samples.size() == 3);
  CHECK(samples[0].to_number<double>() == 0.5);
  CHECK(samples[1].is_null());
  CHECK(samples[2].to_number<double>() == 0.25);
}
