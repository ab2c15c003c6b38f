// The C API (<proftrace/proftrace.h>) from C++: its config string, scopes
// pushed and popped (runtime names copied, literals interned), steps,
// instants, counters, args, and a pop with no push (counted, never a crash).
// tests/c_api/program.c checks the same header as C11.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>
#include <chrono>

#include <proftrace/proftrace.h>
#include <proftrace/macros.hpp>

#include "test_support.hpp"

using test_support::events_named;
using test_support::files_in;
using test_support::read_trace;
using test_support::temp_dir;

TEST_CASE("proftrace_start: a bad config names the key and starts nothing") {
  CHECK(proftrace_start("tabel") != 0);
  CHECK(std::string(proftrace_last_error()).find("unknown key 'tabel'") != std::string::npos);
  CHECK(proftrace_start("active=x") != 0);
  CHECK(std::string(proftrace_last_error()).find("'active'") != std::string::npos);
  CHECK(proftrace_start("format=xml") != 0);
  CHECK(std::string(proftrace_last_error()).find("'format'") != std::string::npos);
  CHECK(proftrace_recording() == 0);
  proftrace_stop();  // none running: nothing
}

TEST_CASE("proftrace_start: a schedule without active, or whose cycle overflows, says so; blanks around '=' are trimmed") {
  const auto refused = [](const char* config) {
    const int rc = proftrace_start(config);
    if (rc == 0) proftrace_stop();  // accepted: stop it so that the next case starts clean
    return rc != 0 ? std::string(proftrace_last_error()) : std::string("(accepted)");
  };
  CHECK(refused("wait=1") ==
        "proftrace_start: a schedule needs active=N with N >= 1 (skip_first, wait, warmup or repeat was given without it)");
  CHECK(refused("active=0") == "proftrace_start: bad value '0' for key 'active' (expected a whole number >= 1)");
  CHECK(refused("wait=9223372036854775806,warmup=1,active=1") ==
        "proftrace_start: Invalid profiler schedule arguments: the cycle wait + warmup + active "
        "(9223372036854775806 + 1 + 1) overflows a 64-bit step count");
  CHECK(refused("active=9223372036854775807,warmup=1") != "(accepted)");
  CHECK(proftrace_recording() == 0);

  temp_dir out("c-api-blanks");
  const std::string config = " out = " + out.path.string() + " , wait= 1 ,warmup =1, active = 2 , repeat\t=\t1 ";
  REQUIRE_MESSAGE(proftrace_start(config.c_str()) == 0, proftrace_last_error());
  for (int step = 0; step < 5; ++step) {
    proftrace_step();
    proftrace_push_literal("blank work");
    proftrace_pop();
  }
  proftrace_stop();
  const auto files = files_in(out.path);
  REQUIRE(files.size() == 1);
  CHECK(events_named(read_trace(files[0]), "blank work").size() == 2);  // active = 2, once
}

TEST_CASE("the C API: scopes, runtime names, literals, args, steps and a mismatched pop") {
  temp_dir out("c-api");
  const std::uint64_t unmatched_before = proftrace_unmatched_pops();
  proftrace_push("before the session");  // not recorded, still paired by its pop
  const std::string config = "out=" + out.path.string() + ",format=json,flops,memory";
  REQUIRE(proftrace_start(config.c_str()) == 0);
  CHECK(proftrace_start(config.c_str()) != 0);  // one at a time
  CHECK(std::string(proftrace_last_error()).find("already running") != std::string::npos);
  proftrace_pop();
  CHECK(proftrace_recording() == 1);
  for (int i = 0; i < 3; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "kernel %d", i % 2);
    proftrace_push(name);
    proftrace_arg_int("i", i);
    proftrace_arg_double("x", 1.5);
    proftrace_arg_string("solver", "cg");
    std::memset(name, 0, sizeof name);  // copied at push: the buffer may change
    proftrace_push_literal("literal");
    proftrace_matmul(2, 3, 4);
    proftrace_pop();
    proftrace_counter("residual", 0.25 * i);
    proftrace_instant("mark");
    proftrace_pop();
  }
  proftrace_push_n("fortran name   ", 12);
  proftrace_pop();
  proftrace_pop();  // no push open: counted
  CHECK(proftrace_unmatched_pops() == unmatched_before + 1);
  proftrace_stop();
  CHECK(proftrace_recording() == 0);
  const auto files = files_in(out.path);
  REQUIRE(files.size() == 1);
  const auto trace = read_trace(files[0]);
  CHECK(events_named(trace, "before the session").empty());
  const auto k1 = events_named(trace, "kernel 1");
  CHECK(k1.size() == 1);
  const auto k0 = events_named(trace, "kernel 0");
  REQUIRE(k0.size() == 2);
  const auto& args = k0[1].at("args").as_object();
  CHECK(args.at("i").as_int64() == 2);
  CHECK(args.at("x").as_double() == 1.5);
  CHECK(args.at("solver").as_string() == "cg");
  const auto lit = events_named(trace, "literal");
  REQUIRE(lit.size() == 3);
  CHECK(lit[0].at("args").as_object().at("flops").as_int64() == 48);
  // Nested: each literal lies inside a kernel scope.
  const auto ts = [](const boost::json::object& e) { return e.at("ts").as_double(); };
  const auto end = [&](const boost::json::object& e) { return ts(e) + e.at("dur").as_double(); };
  CHECK(ts(lit[0]) >= ts(k0[0]));
  CHECK(end(lit[0]) <= end(k0[0]));
  CHECK(events_named(trace, "fortran name").size() == 1);
  CHECK(events_named(trace, "mark").size() == 3);
}

TEST_CASE("the C API: a push and a step still open when their thread exits end there, in their own rows, counted") {
  temp_dir out("c-api-unpopped");
  const std::string config = "out=" + out.path.string() + ",format=json";
  REQUIRE(proftrace_start(config.c_str()) == 0);
  std::thread([] {
    proftrace_step();
    proftrace_step();
    proftrace_push("solver iteration");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }).join();  // returned without its pop, inside its second step
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  proftrace_stop();
  const auto files = files_in(out.path);
  REQUIRE(files.size() == 1);
  const auto trace = read_trace(files[0]);
  const auto scope = events_named(trace, "solver iteration");
  REQUIRE(scope.size() == 1);
  CHECK(scope[0].at("ph").as_string() == "X");
  CHECK_FALSE(scope[0].at("args").as_object().contains("truncated"));
  const double ms = scope[0].at("dur").as_double() / 1e3;
  CHECK(ms >= 20);
  CHECK(ms < 200);  // at its thread's end, not at the stop
  const auto step = events_named(trace, "ProfilerStep#1");  // keeps its number
  REQUIRE(step.size() == 1);
  CHECK(step[0].at("ph").as_string() == "X");
  const double step_end = step[0].at("ts").as_double() + step[0].at("dur").as_double();
  // Both end at the thread's exit; ts + dur in µs, each rounded to 3 decimals, may differ by a nanosecond.
  CHECK(step_end >= scope[0].at("ts").as_double() + scope[0].at("dur").as_double() - 0.002);
  const auto& counts = trace.at("proftrace").as_object();
  CHECK(counts.at("scopes_closed_at_thread_exit").as_int64() == 2);
  CHECK(counts.at("truncated_scopes").as_int64() == 0);
  CHECK(counts.at("lost_events_total").as_int64() == 0);
  CHECK(counts.at("scopes_ended_on_another_thread").as_int64() == 0);
}

namespace {
void nest(int depth) {
  if (depth == 0) return;
  proftrace_push_literal("level");
  nest(depth - 1);
  proftrace_pop();
}
}  // namespace

TEST_CASE("the C API: pushes nested past 256 are not recorded, and the stop says how many") {
  temp_dir out("c-api-deep");
  test_support::warning_capture warnings;
  const std::string config = "out=" + out.path.string() + ",format=json";
  REQUIRE(proftrace_start(config.c_str()) == 0);
  nest(300);
  proftrace_stop();
  const auto files = files_in(out.path);
  REQUIRE(files.size() == 1);
  CHECK(events_named(read_trace(files[0]), "level").size() == 256);
  CHECK(warnings.contains("44 proftrace_push() call(s) nested deeper than 256"));
}

TEST_CASE("the C API: an empty name is one empty-named row, however it was pushed") {
  temp_dir out("c-api-empty");
  const std::string config = "out=" + out.path.string() + ",format=json";
  REQUIRE(proftrace_start(config.c_str()) == 0);
  proftrace_push("");
  proftrace_pop();
  proftrace_push(nullptr);
  proftrace_pop();
  proftrace_push_n("x", 0);
  proftrace_pop();
  proftrace_push_literal("");
  proftrace_pop();
  proftrace_stop();
  const auto files = files_in(out.path);
  REQUIRE(files.size() == 1);
  const auto trace = read_trace(files[0]);
  CHECK(events_named(trace, "").size() == 4);
  CHECK(events_named(trace, "proftrace_push").empty());
}

TEST_CASE("the C API: proftrace_step drives a schedule; C++ macros land in the same trace") {
  temp_dir out("c-api-steps");
  const std::string config = "out=" + out.path.string() + ",wait=1,warmup=1,active=2,repeat=1";
  REQUIRE(proftrace_start(config.c_str()) == 0);
  for (int step = 0; step < 6; ++step) {
    proftrace_step();
    proftrace_push_literal("work");
    { PROF_SCOPE("c++ scope"); }
    proftrace_pop();
  }
  proftrace_stop();
  const auto files = files_in(out.path);
  REQUIRE(files.size() == 1);
  const auto trace = read_trace(files[0]);
  CHECK(events_named(trace, "ProfilerStep#2").size() == 1);
  CHECK(events_named(trace, "ProfilerStep#3").size() == 1);
  CHECK(events_named(trace, "ProfilerStep#1").empty());
  CHECK(events_named(trace, "work").size() == 2);
  CHECK(events_named(trace, "c++ scope").size() == 2);
}

TEST_CASE("the C API: a forked child starts a session of its own while its parent's runs") {
#if defined(__SANITIZE_THREAD__)
  MESSAGE("ThreadSanitizer cannot start threads in the child of a multi-threaded fork: skipped");
  return;
#endif
  temp_dir parent_out("c-api-fork-parent"), child_out("c-api-fork-child");
  const std::string parent_config = "out=" + parent_out.path.string() + ",format=json";
  REQUIRE(proftrace_start(parent_config.c_str()) == 0);
  proftrace_push("parent scope");
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const std::string config = "out=" + child_out.path.string() + ",format=json";
    if (proftrace_start(config.c_str()) != 0) {
      std::fprintf(stderr, "child: %s\n", proftrace_last_error());
      ::_exit(1);
    }
    proftrace_push("child scope");
    proftrace_pop();
    proftrace_stop();
    ::_exit(files_in(child_out.path).size() == 1 ? 0 : 2);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);  // 1: "already running", the parent's session named as the child's
  proftrace_pop();
  proftrace_stop();
  const auto child_files = files_in(child_out.path);
  REQUIRE(child_files.size() == 1);
  const auto child_trace = read_trace(child_files[0]);
  CHECK(events_named(child_trace, "child scope").size() == 1);
  CHECK(events_named(child_trace, "parent scope").empty());
  const auto parent_files = files_in(parent_out.path);
  REQUIRE(parent_files.size() == 1);
  CHECK(events_named(read_trace(parent_files[0]), "parent scope").size() == 1);
  CHECK(events_named(read_trace(parent_files[0]), "child scope").empty());
}

TEST_CASE("the C API: a _n name is cut at its first NUL, in the trace as in the table, for every kind of name") {
  temp_dir out("c-api-nul");
  const std::string config = "out=" + out.path.string() + ",format=json";
  REQUIRE(proftrace_start(config.c_str()) == 0);
  proftrace_push_n("scope\0tail", 10);
  proftrace_arg_string_n("key\0tail", 8, "value\0tail", 10);
  proftrace_arg_int_n("number\0tail", 11, 7);
  proftrace_instant_n("mark\0tail", 9);
  proftrace_counter_n("level\0tail", 10, 2.0);
  proftrace_pop();
  proftrace_stop();
  const auto files = files_in(out.path);
  REQUIRE(files.size() == 1);
  const auto trace = read_trace(files[0]);
  const auto scopes = events_named(trace, "scope");
  REQUIRE(scopes.size() == 1);
  const auto& args = scopes[0].at("args").as_object();
  CHECK(args.at("key").as_string() == "value");
  CHECK(args.at("number").as_int64() == 7);
  CHECK(events_named(trace, "mark").size() == 1);
  CHECK(events_named(trace, "level").size() == 1);
  const std::string text = boost::json::serialize(trace);
  CHECK(text.find("tail") == std::string::npos);
  CHECK(text.find("\\u0000") == std::string::npos);
}

TEST_CASE("memory events on a device outside -1..253 are refused and counted, from C and from PROF_ALLOC") {
  temp_dir out("c-api-devices");
  const std::string config = "out=" + out.path.string() + ",format=json,memory";
  REQUIRE(proftrace_start(config.c_str()) == 0);
  int a = 0, b = 0, c = 0, d = 0;
  proftrace_push("allocating");
  proftrace_alloc(&a, 64, -5);  // once "Device Id": 159 (wrapped to 8 bits)
  proftrace_alloc(&b, 64, 300);
  proftrace_alloc(&c, 64, 0);
  PROF_ALLOC(&d, 32, -7);
  proftrace_free(&a, -5);
  proftrace_free(&c, 0);
  proftrace_pop();
  proftrace_stop();
  const auto files = files_in(out.path);
  REQUIRE(files.size() == 1);
  const auto trace = read_trace(files[0]);
  const auto memory = events_named(trace, "[memory]");
  REQUIRE(memory.size() == 2);  // c's allocation and free
  for (const auto& m : memory) CHECK(m.at("args").as_object().at("Device Id").as_int64() == 0);
  CHECK(trace.at("proftrace").as_object().at("invalid_memory_devices").as_int64() == 4);
  CHECK(trace.at("proftrace").as_object().at("unknown_frees").as_int64() == 0);
}

TEST_CASE("the C API: format=none records a profile and writes no trace file") {
  temp_dir out("c-api-none");
  temp_dir spool("c-api-none-spool");
  const std::string config = "out=" + out.path.string() + ",format=none,spool_dir=" + spool.path.string();
  REQUIRE(proftrace_start(config.c_str()) == 0);
  CHECK(proftrace_recording() == 1);
  proftrace_push("profiled");
  proftrace_pop();
  CHECK(files_in(spool.path).empty());
  proftrace_stop();
  CHECK(files_in(out.path).empty());
  CHECK(files_in(spool.path).empty());
  CHECK(proftrace_start("format=none.gz") != 0);
  CHECK(std::string(proftrace_last_error()).find("none") != std::string::npos);
}
