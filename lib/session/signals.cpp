#include "proftrace/signals.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include "process_hooks.hpp"
#include "proftrace/detail/recorder.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace {

// Read by the handler: written only while no handler of ours is installed
// for that signal, or under install_mutex before sigaction publishes it.
struct handled_signal {
  bool installed = false;
  struct sigaction previous {};
};
handled_signal handled[NSIG];
std::mutex install_mutex;
sigset_t handled_set = [] {
  sigset_t none;
  ::sigemptyset(&none);
  return none;
}();

int wake_pipe[2] = {-1, -1};
std::atomic<int> requested{0};   // the signal whose finishing began (0: none)
std::atomic<bool> finished{false};
std::atomic<long> timeout_ms{10000};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free);

void finisher_loop() {
  const detail::in_profiler_guard own_thread;
  for (;;) {
    int sig = 0;
    const ssize_t n = ::read(wake_pipe[0], &sig, sizeof sig);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof sig)) return;
    detail::session_access::finish_running(std::string("the program received ") + ::strsignal(sig));
    finished.store(true, std::memory_order_release);
  }
}

// With every signal blocked, so that the handler never runs on it.
void start_finisher() {
  sigset_t all, previous;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  std::thread(finisher_loop).detach();
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

// Async-signal-safe throughout: an atomic exchange, write(), nanosleep(),
// sigaction() and raise().
extern "C" void finish_then_reraise(int sig) {
  const int saved_errno = errno;
  int none = 0;
  if (requested.compare_exchange_strong(none, sig)) {
    const int request = sig;
    [[maybe_unused]] const ssize_t n = ::write(wake_pipe[1], &request, sizeof request);
  }
  const timespec one_ms{0, 1000000};
  const long limit = timeout_ms.load(std::memory_order_relaxed);
  for (long waited = 0; waited < limit && !finished.load(std::memory_order_acquire); ++waited) ::nanosleep(&one_ms, nullptr);
  ::sigaction(sig, &handled[sig].previous, nullptr);
  errno = saved_errno;
  ::raise(sig);  // delivered with the previous action once this handler returns
}

bool is_fault_signal(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGABRT;
}

}  // namespace

void finish_trace_on_signals(std::initializer_list<int> signals, std::chrono::milliseconds timeout) {
  for (int sig : signals) {
    if (sig <= 0 || sig >= NSIG) throw std::invalid_argument("proftrace: " + std::to_string(sig) + " is not a signal");
    if (sig == SIGKILL || sig == SIGSTOP)
      throw std::invalid_argument(std::string("proftrace: ") + ::strsignal(sig) + " cannot be caught");
    if (is_fault_signal(sig))
      throw std::invalid_argument(std::string("proftrace: ") + ::strsignal(sig) +
                                  " means the program crashed; the trace is not finished from there (the spool file "
                                  "keeps every flushed event)");
  }
  std::lock_guard lock(install_mutex);
  timeout_ms.store(static_cast<long>(timeout.count()), std::memory_order_relaxed);
  if (wake_pipe[0] < 0) {
    if (::pipe2(wake_pipe, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "proftrace: pipe");
    start_finisher();
    // A child of fork() has no finisher thread: give it its own.
    ::pthread_atfork(nullptr, nullptr, [] {
      requested.store(0, std::memory_order_relaxed);
      finished.store(false, std::memory_order_relaxed);
      start_finisher();
    });
  }
  for (int sig : signals) ::sigaddset(&handled_set, sig);
  for (int sig : signals) {
    if (handled[sig].installed) continue;
    struct sigaction ours {};
    ours.sa_handler = finish_then_reraise;
    ours.sa_mask = handled_set;  // no second handled signal nests on this thread
    ours.sa_flags = SA_RESTART;
    if (::sigaction(sig, &ours, &handled[sig].previous) != 0)
      throw std::system_error(errno, std::generic_category(), std::string("proftrace: sigaction ") + ::strsignal(sig));
    handled[sig].installed = true;
  }
}

void restore_signal_actions() noexcept {
  std::lock_guard lock(install_mutex);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (!handled[sig].installed) continue;
    ::sigaction(sig, &handled[sig].previous, nullptr);
    handled[sig].installed = false;
    ::sigdelset(&handled_set, sig);
  }
}

}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
