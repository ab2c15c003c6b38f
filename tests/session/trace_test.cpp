// Trace files: Kineto's layout, JSON escaping, compression by suffix,
// metadata, crash-safe streaming, and every failure path of the session API.
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <tuple>
#include <thread>

#include "test_support.hpp"

using test_support::read_trace;
using test_support::temp_dir;
using test_support::warning_capture;

namespace {

void nested_work() {
  PROF_FUNCTION();
  {
    PROF_SCOPE("inner \"quoted\"\n\ttab\x01");
    PROF_SCOPE_SHAPES("gemm", {64, 128}, {128, 256});
  }
  PROF_INSTANT("marker");
  PROF_COUNTER("queue_depth", 3.5);
}

}  // namespace

TEST_CASE("a trace carries Kineto's keys, nesting and exact times") {
  temp_dir out("keys");
  proftrace::profile p({.record_shapes = true});
  p.preset_metadata_json("run", R"({"id": 7})");
  p.start();
  PROF_THREAD_NAME("main \"thread\"");
  nested_work();
  p.add_metadata("note", "has \"quotes\"");
  p.stop();
  p.export_chrome_trace(out.path / "t.pt.trace.json");
  const std::string text = test_support::read_text(out.path / "t.pt.trace.json");
  const auto trace = read_trace(out.path / "t.pt.trace.json");

  // Keys, in Kineto's order up to traceEvents.
  std::vector<std::string> keys;
  for (auto& kv : trace) keys.emplace_back(kv.key());
  REQUIRE(keys.size() >= 8);
  CHECK(keys[0] == "schemaVersion");
  CHECK(keys[1] == "deviceProperties");
  CHECK(trace.at("schemaVersion").as_int64() == 1);
  CHECK(trace.at("deviceProperties").as_array().empty());
  CHECK(trace.at("record_shapes").as_int64() == 1);
  CHECK(trace.at("run").as_object().at("id").as_int64() == 7);
  CHECK(trace.at("displayTimeUnit").as_string() == "ms");
  CHECK(trace.at("baseTimeNanoseconds").as_int64() > 1600000000000000000);
  CHECK(trace.at("note").as_string() == "has \"quotes\"");
  CHECK(trace.at("traceName").as_string() == (out.path / "t.pt.trace.json").string());
  CHECK(text.find("\"traceEvents\"") < text.find("\"traceName\""));

  const auto fn = test_support::events_named(trace, "nested_work");
  const auto inner = test_support::events_named(trace, "inner \"quoted\"\n\ttab\x01");
  const auto gemm = test_support::events_named(trace, "gemm");
  REQUIRE(fn.size() == 1);
  REQUIRE(inner.size() == 1);
  REQUIRE(gemm.size() == 1);
  CHECK(fn[0].at("ph").as_string() == "X");
  CHECK(fn[0].at("cat").as_string() == "user_annotation");
  CHECK(gemm[0].at("cat").as_string() == "cpu_op");
  CHECK(fn[0].at("pid").as_int64() == ::getpid());
  CHECK(boost::json::serialize(gemm[0].at("args").at("Input Dims")) == "[[64,128],[128,256]]");
  // Nesting: gemm inside inner inside nested_work; external ids in begin order.
  const auto ts = [](const boost::json::object& e) { return e.at("ts").to_number<double>(); };
  const auto end = [&](const boost::json::object& e) { return ts(e) + e.at("dur").to_number<double>(); };
  CHECK(ts(fn[0]) <= ts(inner[0]));
  CHECK(end(inner[0]) <= end(fn[0]));
  CHECK(ts(inner[0]) <= ts(gemm[0]));
  CHECK(end(gemm[0]) <= end(inner[0]));
  CHECK(fn[0].at("args").at("External id").as_int64() < inner[0].at("args").at("External id").as_int64());
  // Three decimals exactly, no exponent.
  CHECK(text.find("\"ts\": ") != std::string::npos);
  for (std::size_t at = text.find("\"dur\": "); at != std::string::npos; at = text.find("\"dur\": ", at + 1)) {
    const std::size_t dot = text.find('.', at);
    const std::size_t stop = text.find_first_of(",}", at);
    REQUIRE(dot < stop);
    CHECK(stop - dot - 1 == 3);
  }
  // Raw control characters never reach the file.
  for (char c : text) CHECK_FALSE((static_cast<unsigned char>(c) < 0x20 && c != '\n'));

  const auto instant = test_support::events_named(trace, "marker");
  REQUIRE(instant.size() == 1);
  CHECK(instant[0].at("ph").as_string() == "i");
  const auto counter = test_support::events_named(trace, "queue_depth");
  REQUIRE(counter.size() == 1);
  CHECK(counter[0].at("ph").as_string() == "C");
  CHECK(counter[0].at("args").at("queue_depth").to_number<double>() == 3.5);

  bool named = false;
  for (auto& e : trace.at("traceEvents").as_array()) {
    const auto& o = e.as_object();
    if (o.at("ph").as_string() == "M" && o.at("name").as_string() == "thread_name" &&
        o.at("args").at("name").as_string() == "main \"thread\"")
      named = true;
    if (o.at("ph").as_string() == "X") CHECK(o.contains("cat"));
  }
  CHECK(named);
  CHECK(test_support::events_named(trace, "process_name").size() == 1);
}

TEST_CASE("gzip and zstd exports round-trip to the same JSON") {
  temp_dir out("compress");
  proftrace::profile p;
  p.start();
  for (int i = 0; i < 200; ++i) nested_work();
  p.stop();
  for (const char* name : {"t.json", "t.json.gz", "t.json.zst"}) p.export_chrome_trace(out.path / name);
  const auto plain = test_support::read_text(out.path / "t.json");
  auto expect = read_trace(out.path / "t.json");
  for (const char* name : {"t.json.gz", "t.json.zst"}) {
    auto got = read_trace(out.path / name);
    CHECK(std::filesystem::file_size(out.path / name) < plain.size());
    CHECK(got.at("traceEvents") == expect.at("traceEvents"));
    CHECK(got.at("traceName").as_string() == (out.path / name).string());
  }
  // gzip really is gzip: the magic bytes.
  std::ifstream gz(out.path / "t.json.gz", std::ios::binary);
  unsigned char magic[2] = {};
  gz.read(reinterpret_cast<char*>(magic), 2);
  CHECK(magic[0] == 0x1f);
  CHECK(magic[1] == 0x8b);
}

// HTA aligns ranks on `ts` and ignores baseTimeNanoseconds: `ts` of traces
// started at different times (other processes, other hosts) must differ by
// the real difference, so every trace is written against one fixed base
// (as Kineto's), not against its own start.
TEST_CASE("traces started apart have one base and ts that differ by the real start difference") {
  temp_dir out("base");
  const auto unix_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  std::int64_t before[2] = {}, after[2] = {};
  for (int i = 0; i < 2; ++i) {
    if (i == 1) std::this_thread::sleep_for(std::chrono::milliseconds(120));
    proftrace::profile p;
    p.start();
    before[i] = unix_ns();
    { PROF_SCOPE("mark"); }
    after[i] = unix_ns();
    p.stop();
    p.export_chrome_trace(out.path / ("t" + std::to_string(i) + ".json"));
  }
  const auto a = read_trace(out.path / "t0.json");
  const auto b = read_trace(out.path / "t1.json");
  const std::int64_t base = a.at("baseTimeNanoseconds").as_int64();
  CHECK(b.at("baseTimeNanoseconds").as_int64() == base);
  CHECK(base <= before[0]);
  const auto mark_ns = [](const boost::json::object& t) {
    const auto m = test_support::events_named(t, "mark");
    REQUIRE(m.size() == 1);
    // Three decimals of microseconds: exact nanoseconds, within a double's exact range.
    const double ts = m[0].at("ts").to_number<double>();
    CHECK(ts * 1000.0 < 9007199254740992.0);
    return static_cast<std::int64_t>(std::llround(ts * 1000.0));
  };
  const std::int64_t ts0 = mark_ns(a), ts1 = mark_ns(b);
  // Absolute time = base + ts, within the clock calibration's error.
  for (auto [ts, lo, hi] : {std::tuple{ts0, before[0], after[0]}, std::tuple{ts1, before[1], after[1]}}) {
    CHECK(base + ts >= lo - 2'000'000);
    CHECK(base + ts <= hi + 2'000'000);
  }
  // The second trace's scope is >= 120 ms after the first's, in `ts` alone.
  const std::int64_t real = before[1] - before[0];
  CHECK(real >= 120'000'000);
  CHECK(std::llabs((ts1 - ts0) - real) < 4'000'000 + (after[0] - before[0]) + (after[1] - before[1]));
  // Metadata events carry the capture start, not the base.
  for (auto& e : a.at("traceEvents").as_array())
    if (e.as_object().at("ph").as_string() == "M")
      CHECK(e.as_object().at("ts").to_number<double>() * 1000.0 >= static_cast<double>(before[0] - base) - 1e9);
}

TEST_CASE("with_stack and with_modules annotate events") {
  temp_dir out("stack");
  proftrace::profile p({.with_stack = true, .with_modules = true});
  p.start();
  {
    PROF_MODULE("model");
    PROF_MODULE("encoder");
    PROF_OP("matmul");
  }
  p.stop();
  p.export_chrome_trace(out.path / "t.json");
  const auto trace = read_trace(out.path / "t.json");
  const auto mm = test_support::events_named(trace, "matmul");
  REQUIRE(mm.size() == 1);
  CHECK(mm[0].at("args").at("Module Hierarchy").as_string() == "model.encoder");
  const std::string stack(mm[0].at("args").at("Call stack").as_string());
  CHECK(stack.find("): matmul;") != std::string::npos);
  CHECK(stack.find("trace_test.cpp(") != std::string::npos);
  CHECK(stack.find("): encoder;") < stack.find("): model"));
}

// A step frame is "ProfilerStep*" in every stack (the trace's "Call stack",
// group_by_stack_n, export_stacks): identical call paths in different steps
// stay one group.
TEST_CASE("stacks name the step frame ProfilerStep*, never a numbered step") {
  temp_dir out("step_stacks");
  proftrace::profile p({.schedule = proftrace::schedule({.wait = 0, .warmup = 1, .active = 3, .repeat = 1}),
                        .with_stack = true});
  p.start();
  for (int i = 0; i < 5; ++i) {
    {
      PROF_STEP();
      PROF_SCOPE("block");
      PROF_OP("gemm_block");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // a self time export_stacks prints
    }
  }
  p.stop();
  p.export_chrome_trace(out.path / "t.json");
  p.export_stacks(out.path / "stacks.txt");
  const auto trace = read_trace(out.path / "t.json");
  const auto gemm = test_support::events_named(trace, "gemm_block");
  REQUIRE(gemm.size() == 3);
  for (const auto& g : gemm) {
    const std::string stack(g.at("args").at("Call stack").as_string());
    CHECK(stack.ends_with(";ProfilerStep*"));
    CHECK(stack.find("ProfilerStep#") == std::string::npos);
  }
  CHECK(test_support::events_named(trace, "ProfilerStep#3").size() == 1);  // the step events keep their numbers
  int rows = 0;
  for (const auto& row : p.key_averages(false, 5).rows)
    if (row.key == "gemm_block") {
      ++rows;
      CHECK(row.count == 3);
      REQUIRE_FALSE(row.stack.empty());
      CHECK(row.stack.back() == "ProfilerStep*");
    }
  CHECK(rows == 1);
  const std::string stacks = test_support::read_text(out.path / "stacks.txt");
  CHECK(stacks.find("ProfilerStep#") == std::string::npos);
  CHECK(stacks.find("ProfilerStep*;") != std::string::npos);
}

TEST_CASE("the spool file is valid JSON at every flush, before the trace ends") {
  temp_dir spool("spool");
  proftrace::profile p({.spool_dir = spool.path});
  p.start();
  for (int i = 0; i < 100; ++i) nested_work();
  p.flush();
  const auto files = test_support::files_in(spool.path);
  REQUIRE(files.size() == 1);
  CHECK(files[0].string().ends_with(".pt.trace.json.part"));
  auto mid = read_trace(files[0]);  // parses while recording continues
  CHECK(test_support::events_named(mid, "nested_work").size() == 100);
  for (int i = 0; i < 100; ++i) nested_work();
  p.flush();
  mid = read_trace(files[0]);
  CHECK(test_support::events_named(mid, "nested_work").size() == 200);
  p.stop();
  CHECK(test_support::events_named(read_trace(p.trace_path()), "nested_work").size() == 200);
}

TEST_CASE("starting a second session is a clear error") {
  proftrace::profile a, b;
  a.start();
  CHECK_THROWS_WITH_AS(a.start(), "proftrace: the profiler is not reentrant: this profiler is already running", std::logic_error);
  CHECK_THROWS_WITH_AS(b.start(), doctest::Contains("another profiler is already running"), std::logic_error);
  a.stop();
  b.start();  // fine once the first stopped
  b.stop();
}

TEST_CASE("API misuse gives clear errors") {
  proftrace::profile p;
  CHECK(p.key_averages().note.find("never started") != std::string::npos);
  CHECK_NOTHROW(p.export_chrome_trace("x.json"));
  CHECK_FALSE(std::filesystem::exists("x.json"));
  CHECK_THROWS_AS(p.step(), std::logic_error);
  CHECK_THROWS_AS(p.add_metadata_json("bad", "{not json"), std::invalid_argument);
  CHECK_THROWS_AS(p.preset_metadata_json("bad", "[1,"), std::invalid_argument);
  CHECK_THROWS_AS(proftrace::profile({.ring_events = 1000}), std::invalid_argument);
}

TEST_CASE("unwritable paths give clear errors and never crash") {
  warning_capture warnings;
  SUBCASE("export to a path under a regular file") {
    proftrace::profile p;
    p.start();
    nested_work();
    p.stop();
    CHECK_THROWS_WITH_AS(p.export_chrome_trace("/etc/passwd/trace.json"),
                         doctest::Contains("cannot write trace '/etc/passwd/trace.json'"), std::runtime_error);
    CHECK_THROWS_AS(p.export_chrome_trace("/etc/passwd/trace.json.gz"), std::runtime_error);
  }
  SUBCASE("spool directory that cannot hold files: start() throws and nothing records") {
    proftrace::profile p({.spool_dir = "/etc/passwd"});
    CHECK_THROWS_WITH_AS(p.start(), doctest::Contains("/etc/passwd/proftrace-"), std::runtime_error);
    CHECK_FALSE(p.running());
    nested_work();  // no session: nothing happens
    proftrace::profile q;
    q.start();  // the failed start left no session behind
    q.stop();
  }
  SUBCASE("tensorboard_trace_handler with an impossible directory: one warning, step() and stop() go on") {
    warning_capture warnings;
    proftrace::profile p({.schedule = proftrace::schedule({.wait = 0, .warmup = 1, .active = 1}),
                          .on_trace_ready = proftrace::tensorboard_trace_handler("/etc/passwd/logs")});
    p.start();
    for (int i = 0; i < 6; ++i) CHECK_NOTHROW(p.step());  // three traces ready, three handler failures
    CHECK_NOTHROW(p.stop());
    std::size_t failures = 0;
    for (const auto& w : warnings.seen) failures += w.find("Can't create directory: /etc/passwd/logs") != std::string::npos;
    CHECK(failures == 1);
  }
  SUBCASE("a PROF_STEP-driven trace whose handler fails warns instead of throwing into the program") {
    proftrace::profile p({.schedule = proftrace::schedule({.wait = 0, .warmup = 1, .active = 1}),
                          .on_trace_ready = proftrace::tensorboard_trace_handler("/etc/passwd/logs")});
    p.start();
    for (int i = 0; i < 3; ++i) {
      PROF_STEP();
      nested_work();
    }
    p.stop();
    CHECK(warnings.contains("Can't create directory: /etc/passwd/logs"));
  }
}

TEST_CASE("a trace handler's directory that cannot be made: said at start, and every trace kept and named") {
  warning_capture warnings;
  temp_dir spool("handler-dir-spool");
  proftrace::profile p({.schedule = proftrace::schedule({.wait = 0, .warmup = 1, .active = 1, .repeat = 2}),
                        .on_trace_ready = proftrace::tensorboard_trace_handler("/proc/nope"),
                        .spool_dir = spool.path});
  p.start();
  CHECK(warnings.contains("the trace handler's directory '/proc/nope' cannot be written"));
  for (int i = 0; i < 4; ++i) {
    nested_work();
    p.step();
  }
  p.stop();
  const auto kept = test_support::files_in(spool.path);
  REQUIRE(kept.size() == 2);  // both traces, complete: no .part left
  for (const auto& f : kept) {
    CAPTURE(f);
    CHECK(f.extension() == ".json");
    CHECK(warnings.contains(f.filename().string()) == (f == *std::min_element(kept.begin(), kept.end())));
    CHECK(!test_support::events_named(test_support::read_trace(f), "nested_work").empty());
  }
}

TEST_CASE("tensorboard_trace_handler names files the way TensorBoard expects") {
  temp_dir out("tb");
  proftrace::profile p({.schedule = proftrace::schedule({.wait = 0, .warmup = 1, .active = 1, .repeat = 2}),
                        .on_trace_ready = proftrace::tensorboard_trace_handler(out.path / "log", "worker0", true)});
  p.start();
  for (int i = 0; i < 4; ++i) {
    nested_work();
    p.step();
  }
  p.stop();
  const auto files = test_support::files_in(out.path / "log");
  REQUIRE(files.size() == 2);
  for (auto& f : files) {
    const std::string name = f.filename().string();
    CHECK(name.starts_with("worker0."));
    CHECK(name.ends_with(".pt.trace.json.gz"));
    const auto trace = read_trace(f);
    CHECK(test_support::events_named(trace, "nested_work").size() == 1);
  }
}

TEST_CASE("a scope open across a trace boundary appears, clipped, in both traces") {
  temp_dir out("clip");
  warning_capture warnings;  // warmup == 0 warns
  // Every step is RECORD_AND_SAVE: each step() closes one trace and opens the next.
  proftrace::profile p({.schedule = proftrace::schedule({.wait = 0, .warmup = 0, .active = 1}),
                        .on_trace_ready = proftrace::tensorboard_trace_handler(out.path, "w")});
  p.start();
  {
    PROF_SCOPE("epoch");
    for (int i = 0; i < 3; ++i) {
      nested_work();
      p.step();
    }
  }
  p.stop();
  const auto files = test_support::files_in(out.path);
  REQUIRE(files.size() == 4);
  for (auto& f : files) {
    const auto trace = read_trace(f);
    const auto epoch = test_support::events_named(trace, "epoch");
    REQUIRE(epoch.size() == 1);
    // Clipped to its window: it starts no earlier than the trace's base.
    CHECK(epoch[0].at("ts").to_number<double>() >= 0);
  }
}

TEST_CASE("the summary table has torch's layout") {
  proftrace::profile p;
  p.start();
  for (int i = 0; i < 3; ++i) nested_work();
  p.stop();
  const auto avg = p.key_averages();
  const std::string table = avg.table({.sort_by = "count", .header = "HEADER"});
  CHECK(table.find("HEADER\n") != std::string::npos);
  CHECK(table.find("Name") != std::string::npos);
  CHECK(table.find("Self CPU %") != std::string::npos);
  CHECK(table.find("# of Calls") != std::string::npos);
  CHECK(table.find("Self CPU time total: ") != std::string::npos);
  CHECK_THROWS_AS(avg.table({.sort_by = "bogus"}), std::invalid_argument);
  bool found = false;
  for (auto& r : avg.rows)
    if (r.key == "nested_work") {
      found = true;
      CHECK(r.count == 3);
      CHECK(r.self_cpu_time_total_ns <= r.cpu_time_total_ns);
    }
  CHECK(found);
  const auto by_shape = p.key_averages(true);
  // As torch's _build_table: recorded without record_shapes, no key has
  // shapes, so grouping by them shows no Input Shapes column.
  CHECK(by_shape.table().find("Input Shapes") == std::string::npos);
}

TEST_CASE("a trace write that fails mid-run (file size limit) warns once and the summary still counts") {
  warning_capture warnings;
  temp_dir spool("full");
  proftrace::profile p({.spool_dir = spool.path});
  {
    // The kernel refuses writes past 64 KiB from here on (EFBIG), as a full disk would.
    const test_support::file_size_limit limit(64 * 1024);
    p.start();
    for (int i = 0; i < 3000; ++i) nested_work();
    p.flush();
    p.stop();
  }

  // The flusher thread may be the one that met the failure: its warning can
  // arrive just after stop() returns.
  for (int i = 0; i < 3000 && !warnings.contains("the trace file stops here"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(warnings.contains("cannot write trace"));
  std::size_t write_warnings = 0;
  {
    std::lock_guard lock(warnings.mutex);
    for (auto& w : warnings.seen)
      if (w.find("the trace file stops here") != std::string::npos) ++write_warnings;
  }
  CHECK(write_warnings == 1);
  for (auto& r : p.key_averages().rows)
    if (r.key == "nested_work") CHECK(r.count == 3000);
  // What was written exports as a valid trace marked incomplete.
  p.export_chrome_trace(spool.path / "out.json");
  const auto exported = read_trace(spool.path / "out.json");
  CHECK(std::string(exported.at("proftrace").at("incomplete").as_string()).find("cannot write trace") != std::string::npos);
  CHECK(exported.at("traceEvents").as_array().size() > 0);
  // and the spool stays, named in the warning, for validate --repair.
  const auto spool_file = p.trace_path();
  CHECK(warnings.contains(spool_file.string()));
  CHECK(warnings.contains("validate --repair"));
  p.start();  // the next trace replaces the last one, which keeps its file
  p.stop();
  CHECK(std::filesystem::exists(spool_file));
}

TEST_CASE("RAII: session_scope records for a block; a destroyed session stops and frees the slot") {
  proftrace::profile p;
  {
    proftrace::session_scope recording(p);
    CHECK(p.running());
    nested_work();
  }
  CHECK_FALSE(p.running());
  CHECK(test_support::events_named(read_trace(p.trace_path()), "nested_work").size() == 1);
  {
    proftrace::profile forgotten;
    forgotten.start();
    nested_work();
  }  // destroyed while running: stopped, its spool removed
  proftrace::profile next;
  CHECK_NOTHROW(next.start());
  next.stop();
}
