// A session's lifecycle: constructed, started, stopped, destroyed; the
// queries of its state. Its other work is in the files session_impl.hpp names.
#include <stdexcept>

#include "recording/environment_session.hpp"
#include "helpers/warn.hpp"
#include "process_hooks.hpp"
#include "proftrace/detail/recorder.hpp"
#include "proftrace/execution_trace.hpp"
#include "recording/registry.hpp"
#include "session_impl.hpp"
#include "trace_ranks.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {
std::recursive_mutex session_mutex;
session* active_session = nullptr;
}  // namespace detail

namespace {
std::uint64_t session_generation = 0;
}  // namespace

session::session(profile_options options, activity_set compiled) : impl_(std::make_unique<impl>()) {
  impl& s = *impl_;
  s.opts = std::move(options);
  if (s.opts.activities.empty() || !PROFTRACE_ENABLED) {
    s.activities = compiled;
  } else {
    s.activities = s.opts.activities & compiled;
    // Every activity asked for, by value: a new collector's needs no line here.
    const std::uint32_t missing = s.opts.activities.bits() & ~compiled.bits();
    for (unsigned value = 0; value < 32; ++value)
      if (missing & (1u << value))
        detail::warn("activity " + std::string(to_string(static_cast<activity>(value))) +
                     " is not compiled into this build; ignored");
  }
  // A build with PROFTRACE_ENABLED=0 compiles no collector in: its sessions
  // run and write valid traces with nothing in them, so a program need not
  // change to build without profiling.
  if (s.activities.empty() && PROFTRACE_ENABLED) throw std::invalid_argument("No valid profiler activities found");
  s.requested = s.activities;
  s.fallback = compiled & activity_set{activity::cpu};
#if !PROFTRACE_WITH_CUDA
  if (s.opts.cuda_profiler_gating) detail::warn("cuda_profiler_gating needs a build with CUDA; ignored");
#endif
#if !PROFTRACE_WITH_COUNTERS
  if (!s.opts.counters.empty()) detail::warn("counters need a build with PROFTRACE_WITH_COUNTERS (Linux); ignored");
#endif
  if (s.opts.flush_period <= std::chrono::milliseconds::zero())
    throw std::invalid_argument("proftrace: flush_period must be positive");
  if (s.opts.ring_events < 64 || (s.opts.ring_events & (s.opts.ring_events - 1)) != 0)
    throw std::invalid_argument("proftrace: ring_events must be a power of two >= 64");
  s.traces_here = detail::traces_this_rank(s.opts.trace_ranks, -1);  // checks the list now
  s.record_steps = static_cast<bool>(s.opts.schedule);
  s.sched = s.opts.schedule ? s.opts.schedule : schedule_fn(default_schedule);
  s.current = s.sched(0);
}

session::~session() {
  try {
    stop();
  } catch (const std::exception& e) {
    detail::warn(std::string("stopping the profiler at destruction failed: ") + e.what());
  } catch (...) {
  }
}

void session::start() {
  // A session PROFTRACE_CONFIG started gives way to the program's own (lib/c_api/c_api.cpp).
  if (impl_->opts.enabled) detail::yield_environment_session(this);
  std::lock_guard lock(detail::session_mutex);
  if (!impl_->opts.enabled) return;
  if (detail::active_session == this)
    throw std::logic_error("proftrace: the profiler is not reentrant: this profiler is already running");
  if (detail::active_session) throw std::logic_error("proftrace: another profiler is already running; stop it before starting a new one");
  impl& s = *impl_;
  s.check_handler_destination();
  detail::calibrate_clock();  // chooses the time source before anything is recorded
  detail::set_overflow_policy(s.opts.overflow.value_or(static_cast<overflow_policy>(PROFTRACE_OVERFLOW_POLICY)));
  detail::registry::instance().set_ring_events(s.opts.ring_events);
  detail::flusher::instance().ensure_running(s.opts.flush_period);
  detail::session_access::install_process_hooks();
  s.generation = ++session_generation;
  s.scoped_steps = false;
  s.start_collectors();
  s.dist = distributed();
  s.traces_here = detail::traces_this_rank(s.opts.trace_ranks, s.dist ? s.dist->rank : -1);
  s.clock_alignment = detail::clock_alignment_json(s.dist, "at_start");
  detail::active_session = this;
  detail::session_state.store(detail::state_session, std::memory_order_release);
  try {
    if (s.observing()) s.opts.execution_trace_observer->on_session_start();
    s.ended_at_exit = false;
    s.transit(*this, profiler_action::none, s.current, /*throws=*/true);
  } catch (...) {
    if (s.observing()) s.opts.execution_trace_observer->on_session_abandoned();
    s.set_recording(false);
    s.trace_open = false;
    s.stop_collectors();
    detail::session_state.store(0, std::memory_order_release);
    detail::active_session = nullptr;
    throw;
  }
  s.open_api_step();
}

void session::stop() {
  std::lock_guard lock(detail::session_mutex);
  if (detail::active_session != this) return;
  impl& s = *impl_;
  s.close_api_step();
  // Collective on every rank, like the one at start(): the drift since then,
  // in the tail of the trace still open. Not when exit() or a signal ends
  // the session: the other ranks are not stopping, and waiting for them
  // would hang the job. The profiler's own allocations.
  const detail::in_profiler_guard own_work;
  if (!s.ended_at_exit) {
    s.align_after_mpi_init();
    s.align_at_stop("at_stop");
  }
  {
    struct reset_on_exit {
      impl& s;
      ~reset_on_exit() {
        detail::session_state.store(0, std::memory_order_release);
        detail::active_session = nullptr;
        s.stop_collectors();
      }
    } reset{s};
    // Torch closes a trace still recording at the end; the report says it
    // stopped short of the schedule's last active step.
    const bool cut_short = s.record_steps && s.trace_open && s.current == profiler_action::record;
    // Stopped in warmup, torch finishes a trace of nothing: the report says so.
    const bool in_warmup = s.record_steps && s.current == profiler_action::warmup;
    const auto* before = s.last.get();  // the note goes on the trace this stop finishes, if it finishes one
    const std::int64_t at_step = s.step_num;
    s.transit(*this, s.current, std::nullopt);
    if (cut_short && s.last)
      s.last_note = "partial trace: stop() ended it at step " + std::to_string(at_step) +
                    ", before its schedule's last active step";
    if (in_warmup && s.last && s.last.get() != before)
      s.last_note = "empty trace: stop() ended it at step " + std::to_string(at_step) +
                    ", during its schedule's warmup (a schedule records from its first active step)";
  }
  // The observer writes its graph over the same window; a path that became
  // unwritable is a warning here, as any failure inside stop().
  if (s.observing()) {
    try {
      s.opts.execution_trace_observer->on_session_stop();
    } catch (const std::exception& e) {
      detail::warn(std::string(e.what()) + "; the session's trace is not affected");
    }
  }
}

void session::flush() { detail::flusher::instance().flush_now(); }

bool session::running() const {
  std::lock_guard lock(detail::session_mutex);
  return detail::active_session == this;
}
std::int64_t session::step_num() const {
  std::lock_guard lock(detail::session_mutex);
  return impl_->step_num;
}
profiler_action session::current_action() const {
  std::lock_guard lock(detail::session_mutex);
  return impl_->current;
}
activity_set session::activities() const { return impl_->activities; }

}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
