// The instrumented program that process_test runs in a child process, one
// way of ending (or forking) per mode:
//   process_child MODE OUT_DIR
// The spool directory comes from PROFTRACE_SPOOL_DIR. Each mode records
// `work` scopes first; process_test then checks what reached the disk.
#include <proftrace/proftrace.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

// Never deleted, but reachable, so LeakSanitizer lets it be.
proftrace::profile* leaked_profile = nullptr;

namespace {

constexpr int work_scopes = 1000;

void record_work(int n) {
  for (int i = 0; i < n; ++i) {
    PROF_SCOPE("work");
  }
}

[[noreturn]] void record_until_killed() {
  for (;;) {
    PROF_SCOPE("spin");
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void say(const char* line) {
  std::fputs(line, stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

proftrace::profile_options to(const std::filesystem::path& out) {
  return {.on_trace_ready = proftrace::tensorboard_trace_handler(out, "child")};
}

// A session at namespace scope, never stopped by the program.
proftrace::profile* static_session() {
  static proftrace::profile p;
  return &p;
}

int exit_from_thread(const std::filesystem::path& out) {
  proftrace::profile p(to(out));
  p.start();
  record_work(work_scopes);
  std::thread([] { std::exit(0); }).detach();
  record_until_killed();  // main goes on recording while the other thread exits
}

// exit(7) from another thread while main drives the schedule with p.step():
// the atexit hook stops the session under main's feet, and main's next
// step() must not turn that into an abort.
[[noreturn]] int exit_while_stepping(const std::filesystem::path& out) {
  auto options = to(out);
  options.schedule = proftrace::schedule({.wait = 1, .warmup = 1, .active = 2});
  proftrace::profile p(options);
  p.start();
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    std::exit(7);
  }).detach();
  for (;;) {
    record_work(10);
    p.step();
  }
}

// exit(5) from inside on_trace_ready: the handler runs once, the atexit hook
// does not run it again.
int exit_in_handler() {
  proftrace::profile p({.on_trace_ready = [](proftrace::session&) {
    say("handler");
    std::exit(5);
  }});
  p.start();
  record_work(work_scopes);
  p.stop();
  return 0;
}

// fork() while another thread records as fast as it can (the flusher always
// busy): prints the median and the longest time fork() took.
int fork_latency() {
  proftrace::profile p({.ring_events = 1u << 20, .flush_period = std::chrono::milliseconds(20)});
  p.start();
  std::atomic<bool> done{false};
  std::thread producer([&] {
    while (!done.load(std::memory_order_relaxed)) {
      PROF_SCOPE("busy");
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::vector<double> ms;
  for (int i = 0; i < 15; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(0);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    ::waitpid(pid, nullptr, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(13));
  }
  done = true;
  producer.join();
  p.stop();
  std::sort(ms.begin(), ms.end());
  std::printf("fork ms median %.2f max %.2f\n", ms[ms.size() / 2], ms.back());
  return 0;
}

int leaked_session(const std::filesystem::path& out) {
  auto* p = leaked_profile = new proftrace::profile(to(out));
  p->start();
  record_work(work_scopes);
  return 0;  // never stopped, never deleted
}

int static_session_without_handler() {
  static_session()->start();
  record_work(work_scopes);
  return 0;
}

// A session started by an atexit handler that runs after proftrace's own
// (registered before it), and never stopped.
proftrace::profile* late_profile = nullptr;
int start_in_late_atexit() {
  std::atexit([] {
    late_profile = new proftrace::profile();  // never stopped, never deleted (a global: no leak report)
    late_profile->start();
    record_work(work_scopes);
  });
  proftrace::profile first;  // its start() registers proftrace's exit hook, after the one above
  first.start();
  first.stop();
  return 0;
}

int on_signal(const std::filesystem::path& out, bool with_program_handler) {
  if (with_program_handler) {
    // The program's own handler, installed first: it must still run.
    std::signal(SIGTERM, [](int) { ::_exit(42); });
  }
  // A generous limit: a loaded sanitizer build may take seconds to finish it.
  proftrace::finish_trace_on_signals({SIGINT, SIGTERM}, std::chrono::seconds(120));
  proftrace::profile p(to(out));
  p.start();
  record_work(work_scopes);
  p.flush();
  {
    PROF_SCOPE("spin");  // recorded after the last flush, before the test can signal
  }
  say("ready");
  record_until_killed();
}

// Records, flushes, then idles: the kill finds no flush writing (a kill in
// the middle of a flush's write leaves a cut file; validate --repair's case).
int until_killed(proftrace::trace_format format) {
  proftrace::profile p({.flush_period = std::chrono::milliseconds(20), .stream_format = format});
  p.start();
  record_work(work_scopes);
  for (int i = 0; i < 100; ++i) {
    PROF_SCOPE("spin");
  }
  p.flush();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a few idle flush periods
  say("ready");
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

// fork() from a program whose other thread records and flushes constantly:
// each child must be able to record, use the profiler's API and exit at once
// (no lock inherited held), and nothing it does reaches the parent's trace.
int fork_children(const std::filesystem::path& out, bool fresh) {
  proftrace::profile p({.on_trace_ready = proftrace::tensorboard_trace_handler(out, "parent"),
                        .flush_period = std::chrono::milliseconds(1),
                        .in_forked_child = fresh ? proftrace::fork_child::fresh_session
                                                 : proftrace::fork_child::profiling_off});
  p.start();
  record_work(work_scopes);
  std::atomic<bool> done{false};
  std::thread busy([&] {
    while (!done.load()) {
      PROF_SCOPE("busy");
      p.flush();
    }
  });
  const int children = fresh ? 1 : 20;
  for (int c = 0; c < children; ++c) {
    const pid_t pid = ::fork();
    if (pid < 0) return 3;
    if (pid == 0) {
      if (p.running() != fresh) ::_exit(4);
      for (int i = 0; i < 100; ++i) {
        PROF_SCOPE("child");
      }
      if (!fresh) {
        // The child's own sessions work as in any process.
        proftrace::profile own({.on_trace_ready = proftrace::tensorboard_trace_handler(out, "own")});
        own.start();
        PROF_SCOPE("own");
      }
      std::exit(0);  // a fresh session is stopped at exit and handed to on_trace_ready
    }
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 5;
  }
  done = true;
  busy.join();
  record_work(work_scopes);
  p.stop();
  return 0;
}

// `ulimit -f` with SIGXFSZ at its default action (ending the program): the
// spool's writes fail instead, with one warning, and the program finishes.
int file_size_limit() {
  struct rlimit saved {};
  ::getrlimit(RLIMIT_FSIZE, &saved);
  struct rlimit small = saved;
  small.rlim_cur = 32 * 1024;
  if (::setrlimit(RLIMIT_FSIZE, &small) != 0) return 3;
  proftrace::profile p;
  p.start();
  for (int i = 0; i < 8; ++i) {
    record_work(5000);
    p.flush();
  }
  p.stop();
  const auto exported = std::filesystem::path(std::getenv("PROFTRACE_SPOOL_DIR")) / "export.json";
  ::setrlimit(RLIMIT_FSIZE, &saved);
  p.export_chrome_trace(exported);  // what the spool kept, marked incomplete
  std::ifstream in(exported);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.find("\"incomplete\"") != std::string::npos) std::printf("export marked incomplete\n");
  for (const auto& row : p.key_averages().rows)
    if (row.key == "work") std::printf("work count %lld\n", static_cast<long long>(row.count));
  say("finished");
  return 0;
}


// exit(0) from main inside a scope with children: the atexit stop closes it
// on main's track as a complete scope around them.
[[noreturn]] void exit_with_scope_open(const std::filesystem::path& out) {
  leaked_profile = new proftrace::profile(to(out));
  leaked_profile->start();
  PROF_SCOPE("main scope");
  record_work(work_scopes);
  std::exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: process_child MODE OUT_DIR\n");
    return 2;
  }
  const std::string_view mode = argv[1];
  const std::filesystem::path out = argv[2];
  if (mode == "exit-from-thread") return exit_from_thread(out);
  if (mode == "leaked-session") return leaked_session(out);
  if (mode == "exit-while-stepping") return exit_while_stepping(out);
  if (mode == "exit-in-handler") return exit_in_handler();
  if (mode == "exit-with-scope-open") exit_with_scope_open(out);
  if (mode == "fork-latency") return fork_latency();
  if (mode == "static-session") return static_session_without_handler();
  if (mode == "start-in-late-atexit") return start_in_late_atexit();
  if (mode == "signal") return on_signal(out, false);
  if (mode == "signal-with-program-handler") return on_signal(out, true);
  if (mode == "until-killed") return until_killed(proftrace::trace_format::json);
  if (mode == "until-killed-pftrace") return until_killed(proftrace::trace_format::pftrace);
  if (mode == "fork-off") return fork_children(out, false);
  if (mode == "fork-fresh") return fork_children(out, true);
  if (mode == "file-size-limit") return file_size_limit();
  std::fprintf(stderr, "process_child: unknown mode %s\n", argv[1]);
  return 2;
}
