// The execution trace observer: its lifecycle and errors, and the graph of
// a known nested program (node count, parents, control dependencies, shapes,
// FLOPs, External ids shared with the Kineto trace), attached to a session
// or on its own.
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <coroutine>
#include <map>
#include <thread>

#include "test_support.hpp"

using test_support::temp_dir;

namespace {

// main thread: outer { gemm(shapes, FLOPs) ; b { c } } ; a worker thread: worker
void known_program() {
  {
    PROF_SCOPE("outer");
    {
      PROF_SCOPE_SHAPES("gemm", {4, 8}, {8, 2});
      PROF_MATMUL(4, 2, 8);
    }
    {
      PROF_SCOPE("b");
      PROF_SCOPE("c");
    }
  }
  std::thread worker([] { PROF_SCOPE("worker"); });
  worker.join();
}

struct graph {
  boost::json::object doc;
  std::map<std::string, boost::json::object> by_name;  // scope nodes by name (each name once)
  std::map<std::int64_t, boost::json::object> by_id;
  std::size_t size() const { return doc.at("nodes").as_array().size(); }
  std::int64_t id(const std::string& name) const { return by_name.at(name).at("id").as_int64(); }
  std::int64_t parent(const std::string& name) const { return by_name.at(name).at("parent").as_int64(); }
  std::vector<std::int64_t> deps(const std::string& name) const {
    std::vector<std::int64_t> out;
    for (auto& d : by_name.at(name).at("ctrl_deps").as_array()) out.push_back(d.as_int64());
    return out;
  }
};

graph read_graph(const std::filesystem::path& p) {
  graph g;
  g.doc = boost::json::parse(test_support::read_text(p)).as_object();
  for (auto& v : g.doc.at("nodes").as_array()) {
    const auto& n = v.as_object();
    g.by_id[n.at("id").as_int64()] = n;
    const std::string category(n.at("category").as_string());
    if (category != "process" && category != "thread") g.by_name[std::string(n.at("name").as_string())] = n;
  }
  return g;
}

void check_known_program(const graph& g) {
  CHECK(g.doc.at("schema").as_string() == "proftrace.execution_trace/1");
  CHECK(g.doc.at("pid").as_int64() == ::getpid());
  // process + 2 threads + outer, gemm, b, c, worker
  REQUIRE(g.size() == 8);
  REQUIRE(g.by_name.size() == 5);
  const auto& root = g.by_id.at(1);
  CHECK(root.at("category").as_string() == "process");
  CHECK(root.at("parent").as_int64() == 0);
  // Parents.
  CHECK(g.parent("gemm") == g.id("outer"));
  CHECK(g.parent("b") == g.id("outer"));
  CHECK(g.parent("c") == g.id("b"));
  const auto& main_thread = g.by_id.at(g.parent("outer"));
  const auto& worker_thread = g.by_id.at(g.parent("worker"));
  CHECK(main_thread.at("category").as_string() == "thread");
  CHECK(worker_thread.at("category").as_string() == "thread");
  CHECK(main_thread.at("parent").as_int64() == 1);
  CHECK(worker_thread.at("parent").as_int64() == 1);
  CHECK(main_thread.at("thread").as_int64() != worker_thread.at("thread").as_int64());
  CHECK(g.by_name.at("outer").at("thread").as_int64() == main_thread.at("thread").as_int64());
  CHECK(g.by_name.at("worker").at("thread").as_int64() == worker_thread.at("thread").as_int64());
  // Control dependencies: the previous sibling on the same thread.
  CHECK(g.deps("gemm").empty());
  CHECK(g.deps("b") == std::vector<std::int64_t>{g.id("gemm")});
  CHECK(g.deps("c").empty());
  CHECK(g.deps("outer").empty());
  // A thread node follows no other thread's node.
  for (const auto& [id, n] : g.by_id)
    if (n.at("category").as_string() == "thread") CHECK(n.at("ctrl_deps").as_array().empty());
  // Ids follow start order: a parent before its children.
  CHECK(g.id("outer") < g.id("gemm"));
  CHECK(g.id("gemm") < g.id("b"));
  CHECK(g.id("b") < g.id("c"));
  // Times nest.
  const auto start = [&](const char* n) { return g.by_name.at(n).at("start_ns").as_int64(); };
  const auto end = [&](const char* n) { return start(n) + g.by_name.at(n).at("dur_ns").as_int64(); };
  CHECK(start("outer") <= start("gemm"));
  CHECK(end("c") <= end("b"));
  CHECK(end("b") <= end("outer"));
  // Inputs and FLOPs where known.
  const auto& gemm = g.by_name.at("gemm");
  CHECK(boost::json::serialize(gemm.at("inputs").at("shapes")) == "[[4,8],[8,2]]");
  CHECK(boost::json::serialize(gemm.at("inputs").at("types")) == R"(["Tensor","Tensor"])");
  CHECK(gemm.at("category").as_string() == "cpu_op");
  CHECK(gemm.at("flops").as_int64() == proftrace::flops::mm(4, 2, 8).value);
  CHECK_FALSE(g.by_name.at("b").contains("flops"));
  CHECK(g.by_name.at("b").at("inputs").at("shapes").as_array().empty());
  for (auto& [name, n] : g.by_name) {
    CHECK(n.at("external_id").as_int64() > 0);
    CHECK(n.at("async").as_bool() == false);
  }
}

}  // namespace

TEST_CASE("the observer's lifecycle and errors") {
  temp_dir out("et-life");
  proftrace::execution_trace_observer et;
  CHECK_FALSE(et.is_registered());
  CHECK_FALSE(et.is_running());
  CHECK_THROWS_WITH_AS(et.get_output_file_path(), doctest::Contains("register_callback"), std::logic_error);
  et.start();  // not registered: nothing happens
  CHECK_FALSE(et.is_running());

  const auto bad = std::filesystem::path("/nonexistent-proftrace-dir/et.json");
  CHECK_THROWS_WITH_AS(et.register_callback(bad), doctest::Contains(bad.string().c_str()), std::runtime_error);
  CHECK_FALSE(et.is_registered());

  const auto path = out.path / "et.json";
  CHECK(&et.register_callback(path) == &et);
  CHECK(et.is_registered());
  CHECK(et.get_output_file_path() == path);
  const auto empty = boost::json::parse(test_support::read_text(path)).as_object();  // valid before any capture
  CHECK(empty.at("nodes").as_array().empty());
  et.register_callback(out.path / "other.json");  // while registered the first path stays
  CHECK(et.get_output_file_path() == path);

  // On its own it runs a private session: another running session is an error.
  proftrace::profile other;
  other.start();
  CHECK_THROWS_WITH_AS(et.start(), doctest::Contains("another proftrace session is running"), std::logic_error);
  CHECK_FALSE(et.is_running());
  other.stop();

  et.start();
  CHECK(et.is_running());
  et.stop();
  CHECK_FALSE(et.is_running());
  et.unregister_callback();
  CHECK_FALSE(et.is_registered());
  CHECK_THROWS_AS(et.get_output_file_path(), std::logic_error);
}

TEST_CASE("attached to a session: the graph of a known nested program, linked to the Kineto trace") {
  temp_dir out("et-session");
  proftrace::execution_trace_observer et;
  et.register_callback(out.path / "et.json");
  proftrace::profile p({.record_shapes = true, .with_flops = true, .execution_trace_observer = &et});
  p.start();
  CHECK(et.is_running());
  known_program();
  p.stop();
  CHECK_FALSE(et.is_running());
  CHECK(et.node_count() == 8);
  const graph g = read_graph(out.path / "et.json");
  check_known_program(g);
  CHECK(g.doc.at("kineto_traces").as_int64() == 1);

  // The observer does not make events() available to a session that did not ask.
  CHECK_THROWS_AS(p.events(), std::logic_error);

  // "External id" links each node to its event in the Kineto trace.
  p.export_chrome_trace(out.path / "t.json");
  const auto trace = test_support::read_trace(out.path / "t.json");
  for (const char* name : {"outer", "gemm", "b", "c", "worker"}) {
    const auto kineto = test_support::events_named(trace, name);
    REQUIRE(kineto.size() == 1);
    CHECK(kineto[0].at("args").at("External id").as_int64() == g.by_name.at(name).at("external_id").as_int64());
  }
}

TEST_CASE("on its own: the same graph, written at stop()") {
  temp_dir out("et-alone");
  proftrace::execution_trace_observer et;
  et.register_callback(out.path / "et.json");
  et.start();
  known_program();
  et.stop();
  check_known_program(read_graph(out.path / "et.json"));
  et.start();  // a new capture replaces the graph
  et.stop();
  CHECK(read_graph(out.path / "et.json").size() == 0);
}

TEST_CASE("an observer whose file became unwritable throws from stop(), naming the path") {
  temp_dir out("et-unwritable");
  const auto dir = out.path / "sub";
  std::filesystem::create_directories(dir);
  proftrace::execution_trace_observer et;
  et.register_callback(dir / "et.json");
  et.start();
  { PROF_SCOPE("x"); }
  std::filesystem::remove_all(dir);
  CHECK_THROWS_WITH_AS(et.stop(), doctest::Contains((dir / "et.json").string().c_str()), std::runtime_error);
  CHECK_FALSE(et.is_running());
}

TEST_CASE("attached to a session, the observer's path became unwritable: the session's stop() warns, its trace stands") {
  temp_dir out("et-session-unwritable");
  const auto dir = out.path / "sub";
  std::filesystem::create_directories(dir);
  test_support::warning_capture warnings;
  proftrace::execution_trace_observer et;
  et.register_callback(dir / "et.json");
  proftrace::profile p({.execution_trace_observer = &et});
  p.start();
  { PROF_SCOPE("x"); }
  std::filesystem::remove_all(dir);
  CHECK_NOTHROW(p.stop());
  REQUIRE(warnings.seen.size() == 1);
  CHECK(warnings.seen[0].find((dir / "et.json").string()) != std::string::npos);
  CHECK(p.has_trace());
  CHECK(p.key_averages().table().find("x") != std::string::npos);
  CHECK_FALSE(et.is_running());
}

TEST_CASE("attached to a running session, start() and stop() open and close windows of it") {
  temp_dir out("et-windows");
  proftrace::execution_trace_observer et;
  // Registered late: attached, not yet registered, when the session starts.
  proftrace::profile p({.record_shapes = true, .execution_trace_observer = &et});
  p.start();
  { PROF_SCOPE("before registration"); }
  et.register_callback(out.path / "et.json");
  CHECK_NOTHROW(et.start());  // joins the session it is attached to
  CHECK(et.is_running());
  { PROF_SCOPE("in the window"); }
  p.stop();  // the session's trace finishes: the window's graph is written
  CHECK_FALSE(et.is_running());
  graph g = read_graph(out.path / "et.json");
  CHECK(g.by_name.count("in the window") == 1);
  CHECK(g.by_name.count("before registration") == 0);  // before start(): not in the window

  // Stopped, then started again while the session runs.
  p.start();
  CHECK(et.is_running());  // a registered observer starts with its session
  { PROF_SCOPE("first window"); }
  et.stop();  // pending: its scopes are in the trace still recording
  CHECK_NOTHROW(et.start());  // writes the pending window's graph, of the traces finished so far (none)
  CHECK(et.is_running());
  CHECK(read_graph(out.path / "et.json").size() == 0);
  { PROF_SCOPE("second window"); }
  p.stop();
  g = read_graph(out.path / "et.json");
  CHECK(g.by_name.count("second window") == 1);
  CHECK(g.by_name.count("first window") == 0);
}

TEST_CASE("async ranges become nodes under the thread that began them, outside the control order") {
  temp_dir out("et-async");
  proftrace::execution_trace_observer et;
  et.register_callback(out.path / "et.json");
  et.start();
  {
    PROF_SCOPE("first");
  }
  auto r = PROF_ASYNC_RANGE("handoff");
  std::thread t([r = std::move(r)]() mutable { r.end(); });
  t.join();
  {
    PROF_SCOPE("second");
  }
  et.stop();
  const graph g = read_graph(out.path / "et.json");
  const auto& handoff = g.by_name.at("handoff");
  CHECK(handoff.at("async").as_bool());
  CHECK(handoff.at("ctrl_deps").as_array().empty());
  CHECK(g.by_id.at(handoff.at("parent").as_int64()).at("category").as_string() == "thread");
  CHECK(handoff.at("end_thread").as_int64() != handoff.at("thread").as_int64());
  CHECK(g.deps("second") == std::vector<std::int64_t>{g.id("first")});
}

namespace {

// Resumes the awaiting coroutine on a new thread (joined by the test).
std::thread resumer;
struct hop_to_new_thread {
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) const { resumer = std::thread([h] { h.resume(); }); }
  void await_resume() const noexcept {}
};
// job begins on the caller's thread, part1 closes inside it there, and job ends on another thread.
test_support::detached job() {
  PROF_SCOPE("job");
  { PROF_SCOPE("part1"); }
  co_await hop_to_new_thread{};
}

}  // namespace

TEST_CASE("a scope that ended on another thread: what ran inside it on its first thread stays under the scope around it") {
  temp_dir out("et-moved");
  proftrace::execution_trace_observer et;
  et.register_callback(out.path / "et.json");
  et.start();
  {
    PROF_SCOPE("outer");
    job();
    resumer.join();
    { PROF_SCOPE("after"); }
  }
  { PROF_SCOPE("next"); }
  et.stop();
  const graph g = read_graph(out.path / "et.json");
  CHECK(g.by_name.at("job").at("async").as_bool());
  // job is an async range, outside the control tree: part1 goes under outer,
  // the scope around it on its thread, and not under the thread after outer.
  CHECK(g.parent("part1") == g.id("outer"));
  CHECK(g.parent("after") == g.id("outer"));
  CHECK(g.deps("after") == std::vector<std::int64_t>{g.id("part1")});
  CHECK(g.by_id.at(g.parent("next")).at("category").as_string() == "thread");
  CHECK(g.deps("next") == std::vector<std::int64_t>{g.id("outer")});
}

TEST_CASE("a window inside one trace of a session (no schedule): its graph is written when that trace finishes") {
  temp_dir out("et-window-in-trace");
  proftrace::execution_trace_observer et;
  proftrace::profile p({.execution_trace_observer = &et});
  p.start();
  { PROF_SCOPE("before"); }
  et.register_callback(out.path / "et.json");
  et.start();
  { PROF_SCOPE("in window 1"); }
  { PROF_SCOPE("in window 2"); }
  et.stop();
  CHECK_FALSE(et.is_running());
  { PROF_SCOPE("after"); }
  p.stop();  // the trace finishes: the window's graph is written
  const graph g = read_graph(out.path / "et.json");
  CHECK(et.node_count() == g.size());
  CHECK(g.by_name.count("in window 1") == 1);
  CHECK(g.by_name.count("in window 2") == 1);
  CHECK(g.by_name.count("before") == 0);
  CHECK(g.by_name.count("after") == 0);
  CHECK(g.deps("in window 2") == std::vector<std::int64_t>{g.id("in window 1")});

  // Unregistered before the trace finishes: written at once, with what has finished (nothing here).
  proftrace::execution_trace_observer early;
  proftrace::profile q({.execution_trace_observer = &early});
  q.start();
  early.register_callback(out.path / "early.json");
  early.start();
  { PROF_SCOPE("unfinished"); }
  early.stop();
  early.unregister_callback();
  q.stop();
  CHECK(read_graph(out.path / "early.json").size() == 0);
}

TEST_CASE("a window stopped inside a scheduled trace: its graph is written when that trace finishes, at a step") {
  temp_dir out("et-window-schedule");
  proftrace::execution_trace_observer et;
  et.register_callback(out.path / "et.json");
  proftrace::profile p({.schedule = proftrace::schedule({.warmup = 1, .active = 2}), .execution_trace_observer = &et});
  p.start();
  { PROF_SCOPE("warmup step"); }
  p.step();  // step 1: active, the trace records
  { PROF_SCOPE("active 1"); }
  et.stop();
  { PROF_SCOPE("after stop"); }
  p.step();
  { PROF_SCOPE("active 2"); }
  p.step();  // the trace finishes: the pending window's graph is written here, before the session's stop()
  const graph g = read_graph(out.path / "et.json");
  CHECK(et.node_count() == g.size());
  CHECK(g.by_name.count("active 1") == 1);
  CHECK(g.by_name.count("after stop") == 0);
  CHECK(g.by_name.count("active 2") == 0);
  CHECK(g.doc.at("kineto_traces").as_int64() == 1);
  p.stop();
  CHECK(read_graph(out.path / "et.json").size() == g.size());  // nothing more: the window was closed
}

TEST_CASE("a pending window whose path became unwritable: a warning when its trace finishes, the session goes on") {
  temp_dir out("et-pending-unwritable");
  const auto dir = out.path / "sub";
  std::filesystem::create_directories(dir);
  test_support::warning_capture warnings;
  proftrace::execution_trace_observer et;
  et.register_callback(dir / "et.json");
  proftrace::profile p({.schedule = proftrace::schedule({.warmup = 1, .active = 1}), .execution_trace_observer = &et});
  p.start();
  p.step();  // step 1: active
  { PROF_SCOPE("active"); }
  et.stop();  // pending
  std::filesystem::remove_all(dir);
  CHECK_NOTHROW(p.step());  // the trace finishes: the graph cannot be written
  REQUIRE(warnings.seen.size() == 1);
  CHECK(warnings.seen[0].find((dir / "et.json").string()) != std::string::npos);
  CHECK(p.has_trace());
  CHECK_NOTHROW(p.stop());
}
