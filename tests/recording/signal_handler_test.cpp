// Recording from a signal handler (a sampling SIGPROF timer) while the
// interrupted thread records too: nothing hangs, and every event the
// handler and the thread produced is written or counted as lost.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/time.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <proftrace/proftrace.h>
#include <proftrace/proftrace.hpp>

#include "test_support.hpp"

using test_support::read_trace;
using test_support::temp_dir;

namespace {

std::atomic<std::int64_t> handler_events{0};
std::atomic<int> handler_step{0};
const char* const handler_names[] = {"handler 0", "handler 1", "handler 2", "handler 3"};

// Instants and counters by name (the C API interns them: a lock behind a
// per-thread cache), and a push/pop pair, in turn.
void on_sigprof(int) {
  const int saved_errno = errno;
  const int step = handler_step.fetch_add(1, std::memory_order_relaxed);
  switch (step % 3) {
    case 0:
      proftrace_instant(handler_names[step % 4]);
      handler_events.fetch_add(1, std::memory_order_relaxed);
      break;
    case 1:
      proftrace_counter("handler counter", step);
      handler_events.fetch_add(1, std::memory_order_relaxed);
      break;
    default:
      proftrace_push("handler scope");
      proftrace_pop();
      handler_events.fetch_add(2, std::memory_order_relaxed);
  }
  errno = saved_errno;
}

void set_timer(long usec) {
  itimerval t{};
  t.it_interval.tv_usec = usec;
  t.it_value.tv_usec = usec;
  setitimer(ITIMER_PROF, &t, nullptr);
}

// A hang is this test's failure: it ends the process, not the CI job.
// The watchdog blocks SIGPROF: a process-directed signal landing on a thread
// that never recorded would attach that thread's ring, which allocates
// (README "Signal handlers"), and the test is about threads that record.
struct watchdog {
  std::atomic<bool> done{false};
  std::thread t{[this] {
    sigset_t prof;
    sigemptyset(&prof);
    sigaddset(&prof, SIGPROF);
    pthread_sigmask(SIG_BLOCK, &prof, nullptr);
    for (int i = 0; i < 600 && !done.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!done.load()) {
      std::fputs("signal_handler_test: hung for 60 s (a recording call deadlocked in a signal handler)\n", stderr);
      std::_Exit(2);
    }
  }};
  ~watchdog() {
    done = true;
    t.join();
  }
};

std::int64_t trace_counter(const boost::json::object& trace, const char* key) {
  const auto& p = trace.at("proftrace").as_object();
  return p.contains(key) ? p.at(key).as_int64() : 0;
}

}  // namespace

TEST_CASE("a SIGPROF handler records while its thread records: no hang, written + lost = produced") {
  const watchdog guard;
  temp_dir out("signal-handler");
  struct sigaction sa {};
  sa.sa_handler = on_sigprof;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  REQUIRE(sigaction(SIGPROF, &sa, nullptr) == 0);

  // `block`: no event is lost to a full ring, so the losses are the handler's.
  proftrace::profile p({.overflow = proftrace::overflow_policy::block, .stream_format = proftrace::trace_format::json});
  p.start();
  // The handler's names are interned here first: interning a new name
  // allocates, which a signal handler must not (README "Signal handlers").
  for (const char* n : handler_names) proftrace_instant(n);
  proftrace_counter("handler counter", 0);
  set_timer(50);  // 20 kHz of CPU time: many land inside the thread's own recording calls
  std::int64_t main_events = 5;  // the interning calls above
  char name[32];
  // 1.5 s, and on until the handler ran 200 times: ITIMER_PROF counts this
  // process's CPU time, which a loaded machine hands out slowly (30 s at most).
  const auto start = std::chrono::steady_clock::now();
  const auto running = [&] {
    const auto t = std::chrono::steady_clock::now() - start;
    return t < std::chrono::milliseconds(1500) || (handler_step.load() < 200 && t < std::chrono::seconds(30));
  };
  for (int i = 0; running(); ++i) {
    std::snprintf(name, sizeof name, "main %d", i % 128);  // 128 names: the interning lock, again and again
    proftrace_instant(name);
    proftrace_push("main scope");
    proftrace_pop();
    main_events += 3;
    for (const auto spin = std::chrono::steady_clock::now() + std::chrono::microseconds(2);
         std::chrono::steady_clock::now() < spin;) {
    }
  }
  set_timer(0);
  signal(SIGPROF, SIG_IGN);
  p.stop();
  p.export_chrome_trace(out.path / "t.json");

  const auto trace = read_trace(out.path / "t.json");
  std::int64_t written = 0;
  for (const auto& v : trace.at("traceEvents").as_array()) {
    const auto& e = v.as_object();
    if (!e.contains("name")) continue;
    const std::string n(e.at("name").as_string());
    const std::string ph(e.at("ph").as_string());
    if (n.rfind("main", 0) == 0 || n.rfind("handler", 0) == 0) written += ph == "X" ? 2 : 1;
  }
  const std::int64_t lost = trace_counter(trace, "lost_events_total");
  const std::int64_t produced = main_events + handler_events.load();
  MESSAGE("produced " << produced << " (handler " << handler_events.load() << "), written " << written << ", lost " << lost);
  CHECK(handler_step.load() > 100);
  CHECK(written + lost == produced);
  CHECK(lost == trace_counter(trace, "dropped_events") + trace_counter(trace, "unpaired_events") +
                    trace_counter(trace, "unattached_events"));
}
