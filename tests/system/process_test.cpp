// How a profiled process ends, is interrupted, killed or forked, checked on
// real child processes (process_child) and the files they leave behind.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <map>
#include <vector>

#include "test_support.hpp"
#include "formats/perfetto/perfetto_reader.hpp"

extern char** environ;

namespace {

using test_support::events_named;
using test_support::files_in;
using test_support::read_trace;
using test_support::temp_dir;

struct child_process {
  pid_t pid = -1;
  temp_dir dir{"child"};
  std::filesystem::path out = dir.path / "out";
  std::filesystem::path spool = dir.path / "spool";
  int status = 0;

  explicit child_process(const std::string& mode) {
    std::filesystem::create_directories(out);
    std::filesystem::create_directories(spool);
    const std::string stdout_path = (dir.path / "stdout").string(), stderr_path = (dir.path / "stderr").string();
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, 1, stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&files, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<std::string> env_text;
    for (char** e = environ; *e; ++e)
      if (!std::string_view(*e).starts_with("PROFTRACE_SPOOL_DIR=")) env_text.emplace_back(*e);
    env_text.push_back("PROFTRACE_SPOOL_DIR=" + spool.string());
    std::vector<char*> env;
    for (auto& e : env_text) env.push_back(e.data());
    env.push_back(nullptr);
    std::string program = PROFTRACE_PROCESS_CHILD, mode_arg = mode, out_arg = out.string();
    char* argv[] = {program.data(), mode_arg.data(), out_arg.data(), nullptr};
    posix_spawnattr_t attributes;  // its own process group: its forked children die with it
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
    REQUIRE(posix_spawn(&pid, program.c_str(), &files, &attributes, argv, env.data()) == 0);
    posix_spawn_file_actions_destroy(&files);
    posix_spawnattr_destroy(&attributes);
  }
  ~child_process() {
    if (pid > 0) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
    }
  }

  std::string text(const char* which) const {
    std::ifstream in(dir.path / which);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string stdout_text() const { return text("stdout"); }
  std::string stderr_text() const { return text("stderr"); }

  // Waits for the child to print `line` (a bounded wait: a hang fails).
  void wait_for_line(const std::string& line) {
    for (int i = 0; i < 3000; ++i) {
      if (stdout_text().find(line + "\n") != std::string::npos) return;
      int st = 0;
      if (::waitpid(pid, &st, WNOHANG) == pid) {
        pid = -1;
        FAIL("the child ended before printing '", line, "': ", stderr_text());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    FAIL("the child never printed '", line, "'");
  }

  // Waits (bounded) for the child to end; returns its wait status.
  int wait() {
    for (int i = 0; i < 6000; ++i) {
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    FAIL("the child did not end within 60 s (a lock held across fork or exit?)");
    return -1;
  }
};

bool exited_cleanly(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

std::vector<std::filesystem::path> traces_in(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  for (auto& f : files_in(dir))
    if (f.string().ends_with(".pt.trace.json")) out.push_back(f);
  return out;
}

void check_complete(const boost::json::object& trace, std::size_t work) {
  CHECK(events_named(trace, "work").size() == work);
  const auto& counts = trace.at("proftrace").as_object();
  CHECK(counts.at("lost_events_total").as_int64() == 0);
}

// The one finished trace the child left in `dir`, read back.
boost::json::object only_trace_in(const child_process& child, const std::filesystem::path& dir) {
  const auto traces = traces_in(dir);
  REQUIRE_MESSAGE(traces.size() == 1, child.stderr_text());
  return read_trace(traces[0]);
}

}  // namespace

TEST_CASE("exit() from another thread while main records: the trace is stopped and handed over, complete") {
  child_process child("exit-from-thread");
  REQUIRE(exited_cleanly(child.wait()));
  check_complete(only_trace_in(child, child.out), 1000);
  CHECK(traces_in(child.spool).empty());  // the spool went with the handed-over trace
}

TEST_CASE("exit() from another thread while main loops on p.step(): the program ends with exit()'s status") {
  for (int run = 0; run < 4; ++run) {
    child_process child("exit-while-stepping");
    const int status = child.wait();
    CHECK_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 7), child.stderr_text());
    CHECK(child.stderr_text().find("step() called on a profiler that is not running") == std::string::npos);
  }
}

TEST_CASE("exit() inside on_trace_ready: the handler runs once and the program ends with its status") {
  child_process child("exit-in-handler");
  const int status = child.wait();
  CHECK_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 5), child.stderr_text());
  CHECK(child.stdout_text() == "handler\n");
}

TEST_CASE("exit() from main inside a scope: the scope is complete on main's track, around its children") {
  child_process child("exit-with-scope-open");
  REQUIRE(exited_cleanly(child.wait()));
  const auto trace = only_trace_in(child, child.out);
  check_complete(trace, 1000);
  const auto outer = events_named(trace, "main scope");
  REQUIRE(outer.size() == 1);
  CHECK(outer[0].at("ph").as_string() == "X");
  const double begin = outer[0].at("ts").as_double(), end = begin + outer[0].at("dur").as_double();
  for (const auto& w : events_named(trace, "work")) {
    CHECK(w.at("tid") == outer[0].at("tid"));
    CHECK(w.at("ts").as_double() >= begin);
    CHECK(w.at("ts").as_double() + w.at("dur").as_double() <= end);
  }
  CHECK(trace.at("proftrace").as_object().at("scopes_ended_on_another_thread").as_int64() == 0);
}

TEST_CASE("a session never stopped (leaked, then return from main) is finished at exit") {
  child_process child("leaked-session");
  REQUIRE(exited_cleanly(child.wait()));
  check_complete(only_trace_in(child, child.out), 1000);
}

TEST_CASE("a static session with no on_trace_ready: at exit its trace is kept, named in a warning") {
  child_process child("static-session");
  REQUIRE(exited_cleanly(child.wait()));
  const auto kept = traces_in(child.spool);
  REQUIRE_MESSAGE(kept.size() == 1, child.stderr_text());
  check_complete(read_trace(kept[0]), 1000);
  CHECK(child.stderr_text().find("the program exited with the profiler running: its trace was stopped and kept at '" +
                                 kept[0].string() + "'") != std::string::npos);
  for (auto& f : files_in(child.spool)) CHECK_FALSE(f.string().ends_with(".part"));
}

TEST_CASE("a session started by an atexit handler that runs after proftrace's own is finished and kept too") {
  child_process child("start-in-late-atexit");
  REQUIRE(exited_cleanly(child.wait()));
  const auto kept = traces_in(child.spool);
  REQUIRE_MESSAGE(kept.size() == 1, child.stderr_text());
  check_complete(read_trace(kept[0]), 1000);
  CHECK(child.stderr_text().find("its trace was stopped and kept at '" + kept[0].string() + "'") != std::string::npos);
  for (auto& f : files_in(child.spool)) CHECK_FALSE(f.string().ends_with(".part"));
}

TEST_CASE("SIGTERM and SIGINT with finish_trace_on_signals: trace finished, then the signal ends the program") {
  for (const int sig : {SIGTERM, SIGINT}) {
    CAPTURE(sig);
    child_process child("signal");
    child.wait_for_line("ready");
    REQUIRE(::kill(child.pid, sig) == 0);
    const int status = child.wait();
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == sig);
    const auto trace = only_trace_in(child, child.out);
    check_complete(trace, 1000);
    CHECK_FALSE(events_named(trace, "spin").empty());  // recorded up to the signal
  }
}

TEST_CASE("a program's own signal handler still runs after the trace is finished") {
  child_process child("signal-with-program-handler");
  child.wait_for_line("ready");
  REQUIRE(::kill(child.pid, SIGTERM) == 0);
  const int status = child.wait();
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 42);
  check_complete(only_trace_in(child, child.out), 1000);
}

namespace {
// Runs process_child's `mode`, SIGKILLs it once it recorded, and returns the
// one spool (named `suffix`) it left.
std::filesystem::path spool_after_sigkill(const std::string& mode, const std::string& suffix, temp_dir& keep) {
  child_process child(mode);
  child.wait_for_line("ready");
  REQUIRE(::kill(child.pid, SIGKILL) == 0);
  const int status = child.wait();
  CHECK(WIFSIGNALED(status));
  std::vector<std::filesystem::path> spools;
  for (auto& f : files_in(child.spool))
    if (f.string().ends_with(suffix)) spools.push_back(f);
  REQUIRE(spools.size() == 1);
  const auto kept = keep.path / spools[0].filename();
  std::filesystem::rename(spools[0], kept);
  return kept;
}
}  // namespace

TEST_CASE("SIGKILL: the spool left behind is valid JSON as it is and holds every flushed event") {
  temp_dir keep("sigkill-json");
  const auto trace = read_trace(spool_after_sigkill("until-killed", ".pt.trace.json.part", keep));  // parses with no repair
  CHECK(events_named(trace, "work").size() == 1000);
  CHECK(trace.contains("proftrace"));
  CHECK(events_named(trace, "spin").size() == 100);
}

TEST_CASE("SIGKILL while streaming .pftrace: the spool left behind loads as it is and holds every flushed event") {
  temp_dir keep("sigkill-pftrace");
  const auto spool = spool_after_sigkill("until-killed-pftrace", ".pt.trace.pftrace.part", keep);
  std::map<std::string, int> slices;
  proftrace::detail::perfetto_callbacks cb;
  cb.on_event = [&](const proftrace::detail::decoded_event& e) {
    ++slices[e.name];
    return true;
  };
  const auto r = proftrace::detail::read_perfetto(spool, cb);  // packets are only appended: no repair needed
  CHECK_FALSE(r.truncated);
  CHECK(r.open_slices == 0);
  CHECK(slices["work"] == 1000);
  CHECK(slices["spin"] == 100);
}

TEST_CASE("fork() does not wait for a whole flush while another thread records flat out" *
          doctest::skip(PROFTRACE_TEST_SKIP_FORK || PROFTRACE_TEST_SKIP_TIMING)) {
  // The flusher drains between chunks and steps aside as soon as fork()'s
  // handler waits for its lock. Before, fork() waited for the flush in
  // progress: a median of about 290 ms here, over 1.5 s at worst.
  child_process child("fork-latency");
  REQUIRE_MESSAGE(exited_cleanly(child.wait()), child.stderr_text());
  double median = 0, longest = 0;
  REQUIRE(std::sscanf(child.stdout_text().c_str(), "fork ms median %lf max %lf", &median, &longest) == 2);
  MESSAGE("fork() took " << median << " ms (median), " << longest << " ms at most");
  CHECK(median < 150.0);  // against 290 ms before; room for a loaded machine's scheduling
}

TEST_CASE("fork(): children inherit no held lock and no flusher; by default they record nothing" *
          doctest::skip(PROFTRACE_TEST_SKIP_FORK)) {
  child_process child("fork-off");
  REQUIRE_MESSAGE(exited_cleanly(child.wait()), child.stderr_text());
  std::vector<boost::json::object> parents, owns;
  for (auto& f : traces_in(child.out))
    (f.filename().string().starts_with("parent.") ? parents : owns).push_back(read_trace(f));
  REQUIRE(parents.size() == 1);
  check_complete(parents[0], 2000);
  CHECK(events_named(parents[0], "child").empty());
  CHECK(events_named(parents[0], "own").empty());
  // Each of the 20 children ran a session of its own, which worked normally.
  REQUIRE(owns.size() == 20);
  for (auto& t : owns) {
    CHECK(events_named(t, "own").size() == 1);
    CHECK(events_named(t, "work").empty());
  }
  CHECK(traces_in(child.spool).empty());
}

TEST_CASE("fork() with fork_child::fresh_session: the child records its own trace, under its own pid" *
          doctest::skip(PROFTRACE_TEST_SKIP_FORK)) {
  child_process child("fork-fresh");
  REQUIRE_MESSAGE(exited_cleanly(child.wait()), child.stderr_text());
  const auto traces = traces_in(child.out);
  REQUIRE_MESSAGE(traces.size() == 2, child.stderr_text());
  int parent_traces = 0, child_traces = 0;
  std::int64_t parent_pid = -1, child_pid = -1;
  for (auto& f : traces) {
    const auto trace = read_trace(f);
    const auto work = events_named(trace, "work");
    const auto children = events_named(trace, "child");
    if (!work.empty()) {
      ++parent_traces;
      check_complete(trace, 2000);
      CHECK(children.empty());
      parent_pid = work[0].at("pid").as_int64();
    } else {
      ++child_traces;
      CHECK(children.size() == 100);
      CHECK(events_named(trace, "busy").empty());
      REQUIRE_FALSE(children.empty());
      child_pid = children[0].at("pid").as_int64();
    }
  }
  CHECK(parent_traces == 1);
  CHECK(child_traces == 1);
  CHECK(parent_pid != child_pid);
}

TEST_CASE("ulimit -f with SIGXFSZ at its default: one warning, the program finishes, the summary counts all") {
  child_process child("file-size-limit");
  REQUIRE_MESSAGE(exited_cleanly(child.wait()), child.stderr_text());
  const std::string out = child.stdout_text(), err = child.stderr_text();
  CHECK(out.find("work count 40000") != std::string::npos);
  CHECK(out.find("export marked incomplete") != std::string::npos);
  CHECK(out.find("finished") != std::string::npos);
  std::size_t warnings = 0;
  for (std::size_t at = err.find("the trace file stops here"); at != std::string::npos;
       at = err.find("the trace file stops here", at + 1))
    ++warnings;
  CHECK(warnings == 1);
}
