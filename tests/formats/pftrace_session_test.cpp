// Sessions and Perfetto's format end to end: a session that streams
// .pftrace (the tensorboard handler's pftrace format, or stream_format),
// its exports in both formats, and a JSON session exported to .pftrace.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>

#include <proftrace/proftrace.hpp>

#include "protobuf_wire.hpp"
#include "test_support.hpp"
#include "formats/perfetto/perfetto_reader.hpp"

namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("proftrace-pftrace-session-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void work(int n) {
  for (int i = 0; i < n; ++i) {
    PROF_SCOPE("outer");
    { PROF_SCOPE("inner"); }
  }
}

void record(proftrace::profile& p) {
  p.start();
  std::thread t([] { work(30); });
  work(20);
  t.join();
  p.stop();
}

bool file_starts_with(const fs::path& file, std::string_view prefix) {
  std::ifstream in(file, std::ios::binary);
  std::string head(prefix.size(), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  return in && head == prefix;
}

// Slice counts by name, and the threads they were on, from a .pftrace.
struct pftrace_counts {
  std::map<std::string, int> by_name;
  std::map<std::string, std::set<std::int64_t>> threads;
  bool truncated = false;
};
pftrace_counts read_counts(const fs::path& file) {
  pftrace_counts c;
  proftrace::detail::perfetto_callbacks cb;
  cb.on_event = [&](const proftrace::detail::decoded_event& e) {
    if (e.type == proftrace::detail::decoded_event::kind::slice) {
      ++c.by_name[e.name];
      c.threads[e.name].insert(e.track->tid);
    }
    return true;
  };
  c.truncated = proftrace::detail::read_perfetto(file, cb).truncated;
  return c;
}

std::map<std::string, int> json_counts(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  std::map<std::string, int> counts;
  const boost::json::value trace = boost::json::parse(text.str());
  for (const auto& e : trace.at("traceEvents").as_array())
    if (e.at("ph").as_string() == "X") ++counts[std::string(e.at("name").as_string())];
  return counts;
}

int row_count(const proftrace::profile& p, const std::string& name) {
  for (const auto& row : p.key_averages())
    if (row.key == name) return static_cast<int>(row.count);
  return 0;
}

}  // namespace

TEST_CASE("a tensorboard handler writing .pftrace: the session streams Perfetto's format, every scope a slice") {
  const fs::path dir = fresh_dir("handler");
  proftrace::profile p({.on_trace_ready = proftrace::tensorboard_trace_handler(dir, "w", false, proftrace::trace_format::pftrace)});
  record(p);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  REQUIRE(files.size() == 1);
  CHECK(files[0].filename().string().ends_with(".pt.trace.pftrace"));
  CHECK(p.trace_path() == files[0]);  // the spool streamed the same format, and became the handler's file
  pftrace_counts c = read_counts(files[0]);
  CHECK_FALSE(c.truncated);
  CHECK(c.by_name["outer"] == 50);
  CHECK(c.by_name["inner"] == 50);
  CHECK(c.by_name["outer"] == row_count(p, "outer"));
  CHECK(c.threads["inner"].size() == 2);

  // The same trace as JSON: converted from the stream, every slice an "X".
  const fs::path json = dir / "again.json";
  p.export_chrome_trace(json);
  const auto counts = json_counts(json);
  CHECK(counts.at("outer") == 50);
  CHECK(counts.at("inner") == 50);
  fs::remove_all(dir);
}

TEST_CASE("a JSON session exports .pftrace, .pftrace.gz and .pftrace.zst by converting; stream_format picks Perfetto's directly") {
  const fs::path dir = fresh_dir("export");
  for (const auto format : {proftrace::trace_format::automatic, proftrace::trace_format::pftrace}) {
    CAPTURE(static_cast<int>(format));
    proftrace::profile p({.stream_format = format});
    record(p);
    CHECK(p.trace_path().string().ends_with(format == proftrace::trace_format::pftrace ? ".pftrace.part" : ".json.part"));
    for (const char* name : {"t.pftrace", "t.pftrace.gz", "t.pftrace.zst"}) {
      CAPTURE(name);
      p.export_chrome_trace(dir / name);
      // Compressed as the suffix says, around Perfetto's bytes (a Trace.packet key first).
      const std::string_view magic = std::string_view(name).ends_with(".zst") ? "\x28\xb5\x2f\xfd"
                                     : std::string_view(name).ends_with(".gz") ? "\x1f\x8b"
                                                                               : "\x0a";
      CHECK(file_starts_with(dir / name, magic));
      pftrace_counts c = read_counts(dir / name);
      CHECK(c.by_name["outer"] == 50);
      CHECK(c.by_name["inner"] == 50);
    }
    p.export_chrome_trace(dir / "t.json");
    CHECK(json_counts(dir / "t.json").at("inner") == 50);
    // Nothing but the exports is left behind (no temporary of the conversion).
    int files = 0;
    for (const auto& e : fs::directory_iterator(dir)) files += e.path().filename().string()[0] != '.' ? 1 : 100;
    CHECK(files == 4);
  }
  fs::remove_all(dir);
}

TEST_CASE("an export to a suffix that names no trace format warns and writes plain JSON, as torch does") {
  const fs::path dir = fresh_dir("unknown_suffix");
  for (const auto format : {proftrace::trace_format::json, proftrace::trace_format::pftrace}) {
    proftrace::profile p({.stream_format = format});
    record(p);
    for (const char* name : {"t.json.xz", "t.pftrace.bz2", "t.trace", "trace"}) {
      CAPTURE(name);
      test_support::warning_capture warnings;
      p.export_chrome_trace(dir / name);
      CHECK(warnings.contains("names no trace format"));
      CHECK(warnings.contains("'" + (dir / name).string() + "'"));
      CHECK(file_starts_with(dir / name, "{"));
      CHECK(json_counts(dir / name).at("inner") == 50);
    }
    for (const char* name : {"t.json", "t.gz", "t.pftrace.zst"}) {  // torch gzips any ".gz"
      test_support::warning_capture warnings;
      p.export_chrome_trace(dir / name);
      CHECK_FALSE(warnings.contains("names no trace format"));
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("a .pftrace session's JSON export names and orders processes and threads as a JSON session's does") {
  const fs::path dir = fresh_dir("metadata-events");
  // name, pid, tid, args: every "M" event of a trace, apart from its ts
  const auto metadata_events = [](const fs::path& file) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    std::multiset<std::string> out;
    const boost::json::value trace = boost::json::parse(text.str());
    for (const auto& v : trace.at("traceEvents").as_array()) {
      const auto& e = v.as_object();
      if (e.at("ph").as_string() != "M") continue;
      out.insert(std::string(e.at("name").as_string()) + " " + boost::json::serialize(e.at("pid")) + " " +
                 boost::json::serialize(e.at("tid")) + " " + boost::json::serialize(e.at("args")));
    }
    return out;
  };
  std::multiset<std::string> seen[2];
  for (const auto format : {proftrace::trace_format::json, proftrace::trace_format::pftrace}) {
    proftrace::profile p({.stream_format = format});
    record(p);
    const fs::path json = dir / (format == proftrace::trace_format::json ? "from-json.json" : "from-pftrace.json");
    p.export_chrome_trace(json);
    seen[format == proftrace::trace_format::json ? 0 : 1] = metadata_events(json);
  }
  // The threads' tids differ between the two runs: compare the kinds of events per process and thread.
  const auto kinds = [](const std::multiset<std::string>& events) {
    std::multiset<std::string> k;
    for (const auto& e : events) k.insert(e.substr(0, e.find(' ')));
    return k;
  };
  CHECK(kinds(seen[1]) == kinds(seen[0]));
  CHECK(kinds(seen[1]).count("process_labels") == 1);
  CHECK(kinds(seen[1]).count("thread_sort_index") == 2);
  // The process's events are the same in both, args included (tid 0,
  // labels "CPU", sort index the pid); a thread sorts by its tid.
  std::multiset<std::string> process_events[2];
  for (int i = 0; i < 2; ++i)
    for (const auto& e : seen[i])
      if (e.starts_with("process_")) process_events[i].insert(e);
  CHECK(process_events[1] == process_events[0]);
  CHECK(process_events[1].count("process_labels " + std::to_string(::getpid()) + " 0 {\"labels\":\"CPU\"}") == 1);
  CHECK(process_events[1].count("process_sort_index " + std::to_string(::getpid()) + " 0 {\"sort_index\":" +
                                std::to_string(::getpid()) + "}") == 1);
  for (const auto& e : seen[1]) {
    if (!e.starts_with("thread_sort_index ")) continue;
    std::istringstream fields(e);
    std::string name, pid, tid;
    fields >> name >> pid >> tid;
    CHECK(e.ends_with("{\"sort_index\":" + tid + "}"));
  }
  fs::remove_all(dir);
}

TEST_CASE("trace-wide metadata (a user's keys, clockAlignment) reaches the .pftrace and comes back as top-level JSON") {
  const fs::path dir = fresh_dir("metadata");
  for (const auto format : {proftrace::trace_format::json, proftrace::trace_format::pftrace}) {
    CAPTURE(static_cast<int>(format));
    proftrace::profile p({.stream_format = format});
    p.add_metadata_json("run", R"({"id": 7, "tag": "nightly"})");  // before recording: in the trace's head
    record(p);
    p.add_metadata("note", "after stop");  // after: in its tail
    p.export_chrome_trace(dir / "t.pftrace");
    std::map<std::string, std::string> found;
    proftrace::detail::perfetto_callbacks cb;
    cb.on_metadata = [&](const std::string& name, const std::string& json) { found[name] = json; };
    proftrace::detail::read_perfetto(dir / "t.pftrace", cb);
    REQUIRE(found.contains("run"));
    CHECK(boost::json::parse(found["run"]) == boost::json::parse(R"({"id": 7, "tag": "nightly"})"));
    CHECK(found["note"] == "\"after stop\"");
    CHECK(found.contains("clockAlignment"));
    CHECK(found.contains("baseTimeNanoseconds"));
    // The session's own JSON and the .pftrace converted back agree on them.
    p.export_chrome_trace(dir / "t.json");
    std::ifstream in(dir / "t.json");
    std::stringstream text;
    text << in.rdbuf();
    const auto own = boost::json::parse(text.str()).as_object();
    for (const char* key : {"run", "note", "clockAlignment", "baseTimeNanoseconds"}) {
      CAPTURE(key);
      REQUIRE(own.contains(key));
      CHECK(boost::json::parse(found[key]) == own.at(key));
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("the first plain export on the spool's file system takes the spool itself; later exports copy; nothing is lost") {
  for (const auto format : {proftrace::trace_format::json, proftrace::trace_format::pftrace}) {
    CAPTURE(static_cast<int>(format));
    const fs::path dir = fresh_dir("move");
    const bool pf = format == proftrace::trace_format::pftrace;
    const std::string ext = pf ? ".pftrace" : ".json";
    fs::path spool;
    {
      proftrace::profile p({.stream_format = format, .spool_dir = dir / "spool"});
      fs::create_directories(dir / "spool");
      record(p);
      spool = p.trace_path();
      REQUIRE(fs::exists(spool));
      p.export_chrome_trace(dir / ("first" + ext));
      CHECK_FALSE(fs::exists(spool));               // renamed, not copied
      CHECK(p.trace_path() == dir / ("first" + ext));
      p.export_chrome_trace(dir / ("second" + ext));  // read through the open file
      p.export_chrome_trace(dir / ("third" + ext + ".gz"));
      fs::remove(dir / ("first" + ext));            // the user's file: later exports do not need it
      p.export_chrome_trace(dir / ("fourth" + ext));
    }  // the session ends: it removes no export
    for (const char* name : {"second", "fourth"}) {
      CAPTURE(name);
      const fs::path f = dir / (name + ext);
      REQUIRE(fs::exists(f));
      if (pf) CHECK(read_counts(f).by_name["inner"] == 50);
      else CHECK(json_counts(f).at("inner") == 50);
    }
    CHECK(fs::exists(dir / ("third" + ext + ".gz")));
    CHECK(fs::is_empty(dir / "spool"));
    fs::remove_all(dir);
  }
}

TEST_CASE("after the first export took the spool, a change to that file is an error of later exports, never their content") {
  for (const auto format : {proftrace::trace_format::json, proftrace::trace_format::pftrace}) {
    CAPTURE(static_cast<int>(format));
    const fs::path dir = fresh_dir("taken-changed");
    const std::string ext = format == proftrace::trace_format::pftrace ? ".pftrace" : ".json";
    proftrace::profile p({.stream_format = format, .spool_dir = dir});
    record(p);
    const fs::path first = dir / ("first" + ext);
    p.export_chrome_trace(first);
    const auto size = fs::file_size(first);
    for (const auto rewritten : {size, size + 100, size / 2}) {  // the same size, longer, shorter: in place
      CAPTURE(rewritten);
      std::ofstream(first, std::ios::trunc | std::ios::binary) << std::string(rewritten, 'X');
      CHECK_THROWS_WITH_AS(p.export_chrome_trace(dir / ("again" + ext)), doctest::Contains("changed since"),
                           std::runtime_error);
      CHECK_THROWS_WITH_AS(p.export_chrome_trace(dir / "other.json.gz"), doctest::Contains("changed since"),
                           std::runtime_error);
      CHECK_FALSE(fs::exists(dir / ("again" + ext)));
    }
    fs::remove_all(dir);
  }
}

TEST_CASE("threads that come and go while streaming .pftrace: each on a sequence of its own, every scope read back") {
  const fs::path dir = fresh_dir("churn");
  proftrace::profile p({.stream_format = proftrace::trace_format::pftrace});
  p.start();
  constexpr int threads = 40;
  for (int i = 0; i < threads; ++i) {
    std::thread t([] { work(5); });
    t.join();
    if (i % 10 == 9) p.flush();  // the flusher sees some of them end (and drops their sequences) mid-trace;
                                 // trace_writers_test checks a dropped sequence's tid coming back
  }
  work(5);
  p.stop();
  const fs::path file = dir / "t.pftrace";
  p.export_chrome_trace(file);
  const pftrace_counts c = read_counts(file);
  CHECK_FALSE(c.truncated);
  CHECK(c.by_name.at("outer") == 5 * (threads + 1));
  CHECK(c.by_name.at("inner") == 5 * (threads + 1));
  // The trace's own sequences: events, closing counters, one per thread
  // (at least; a thread seen again after its sequence was dropped gets another).
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::set<std::uint64_t> sequences;
  for (const auto& packet : test_wire::decode(bytes)) {
    const auto fields = test_wire::decode(packet.bytes);
    const auto* sequence = test_wire::one(fields, 10);
    REQUIRE(sequence != nullptr);
    sequences.insert(sequence->value);
  }
  CHECK(sequences.size() >= threads + 3);
  fs::remove_all(dir);
}

// Perfetto nests slices by their order in the file where timestamps tie,
// so on a thread's sequence every SLICE_BEGIN and SLICE_END comes in time
// order: an outer scope's begin is written before its children's packets
// (perfetto_writer.hpp). The sequence's clock is incremental: each packet's
// timestamp (field 8) is a delta, which may be negative (two's complement)
// for the thread's other events, such as instants, and stays exact.
// The slice packets of each thread's sequence (incremental clock), decoded
// independently: how many, how many go back in time from the previous one,
// and on how many sequences BEGINs and ENDs differ in number.
struct slice_order {
  int slices = 0, out_of_order = 0, unbalanced = 0;
};
slice_order slice_order_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  struct sequence_time {
    bool incremental = false;
    std::uint64_t now = 0;         // relative to the sequence's origin, wrapping as the deltas do
    std::uint64_t last_slice = 0;  // the time of its last slice packet
    bool any_slice = false;
    int open = 0;  // BEGINs less ENDs
  };
  std::map<std::uint64_t, sequence_time> sequences;
  slice_order r;
  for (const auto& packet : test_wire::decode(bytes)) {
    const auto fields = test_wire::decode(packet.bytes);
    const auto* id = test_wire::one(fields, 10);
    if (id == nullptr) continue;
    sequence_time& seq = sequences[id->value];
    if (const auto* defaults = test_wire::one(fields, 59)) {  // trace_packet_defaults: timestamp_clock_id (58)
      const auto default_fields = test_wire::decode(defaults->bytes);
      const auto* clock = test_wire::one(default_fields, 58);
      seq.incremental = clock != nullptr && clock->value >= 64;  // a sequence-scoped clock: ours is incremental
    }
    const auto* ts = test_wire::one(fields, 8);
    if (!seq.incremental || ts == nullptr) continue;
    seq.now += ts->value;
    const auto* event = test_wire::one(fields, 11);  // track_event
    const auto event_fields = event ? test_wire::decode(event->bytes) : std::vector<test_wire::pb_field>{};
    const auto* type = test_wire::one(event_fields, 9);
    if (type == nullptr || (type->value != 1 && type->value != 2)) continue;  // slice begins and ends only
    ++r.slices;
    seq.open += type->value == 1 ? 1 : -1;
    if (seq.any_slice && static_cast<std::int64_t>(seq.now - seq.last_slice) < 0) ++r.out_of_order;
    seq.last_slice = seq.now;
    seq.any_slice = true;
  }
  for (const auto& [id, seq] : sequences) r.unbalanced += seq.open != 0;
  return r;
}

TEST_CASE("on a thread's sequence, slice begins and ends are in time order: an outer scope's begin precedes its children") {
  const fs::path dir = fresh_dir("slice-order");
  proftrace::profile p({.stream_format = proftrace::trace_format::pftrace, .spool_dir = dir});
  const auto nested = [] {
    for (int i = 0; i < 50; ++i) {
      PROF_SCOPE("outer");
      { PROF_SCOPE("leaf"); }  // the first to close: it writes outer's begin first
      PROF_INSTANT("mark");    // the thread's other events go between
      PROF_COUNTER("level", i);
      {
        PROF_SCOPE("mid");
        { PROF_SCOPE("leaf"); }
        { PROF_SCOPE("leaf"); }
      }
    }
  };
  p.start();
  std::thread t(nested);
  nested();
  t.join();
  p.flush();  // drained as while recording (leaves closed at once), not by stop()'s cut at its time
  p.stop();
  const fs::path file = dir / "t.pftrace";
  p.export_chrome_trace(file);
  CHECK(read_counts(file).by_name.at("leaf") == 2 * 50 * 3);
  const slice_order order = slice_order_of(file);
  CHECK(order.slices == 2 * 50 * 5 * 2);  // outer, mid and three leaves, a begin and an end each, on two threads
  CHECK(order.out_of_order == 0);
  CHECK(order.unbalanced == 0);
  fs::remove_all(dir);
}

TEST_CASE("leaves directly under profile::step()'s spans: in order, balanced, as many as the JSON's, a step ended elsewhere too") {
  const fs::path dir = fresh_dir("step-leaves");
  proftrace::profile p({.schedule = proftrace::schedule({.wait = 0, .warmup = 1, .active = 6, .repeat = 1}),
                        .stream_format = proftrace::trace_format::pftrace,
                        .spool_dir = dir});
  const auto leaves = [] {
    for (int i = 0; i < 20; ++i) {
      PROF_SCOPE("leaf");  // its parent is the step's span, on a track of its own
    }
    PROF_SCOPE("parent");
    { PROF_SCOPE("inner"); }
  };
  p.start();
  for (int step = 0; step < 6; ++step) {  // the first in warmup
    leaves();
    p.flush();  // drained as while recording: leaves closed at once
    if (step == 3) std::thread([&] { p.step(); }).join();  // this step's span ends on another thread
    else p.step();
  }
  p.stop();
  const fs::path file = dir / "t.pftrace";
  p.export_chrome_trace(file);
  p.export_chrome_trace(dir / "t.json");
  const slice_order order = slice_order_of(file);
  CHECK(order.out_of_order == 0);
  CHECK(order.unbalanced == 0);
  const auto counts = read_counts(file);
  const auto json = json_counts(dir / "t.json");
  CHECK(counts.by_name.at("leaf") == 5 * 20);
  for (const char* name : {"leaf", "parent", "inner"}) CHECK(counts.by_name.at(name) == json.at(name));
  fs::remove_all(dir);
}

TEST_CASE("profile::step()'s spans streamed as .pftrace stay on their thread: read back, summarised and converted") {
  const fs::path dir = fresh_dir("step-thread");
  proftrace::profile p({.schedule = proftrace::schedule({.wait = 0, .warmup = 1, .active = 2, .repeat = 1}),
                        .stream_format = proftrace::trace_format::pftrace,
                        .spool_dir = dir});
  p.start();
  for (int step = 0; step < 3; ++step) {
    { PROF_SCOPE("work"); }
    p.step();
  }
  p.stop();
  const fs::path file = dir / "t.pftrace";
  p.export_chrome_trace(file);
  p.export_chrome_trace(dir / "t.json");  // converted from the .pftrace spool
  const auto counts = read_counts(file);
  REQUIRE(counts.threads.count("work"));
  REQUIRE(counts.threads.count("ProfilerStep#1"));
  CHECK(counts.threads.at("ProfilerStep#1") == counts.threads.at("work"));
  std::ifstream in(dir / "t.json");
  std::stringstream text;
  text << in.rdbuf();
  const boost::json::value trace = boost::json::parse(text.str());
  std::map<std::string, boost::json::value> tid_of;
  for (const auto& e : trace.at("traceEvents").as_array())
    if (e.at("ph").as_string() == "X") tid_of[std::string(e.at("name").as_string())] = e.at("tid");
  REQUIRE(tid_of.count("ProfilerStep#1"));
  CHECK(tid_of.at("ProfilerStep#1").is_int64());
  CHECK(tid_of.at("ProfilerStep#1") == tid_of.at("work"));
  fs::remove_all(dir);
}
