// The `proftrace` command line: the streaming trace reader every command reads through: events, order, bad and cut input.
// (Part of the CLI suites; helpers in cli_test_support.hpp.)
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <unistd.h>

#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filtering_stream.hpp>

#include <fstream>
#include <map>

#include "test_support.hpp"
#include "formats/perfetto/perfetto_builder.hpp"
#include "formats/perfetto/proto_encoder.hpp"
#include "cli_test_support.hpp"
#include "trace_pftrace.hpp"

using namespace cli_test_support;

TEST_CASE("the reader hands over metadata keys and every event") {
  std::uint64_t n = 0, memory = 0;
  std::string dims;
  pt::read_options opts;
  opts.chunk_size = 7;  // tiny chunks: strings, keys and numbers split across writes
  opts.on_event = [&](const pt::trace_event& e) {
    ++n;
    if (e.name == "[memory]") ++memory;
    if (e.name == "aten::addmm" && e.external_id == 4) dims = e.input_dims;
    return true;
  };
  const auto r = pt::read_trace(pytorch_trace, opts);
  CHECK(n == 36);
  CHECK(r.events == 36);
  CHECK(memory == 2);
  CHECK(dims == "[[256], [64, 128], [128, 256], [], []]");
  CHECK_FALSE(r.truncated);
  std::map<std::string, std::string> meta;
  for (auto& m : r.metadata) meta[m.key] = m.value;
  CHECK(meta.at("schemaVersion") == "1");
  CHECK(meta.at("displayTimeUnit") == "ms");
  CHECK(meta.at("distributedInfo") == "{...}");
  CHECK(meta.count("traceName") == 1);
}

TEST_CASE("events written in end order (children first) nest like events in start order") {
  temp_dir dir("cli-order");
  const std::string start_order = R"({"traceEvents": [
    {"ph":"X","cat":"user_annotation","name":"outer","pid":1,"tid":1,"ts":0,"dur":100},
    {"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":10,"dur":20},
    {"ph":"X","cat":"cpu_op","name":"leaf","pid":1,"tid":1,"ts":12,"dur":5},
    {"ph":"X","cat":"cpu_op","name":"b","pid":1,"tid":1,"ts":40,"dur":30},
    {"ph":"X","cat":"cpu_op","name":"leaf","pid":1,"tid":1,"ts":40,"dur":0},
    {"ph":"X","cat":"user_annotation","name":"outer","pid":1,"tid":1,"ts":200,"dur":10}]})";
  const std::string end_order = R"({"traceEvents": [
    {"ph":"X","cat":"cpu_op","name":"leaf","pid":1,"tid":1,"ts":12,"dur":5},
    {"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":10,"dur":20},
    {"ph":"X","cat":"cpu_op","name":"leaf","pid":1,"tid":1,"ts":40,"dur":0},
    {"ph":"X","cat":"cpu_op","name":"b","pid":1,"tid":1,"ts":40,"dur":30},
    {"ph":"X","cat":"user_annotation","name":"outer","pid":1,"tid":1,"ts":0,"dur":100},
    {"ph":"X","cat":"user_annotation","name":"outer","pid":1,"tid":1,"ts":200,"dur":10}]})";
  write_file(dir.path / "start.json", start_order);
  write_file(dir.path / "end.json", end_order);
  for (const char* f : {"start.json", "end.json"}) {
    CAPTURE(f);
    const auto rows = by_key(summarize(dir.path / f));
    CHECK(rows.at("outer").count == 2);
    CHECK(rows.at("outer").cpu_time_total_ns == 110000);
    CHECK(rows.at("outer").self_cpu_time_total_ns == 60000);
    CHECK(rows.at("a").self_cpu_time_total_ns == 15000);
    CHECK(rows.at("b").self_cpu_time_total_ns == 30000);
    CHECK(rows.at("leaf").count == 2);
    CHECK(rows.at("leaf").self_cpu_time_total_ns == 5000);
  }
}

TEST_CASE("bad input gives one line naming the file and where, and a non-zero exit") {
  temp_dir dir("cli-bad");
  const auto check_error = [](const std::filesystem::path& f, std::string_view text) {
    CAPTURE(f);
    const auto r = run_cli({"summary", f.string()});
    CHECK(r.rc == 1);
    CHECK(r.out.empty());
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find(f.string()) != std::string::npos);
    CHECK(r.err.find(text) != std::string::npos);
  };
  check_error(dir.path / "missing.json", "cannot open");
  write_file(dir.path / "text.json", "this is not json\n");
  check_error(dir.path / "text.json", "invalid JSON at byte 0");
  write_file(dir.path / "syntax.json", R"({"traceEvents": [{"ph": "i", "name": "a", "ts": 1},, ]})");
  check_error(dir.path / "syntax.json", "invalid JSON at byte 51");
  write_file(dir.path / "empty.json", "");
  check_error(dir.path / "empty.json", "unexpected end of input at byte 0");
  write_file(dir.path / "array.json", "[1, 2]");
  check_error(dir.path / "array.json", "not an object");
  write_file(dir.path / "noevents.json", R"({"schemaVersion": 1})");
  check_error(dir.path / "noevents.json", "no \"traceEvents\"");
  write_file(dir.path / "head.json", R"({"schemaVersion": 1, "deviceProp)");
  check_error(dir.path / "head.json", "unexpected end of input at byte 32");

  const std::string good = slurp(pytorch_trace);
  {
    namespace io = boost::iostreams;
    std::ofstream file(dir.path / "t.json.gz", std::ios::binary);
    io::filtering_ostream out;
    out.push(io::gzip_compressor());
    out.push(file);
    out << good;
  }
  const std::string gz = slurp(dir.path / "t.json.gz");
  write_file(dir.path / "cut.json.gz", gz.substr(0, gz.size() / 2));
  check_error(dir.path / "cut.json.gz", "gzip");
  write_file(dir.path / "garbage.json.gz", "not gzip at all");
  check_error(dir.path / "garbage.json.gz", "gzip");
  CHECK(run_cli({"summary", (dir.path / "t.json.gz").string()}).rc == 0);

  // Events the summary cannot use name their index.
  write_file(dir.path / "noph.json", R"({"traceEvents": [{"ph":"M","name":"process_name","pid":1,"tid":0,"ts":0},
    {"name":"x","cat":"cpu_op","ts":1,"dur":2}]})");
  check_error(dir.path / "noph.json", "event 1 has no \"ph\"");
  write_file(dir.path / "nots.json", R"({"traceEvents": [{"ph":"i","name":"m","ts":0},{"ph":"i","name":"m","ts":0},
    {"ph":"X","name":"x","cat":"cpu_op","pid":1,"tid":1,"dur":2}]})");
  check_error(dir.path / "nots.json", "event 2 has no \"ts\"");
  write_file(dir.path / "types.json", R"({"traceEvents": [{"ph":"X","name":"x","cat":"cpu_op","pid":1,"tid":1,"ts":1,"dur":"2"}]})");
  check_error(dir.path / "types.json", "event 0: \"dur\" is a string, not a number");
  write_file(dir.path / "phnum.json", R"({"traceEvents": [7]})");
  check_error(dir.path / "phnum.json", "event 0 is a number, not an object");
}

TEST_CASE("a .pftrace event on a sequence clock no snapshot placed: summary and convert skip it and say so") {
  temp_dir dir("cli-unplaced");
  std::string bytes;
  {
    proftrace::detail::perfetto_builder b(bytes, 1);
    const std::uint64_t thread = b.thread_track(100, 101, "main");
    b.slice_begin(thread, 1'000'000, "placed", "cpu_op");
    b.slice_end(thread, 2'000'000);
    // Sequence 5's clock 64, never declared by a snapshot of it.
    std::string packet, event;
    proftrace::detail::proto::put_uint(event, 9, 3);  // TYPE_INSTANT
    proftrace::detail::proto::put_uint(event, 11, thread);
    proftrace::detail::proto::put_string(event, 23, "unplaced");
    proftrace::detail::proto::put_uint(packet, 10, 5);
    proftrace::detail::proto::put_uint(packet, 8, 3'000'000);
    proftrace::detail::proto::put_uint(packet, 58, 64);
    proftrace::detail::proto::put_string(packet, 11, event);
    b.out();  // what the builder staged, first
    proftrace::detail::proto::put_string(bytes, 1, packet);
  }
  const std::filesystem::path in = dir.path / "t.pftrace";
  write_file(in, bytes);
  const auto summary = run_cli({"summary", in.string()});
  CHECK(summary.rc == 0);
  CHECK(summary.out.find("placed") != std::string::npos);
  CHECK(summary.err.find("1 events on a clock that no clock snapshot of their sequence placed were skipped") !=
        std::string::npos);
  const auto convert = run_cli({"convert", in.string(), (dir.path / "t.json").string()});
  CHECK(convert.rc == 0);
  CHECK((convert.out + convert.err).find("1 events on a clock that no clock snapshot of their sequence placed") !=
        std::string::npos);
}

TEST_CASE("a trace cut off inside traceEvents is summarised as far as it goes, with one warning") {
  temp_dir dir("cli-cut");
  const std::string good = slurp(pytorch_trace);
  // Cut right after ProfilerStep#2's aten::linear event starts being written.
  const auto at = good.find("\"name\": \"aten::t\", \"pid\": 1102, \"tid\": 1102, \"ts\": 2015.000");
  REQUIRE(at != std::string::npos);
  write_file(dir.path / "spool.json", good.substr(0, at));
  std::vector<std::string> warnings;
  const auto rows = by_key(pt::summarize(dir.path / "spool.json", false, warnings));
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("inside \"traceEvents\"") != std::string::npos);
  CHECK(rows.at("ProfilerStep*").count == 2);
  CHECK(rows.at("aten::linear").count == 2);
  CHECK(rows.count("aten::relu") == 1);
  CHECK(rows.at("aten::relu").count == 1);
  // The second step's open scopes count with the children seen so far.
  CHECK(rows.at("ProfilerStep*").self_cpu_time_total_ns == (500 - 250 + 400 - 150) * 1000);

  const auto r = run_cli({"summary", (dir.path / "spool.json").string()});
  CHECK(r.rc == 0);
  CHECK(r.out.find("aten::linear") != std::string::npos);
  CHECK(lines(r.err) == 1);
  CHECK(r.err.find("warning") != std::string::npos);
  CHECK(r.err.find("spool.json") != std::string::npos);
  CHECK(r.err.find("byte " + std::to_string(at)) != std::string::npos);
  // validate calls the same file invalid.
  const auto v = run_cli({"validate", (dir.path / "spool.json").string()});
  CHECK(v.rc == 1);
  CHECK(v.out.find("truncated") != std::string::npos);
}

TEST_CASE("a trace cut inside a number, a literal or a string is a cut trace, not invalid JSON") {
  temp_dir dir("cli-cut-token");
  const std::string good = slurp(pytorch_trace);
  const auto ts = good.find("\"ts\": 2015.000");
  REQUIRE(ts != std::string::npos);
  const auto value = ts + std::string_view("\"ts\": ").size();
  // After "2015." the parser, told the input ended, would call the number malformed.
  for (const std::size_t at : {value + 1, value + 4, value + 5, value + 6, good.find("\"name\"", value) + 3}) {
    CAPTURE(at);
    write_file(dir.path / "cut.json", good.substr(0, at));
    const auto c = run_cli({"summary", (dir.path / "cut.json").string()});
    CAPTURE(c.err);
    CHECK(c.rc == 0);
    CHECK(c.err.find("inside \"traceEvents\"") != std::string::npos);
  }
  // Cut after the events closed but before the object did, it is still not a trace.
  const auto end = good.rfind('}');
  write_file(dir.path / "cut.json", good.substr(0, end));
  CHECK(run_cli({"summary", (dir.path / "cut.json").string()}).rc == 1);
}

// Found by tests/fuzz/trace_reader_fuzzer (its corpus keeps the inputs as regress_*).
TEST_CASE("numbers beyond int64 saturate instead of overflowing (flops 1e30, ts and dur 1e300)") {
  temp_dir dir("cli-huge");
  std::string text = R"({"traceEvents": [)";
  for (int tid = 1; tid <= 3; ++tid)
    text += std::string(tid > 1 ? "," : "") + R"({"ph": "X", "cat": "cpu_op", "name": "huge", "pid": 1, "tid": )" +
            std::to_string(tid) + R"(, "ts": 1e300, "dur": 1e300, "args": {"flops": 1e30, "External id": -1e300}})";
  text += "]}";
  write_file(dir.path / "huge.json", text);
  const auto rows = by_key(summarize(dir.path / "huge.json"));
  REQUIRE(rows.count("huge") == 1);
  CHECK(rows.at("huge").count == 3);
  CHECK(rows.at("huge").cpu_time_total_ns == INT64_MAX);
  CHECK(rows.at("huge").self_cpu_time_total_ns == INT64_MAX);
  std::vector<std::string> warnings;
  CHECK(pt::summarize(dir.path / "huge.json", false, warnings).rows.at(0).flops == INT64_MAX);
  CHECK(run_cli({"summary", (dir.path / "huge.json").string(), "--flops"}).rc == 0);

  // The same through a .pftrace: times clamped to +-4e18 ns on the way in,
  // double args saturated on the way out, as the JSON reader does; a pid
  // beyond int64 stays text.
  const auto pftrace = dir.path / "huge.pftrace";
  const auto converted = run_cli({"convert", (dir.path / "huge.json").string(), pftrace.string()});
  REQUIRE(converted.rc == 0);
  CHECK(converted.err.find("6 ts or dur values beyond +-4e18 ns") != std::string::npos);  // said, not silent
  const auto from_pftrace = pt::summarize(pftrace, false, warnings);
  REQUIRE(from_pftrace.rows.size() == 1);
  CHECK(from_pftrace.rows.at(0).count == 3);
  CHECK(from_pftrace.rows.at(0).flops == INT64_MAX);
  CHECK(from_pftrace.rows.at(0).cpu_time_total_ns > 0);
  const auto back = dir.path / "huge.back.json";
  REQUIRE(run_cli({"convert", pftrace.string(), back.string()}).rc == 0);
  CHECK(problems_of(back).empty());

  // Memory sizes whose running sums saturate: a scope's bytes saturate too.
  write_file(dir.path / "memory.json", R"({"traceEvents": [
    {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 0, "args": {"Bytes": -9000000000000000000, "Device Type": 0}},
    {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 5, "args": {"Bytes": 9200000000000000000, "Device Type": 0}},
    {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 6, "args": {"Bytes": 9200000000000000000, "Device Type": 0}},
    {"ph": "X", "cat": "cpu_op", "name": "alloc", "pid": 1, "tid": 1, "ts": 1, "dur": 9}]})");
  const auto memory_rows = summarize(dir.path / "memory.json").rows;
  REQUIRE(memory_rows.size() == 2);  // and the "[memory]" row of the free at 0, outside alloc
  CHECK(memory_rows.at(0).key == "[memory]");  // its first event is the earlier
  CHECK(memory_rows.at(0).cpu_memory_usage == -9000000000000000000);
  CHECK(memory_rows.at(1).key == "alloc");
  CHECK(memory_rows.at(1).cpu_memory_usage == INT64_MAX);
}

namespace {

// The line a command gave about `path`, from "PATH: " on (validate's
// first line, or the error line of the others).
std::string message_about(const cli_result& r, const std::string& path) {
  const std::string text = r.out + r.err;
  const std::size_t at = text.find(path + ": ");
  if (at == std::string::npos) return "(nothing about " + path + ": " + text + ")";
  return text.substr(at, text.find('\n', at) - at);
}

// A slice on one thread from `begin_ns` to `end_ns`, as a .pftrace.
std::string one_slice(std::int64_t begin_ns, std::int64_t end_ns) {
  std::string slice;
  proftrace::detail::perfetto_builder b(slice, 1);
  const std::uint64_t thread = b.thread_track(100, 101, "main");
  b.slice_begin(thread, begin_ns, "whole", "cpu_op");
  b.slice_end(thread, end_ns);
  b.out();
  return slice;
}

}  // namespace

TEST_CASE("one reader contract: what one command refuses every command refuses, exit 1, with the same message") {
  temp_dir dir("cli-contract");
  const std::string head = R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, )";
  const struct {
    const char* file;
    std::string text;
    const char* message;
  } inputs[] = {
      {"nan.json", head + R"("ts": NaN, "dur": 1}]})", "invalid JSON at byte 85: syntax error"},
      {"commas.json", head + R"("ts": 1, "dur": 1,,,}]})", "invalid JSON at byte 97: syntax error"},
      {"inf.json", head + R"("ts": 1e400, "dur": 1}]})", "event 0: \"ts\" is beyond the range of a double at byte 90"},
      {"backwards.pftrace", one_slice(2'000, 1'000), "a slice that ends before it begins ('whole' from 2000 to 1000 ns)"},
      // 0 to 2^63 ns: a duration past int64 (it once wrapped to a negative "dur" in the converted JSON).
      {"wrap.pftrace", one_slice(0, INT64_MIN), "a slice that ends before it begins ('whole' from 0 to -9223372036854775808"},
      {"one.pftrace", std::string(1, '\x0a'), "nothing before the cut: the input ends inside packet 0's length at byte 0"},
  };
  for (const auto& in : inputs) {
    const std::string path = (dir.path / in.file).string();
    write_file(path, in.text);
    const std::string other = path.ends_with(".json") ? "out.pftrace" : "out.json";
    const std::vector<std::vector<std::string>> commands = {
        {"summary", path}, {"csv", path}, {"stacks", path}, {"validate", path}, {"diff", path, path},
        {"convert", path, (dir.path / other).string()}, {"merge", path, "-o", (dir.path / "merged.json").string()}};
    const std::string expected = message_about(run_cli({"summary", path}), path);
    CHECK_MESSAGE(expected.find(in.message) != std::string::npos, std::string(in.file) << ": " << expected);
    for (const auto& c : commands) {
      const cli_result r = run_cli(c);
      CHECK_MESSAGE(r.rc == 1, std::string(in.file) << ": " << c[0] << " exits " << r.rc << ": " << r.out << r.err);
      CHECK_MESSAGE(message_about(r, path) == expected, std::string(in.file) << ": " << c[0]);
    }
    CHECK(!std::filesystem::exists(dir.path / other));
    CHECK(!std::filesystem::exists(dir.path / "merged.json"));
  }
  // validate --repair keeps no event the reader would refuse: a cut trace
  // whose kept events hold 1e400 is refused, not "repaired" into a file
  // that no command reads.
  const auto cut = dir.path / "cut-inf.json";
  write_file(cut, head + R"("ts": 1e400, "dur": 1}, {"ph": "X", "na)");
  const cli_result r = run_cli({"validate", "--repair", cut.string()});
  CHECK(r.rc == 1);
  CHECK(r.err.find("cut-inf.json: nothing to repair: event 0: \"ts\" is beyond the range of a double") !=
        std::string::npos);
  CHECK(!std::filesystem::exists(dir.path / "cut-inf.repaired.json"));
}

// Found by trace_reader_fuzzer (corpus: regress_refused_value_before_gzip_damage):
// the reader reported the damage of a compressed stream without parsing
// what decoded before it, so a 1e400 in that last piece went unseen and
// repair kept it.
TEST_CASE("a value refused before the damage of a compressed stream is refused, and repair keeps none") {
  temp_dir dir("cli-refused-before-damage");
  const auto path = dir.path / "bad-crc.json.gz";
  {
    namespace io = boost::iostreams;
    std::ofstream file(path, std::ios::binary);
    io::filtering_ostream out;
    out.push(io::gzip_compressor());
    out.push(file);
    out << R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1e400, "dur": 1}, {"ph": "X", "na)";
  }
  std::string gz = slurp(path);
  gz[gz.size() - 8] = static_cast<char>(gz[gz.size() - 8] ^ 0xff);  // the CRC: every byte decodes, then "incorrect data check"
  write_file(path, gz);
  const std::string refused = "event 0: \"ts\" is beyond the range of a double";
  const cli_result validate = run_cli({"validate", path.string()});
  CHECK(validate.rc == 1);
  CHECK_MESSAGE(validate.out.find(refused) != std::string::npos, validate.out << validate.err);
  const cli_result repair = run_cli({"validate", "--repair", path.string()});
  CHECK(repair.rc == 1);
  CHECK_MESSAGE(repair.err.find("nothing to repair: " + refused) != std::string::npos, repair.out << repair.err);
  CHECK(!std::filesystem::exists(dir.path / "bad-crc.repaired.json.gz"));
}

TEST_CASE("a Perfetto trace is told by content whatever its name; JSON starting with newlines stays JSON") {
  temp_dir dir("pftrace-content");
  const auto json = std::filesystem::path(data_dir) / "pytorch_style.pt.trace.json";
  const auto pf = dir.path / "t.pftrace";
  REQUIRE(run_cli({"convert", json.string(), pf.string()}).rc == 0);
  const auto unnamed = dir.path / "trace.bin", zst = dir.path / "trace.pftrace.zst";
  std::filesystem::copy_file(pf, unnamed);
  CHECK(pt::is_perfetto_trace(unnamed));
  CHECK(run_cli({"summary", unnamed.string()}).out == run_cli({"summary", json.string()}).out);
  REQUIRE(run_cli({"convert", pf.string(), zst.string()}).rc == 0);  // same format, compressed anew
  CHECK(run_cli({"summary", zst.string()}).out == run_cli({"summary", json.string()}).out);
  const auto newline_json = dir.path / "nl.json";
  write_file(newline_json, "\n\n  {\"traceEvents\": []}");
  CHECK_FALSE(pt::is_perfetto_trace(newline_json));
  CHECK(run_cli({"validate", newline_json.string()}).rc == 0);
}

namespace {

// What a read of `path` by `read` in batches of `b` gives: each event
// (index, name, thread, time) and the result as `tail` tells it, the
// error's message if it throws; stopped by the read's caller after
// `stop_after` events.
using batch_reader = pt::read_result (*)(const std::filesystem::path&, const pt::read_options&, const pt::event_batching&);
std::string read_by(batch_reader read, const std::filesystem::path& path, pt::event_batching b, std::uint64_t stop_after,
                    std::string (*tail)(const pt::read_result&)) {
  std::string seen;
  std::uint64_t n = 0;
  pt::read_options opts;
  opts.on_event = [&](const pt::trace_event& e) {
    seen += std::to_string(e.index) + ' ' + e.name + ' ' + e.pid + '/' + e.tid + ' ' + std::to_string(e.ts) + '\n';
    return ++n < stop_after;
  };
  try {
    const pt::read_result r = read(path, opts, b);
    return seen + "events " + std::to_string(r.events) + (r.stopped ? " stopped" : "") + tail(r);
  } catch (const pt::trace_error& e) {
    return seen + "error " + e.what();
  }
}

std::string read_in_batches(const std::filesystem::path& path, pt::event_batching b,
                            std::uint64_t stop_after = UINT64_MAX) {
  return read_by(pt::read_perfetto_trace, path, b, stop_after, [](const pt::read_result& r) {
    return r.truncated ? " cut " + r.cut_inside_packet : std::string();
  });
}

// Slices on two threads in turn, then (`bad`) one that ends before it begins.
std::string two_threads(int slices, bool bad) {
  std::string out;
  proftrace::detail::perfetto_builder b(out, 1);
  const std::uint64_t threads[] = {b.thread_track(100, 101, "a"), b.thread_track(100, 102, "b")};
  for (int i = 0; i < slices; ++i) {
    const std::uint64_t t = threads[i % 2];
    b.slice_begin(t, 1'000 * i, "s" + std::to_string(i), "cpu_op");
    b.slice_end(t, 1'000 * i + 500);
  }
  if (bad) {
    b.slice_begin(threads[0], 90'000, "whole", "cpu_op");
    b.slice_end(threads[0], 80'000);
  }
  b.out();
  return out;
}

}  // namespace

TEST_CASE("a .pftrace decoded on a thread of its own: every batch size gives the same events, stops, cuts and errors") {
  temp_dir dir("pftrace-batches");
  const auto good = dir.path / "good.pftrace", bad = dir.path / "bad.pftrace", cut = dir.path / "cut.pftrace";
  write_file(good, two_threads(23, false));
  write_file(bad, two_threads(23, true));
  const std::string whole = two_threads(23, false);
  write_file(cut, whole.substr(0, inside_packet_after(whole, whole.size() / 2)));
  const pt::event_batching shapes[] = {{1, 2}, {2, 2}, {3, 3}, {7, 2}, {22, 2}, {23, 2}, {24, 4}};
  for (const auto& path : {good, bad, cut}) {
    const std::string expected = read_in_batches(path, {});
    if (path == good) CHECK(expected.find("s22") != std::string::npos);
    for (const auto& b : shapes) {
      CHECK_MESSAGE(read_in_batches(path, b) == expected, path << " in batches of " << b.batch_events);
      for (const std::uint64_t stop : {1, 2, 3, 8, 22})
        CHECK_MESSAGE(read_in_batches(path, b, stop) == read_in_batches(path, {}, stop),
                      path << " stopped after " << stop << " in batches of " << b.batch_events);
    }
  }
  // Every event before an error is delivered before it; a stop before the
  // error (or the cut) hides it, as where the decoder stops at the caller's word.
  CHECK(read_in_batches(bad, {1, 2}).find("s22 100/101") != std::string::npos);
  CHECK(read_in_batches(bad, {1, 2}).find("error ") != std::string::npos);
  CHECK(read_in_batches(bad, {1, 2}, 3).ends_with("stopped"));
  CHECK(read_in_batches(cut, {1, 2}).find(" cut ") != std::string::npos);
  CHECK(read_in_batches(cut, {1, 2}, 1).ends_with("stopped"));
  // The caller's exception ends the decoding thread too, and reaches the caller.
  pt::read_options throwing;
  throwing.on_event = [](const pt::trace_event&) -> bool { throw pt::trace_error("caller's"); };
  CHECK_THROWS_WITH_AS(pt::read_perfetto_trace(good, throwing, {1, 2}), "caller's", pt::trace_error);
}

TEST_CASE("a .pftrace read stopped at an event has the trace-wide entries before it, not those the decoder read past it") {
  temp_dir dir("pftrace-stop-metadata");
  std::string bytes;
  {
    proftrace::detail::perfetto_builder b(bytes, 1);
    const std::vector<std::pair<std::string, std::string>> early = {{"early", "1"}}, late = {{"late", "2"}};
    b.trace_metadata(early);
    const std::uint64_t t = b.thread_track(100, 101, "a");
    for (int i = 0; i < 5'000; ++i) {
      b.slice_begin(t, 1'000 * i, "s", "cpu_op");
      b.slice_end(t, 1'000 * i + 500);
    }
    b.trace_metadata(late);
    b.out();
  }
  const auto path = dir.path / "t.pftrace";
  write_file(path, bytes);
  const auto keys = [&](pt::event_batching batching, std::uint64_t stop_after) {
    std::uint64_t n = 0;
    pt::read_options opts;
    opts.on_event = [&](const pt::trace_event&) { return ++n < stop_after; };
    std::string out;
    for (const auto& m : pt::read_perfetto_trace(path, opts, batching).metadata) out += m.key + ' ';
    return out;
  };
  for (const pt::event_batching b : {pt::event_batching{}, pt::event_batching{1, 2}, pt::event_batching{7, 2}}) {
    CHECK(keys(b, UINT64_MAX) == "early late baseTimeNanoseconds ");
    CHECK(keys(b, 1) == "early baseTimeNanoseconds ");
    CHECK(keys(b, 4'900) == "early baseTimeNanoseconds ");  // the decoder has read on to the end
  }
}

namespace {

// The same for a JSON trace, with its top-level keys.
std::string read_json_in_batches(const std::filesystem::path& path, pt::event_batching b,
                                 std::uint64_t stop_after = UINT64_MAX) {
  return read_by(pt::read_json_trace, path, b, stop_after, [](const pt::read_result& r) {
    std::string tail = std::string(r.truncated ? " cut" : "") + " keys";
    for (const auto& m : r.metadata) tail += ' ' + m.key;
    return tail;
  });
}

// 23 events between top-level keys; `damage` replaces the text of event 20 on.
std::string json_events(const std::string& damage = {}) {
  std::string out = "{\"early\": 1, \"traceEvents\": [\n";
  for (int i = 0; i < 23; ++i) {
    if (i == 20 && !damage.empty()) return out + damage;
    out += std::string(i ? ",\n" : "") + "{\"ph\": \"X\", \"name\": \"s" + std::to_string(i) +
           "\", \"pid\": 1, \"tid\": " + std::to_string(i % 2) + ", \"ts\": " + std::to_string(i) + ", \"dur\": 0.5}";
  }
  return out + "\n], \"late\": {\"x\": 2}}\n";
}

}  // namespace

TEST_CASE("a JSON trace parsed on a thread of its own: every batch size gives the same events, stops, cuts and errors") {
  temp_dir dir("json-batches");
  const auto good = dir.path / "good.json", bad = dir.path / "bad.json", cut = dir.path / "cut.json",
             refused = dir.path / "refused.json";
  write_file(good, json_events());
  write_file(bad, json_events(",{\"ph\": \"X\" \"name\": 1}]}"));
  write_file(cut, json_events(",{\"ph\": \"X\", \"na"));
  write_file(refused, json_events(",{\"ph\": \"X\", \"ts\": 1e400}]}"));
  const pt::event_batching shapes[] = {{1, 2}, {2, 2}, {3, 3}, {7, 2}, {22, 2}, {23, 2}, {24, 4}};
  for (const auto& path : {good, bad, cut, refused}) {
    const std::string expected = read_json_in_batches(path, {});
    for (const auto& b : shapes) {
      CHECK_MESSAGE(read_json_in_batches(path, b) == expected, path << " in batches of " << b.batch_events);
      for (const std::uint64_t stop : {1, 2, 3, 8, 20})
        CHECK_MESSAGE(read_json_in_batches(path, b, stop) == read_json_in_batches(path, {}, stop),
                      path << " stopped after " << stop << " in batches of " << b.batch_events);
    }
  }
  CHECK(read_json_in_batches(good, {1, 2}).ends_with("events 23 keys early late late.x"));
  // A stop is reported as if the parser had stopped there: no keys, cut or error past it.
  for (const auto& path : {good, bad, cut, refused})
    CHECK(read_json_in_batches(path, {1, 2}, 3).ends_with("events 3 stopped keys early"));
  // Every event before an error is delivered before it, and the message is the one-thread reader's.
  CHECK(read_json_in_batches(bad, {1, 2}).find("s19 1/1") != std::string::npos);
  CHECK(read_json_in_batches(bad, {1, 2}).ends_with(bad.string() + ": invalid JSON at byte 1420: syntax error"));
  CHECK(read_json_in_batches(cut, {1, 2}).ends_with("events 20 cut keys early"));
  CHECK(read_json_in_batches(refused, {1, 2}).ends_with("event 20: \"ts\" is beyond the range of a double at byte 1432"));
  // The caller's exception ends the parsing thread too, and reaches the caller.
  pt::read_options throwing;
  throwing.on_event = [](const pt::trace_event&) -> bool { throw pt::trace_error("caller's"); };
  CHECK_THROWS_WITH_AS(pt::read_json_trace(good, throwing, {1, 2}), "caller's", pt::trace_error);
}
