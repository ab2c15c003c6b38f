// What the running session does when the process exits, forks, or
// initialises or finalises MPI (process_hooks.hpp).
#include "process_hooks.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "collect/mpi/bridge.hpp"
#include "helpers/warn.hpp"
#include "proftrace/detail/recorder.hpp"
#include "session_impl.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

bool in_forked_child = false;

namespace {
std::atomic<bool> exit_hook_ran{false};
void finish_at_exit() {
  exit_hook_ran.store(true);
  session_access::finish_running("the program exited");
}
}  // namespace

void session_access::install_process_hooks() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::atexit(finish_at_exit);
    ::pthread_atfork(prepare_fork, parent_after_fork, child_after_fork);
  });
  // A session started by an atexit handler that runs after ours (registered
  // before it): the C library runs what exit processing registers, so it is
  // finished by one more call.
  if (exit_hook_ran.exchange(false)) std::atexit(finish_at_exit);
}

void session_access::finish_running(std::string_view why) noexcept {
  try {
    std::lock_guard lock(session_mutex);
    session* s = active_session;
    if (!s) return;
    session::impl& im = *s->impl_;
    if (im.running_handler) return;  // exit() from on_trace_ready: that handler has the trace
    im.ended_at_exit = true;
    s->stop();
    if (!im.last || im.last_owner != ::getpid()) return;
    if (im.opts.on_trace_ready) {  // it has had the trace
      im.discard_last();
      return;
    }
    // Nobody is left to export it: the spool, complete now, is the trace.
    const std::filesystem::path kept = im.keep_last_spool();
    im.discard_last();  // kept: no longer ours to remove
    warn(std::string(why) + " with the profiler running: its trace was stopped and kept at '" + kept.string() + "'");
  } catch (const std::exception& e) {
    warn(std::string(why) + " with the profiler running; stopping it failed: " + e.what());
  } catch (...) {
  }
}

void session_access::prepare_fork() noexcept {
  session_mutex.lock();
  flusher::instance().prepare_fork();
}

void session_access::parent_after_fork() noexcept {
  flusher::instance().parent_after_fork();
  session_mutex.unlock();
}

void session_access::child_after_fork() noexcept {
  // A recursive mutex remembers its owner's thread id, which the forking
  // thread no longer has here: unlocking would fail. Start it afresh.
  ::new (static_cast<void*>(&session_mutex)) std::recursive_mutex();
  flusher::instance().child_after_fork();
  in_forked_child = true;
  session* s = active_session;
  active_session = nullptr;
  session_state.store(0, std::memory_order_release);
  if (s) {
    session::impl& im = *s->impl_;
    im.trace_open = false;  // the parent's trace: the parent closes it
    im.api_step_open = false;
    im.collecting = {};  // the parent's: the parent stops them
    if (im.opts.in_forked_child == fork_child::fresh_session) {
      try {
        s->start();
      } catch (const std::exception& e) {
        warn(std::string("the forked child's fresh session could not start: ") + e.what());
      }
    }
  }
}

void on_mpi_initialised() noexcept { session_access::mpi_started(); }

void on_mpi_finalizing() noexcept { session_access::mpi_ending(); }

void session_access::mpi_started() noexcept {
  try {
    std::lock_guard lock(session_mutex);
    if (active_session && !active_session->impl_->ended_at_exit) active_session->impl_->align_after_mpi_init();
  } catch (...) {
    warn("measuring the clock offset after MPI_Init failed");
  }
}

void session_access::mpi_ending() noexcept {
  try {
    std::lock_guard lock(session_mutex);
    if (!active_session) return;
    session::impl& s = *active_session->impl_;
    if (s.ended_at_exit) return;
    // The job's report needs MPI, and every rank is here: a session that
    // reduces across ranks ends at MPI_Finalize (a PROFTRACE_CONFIG one
    // would otherwise end at exit, with MPI gone).
    if (s.opts.across_ranks) return active_session->stop();
    if (!s.trace_open) return;
    s.align_at_stop("at_mpi_finalize");
  } catch (...) {
    warn("measuring the clock offset (or ending an across_ranks session) before MPI_Finalize failed");
  }
}

}  // namespace proftrace::detail
