// The schedule's steps: step() and PROF_STEP advance it, and each
// transition opens, closes or hands on a trace.
#include <algorithm>
#include <stdexcept>

#include "helpers/warn.hpp"
#include "proftrace/detail/recorder.hpp"
#include "recording/registry.hpp"
#include "session_impl.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace {

struct thread_steps {
  std::uint64_t generation = 0;
  std::int64_t step = 0;
};
thread_local thread_steps this_thread_steps;

}  // namespace

void session::impl::set_recording(bool on) {
  detail::session_state.store(on ? recording_bits() : detail::state_session, std::memory_order_release);
}

void session::impl::start_trace() {
  take_gpu();  // GPU work from before this trace (a wait or warmup phase) belongs to none
  // Throws, recording nothing, when the spool cannot be created.
  detail::flusher::instance().switch_window(detail::now_ticks(), window_for_next_trace(), scoped_steps);
  trace_open = true;
  set_recording(true);
  gate_cuda_profiler(true);
}

// start_trace from step(), stop() or a PROF_STEP: a spool that cannot be
// made (its directory removed, a full disk) loses that trace, with one
// warning per session; the schedule goes on.
void session::impl::start_trace_or_warn(bool throws) {
  try {
    start_trace();
  } catch (const std::exception& e) {
    if (throws) throw;
    if (!std::exchange(warned_start_trace, true))
      detail::warn(std::string("a trace could not be started, so it is not recorded: ") + e.what() +
                   " (later failures of this session are not reported)");
  }
}

void session::impl::stop_trace() {
  if (!trace_open) return;
  gate_cuda_profiler(false);
  set_recording(false);
  const std::uint64_t t = detail::now_ticks();
  trace_open = false;
  finish(detail::flusher::instance().switch_window(t, std::nullopt, scoped_steps, take_gpu()));
}

// stop_trace immediately followed by start_trace: one switch, so recording
// never pauses and a scope open across it appears in both traces.
void session::impl::restart_trace(bool throws) {
  if (!trace_open) return start_trace_or_warn(throws);
  try {
    const std::uint64_t t = detail::now_ticks();
    finish(detail::flusher::instance().switch_window(t, window_for_next_trace(), scoped_steps, take_gpu()));
  } catch (...) {
    stop_trace();  // the next trace's file could not be made: end this one cleanly
    start_trace_or_warn(throws);  // and report it as a start that failed
  }
}

// `throws`: from start(), whose caller learns that the first trace's spool
// cannot be made; from step() and stop(), problems are warnings.
void session::impl::transit(session& self, profiler_action previous, std::optional<profiler_action> next,
                            bool throws) {
  const detail::in_profiler_guard own_allocations;  // and on_trace_ready's: not the program's memory
  const auto ops = transition(previous, next);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    switch (ops[i]) {
      case transition_op::warn_warmup_then_none: detail::warn("Incorrect schedule: WARMUP followed by NONE"); break;
      case transition_op::warn_record_then_none: detail::warn("Incorrect schedule: RECORD followed by NONE"); break;
      case transition_op::warn_record_then_warmup: detail::warn("Incorrect schedule: RECORD followed by WARMUP"); break;
      case transition_op::prepare_trace: break;  // the CPU collector needs no preparation
      case transition_op::start_trace: start_trace_or_warn(throws); break;
      case transition_op::stop_trace: {
        const bool restarts = std::find(ops.begin() + static_cast<std::ptrdiff_t>(i), ops.end(),
                                        transition_op::start_trace) != ops.end();
        if (!restarts) {
          stop_trace();
          break;
        }
        restart_trace(throws);
        // trace_ready still runs (below); the later start_trace is done.
        for (std::size_t j = i + 1; j < ops.size(); ++j)
          if (ops[j] == transition_op::trace_ready) trace_ready(self);
        return;
      }
      case transition_op::trace_ready: trace_ready(self); break;
    }
  }
}

void session::impl::open_api_step() {
  if (!record_steps || scoped_steps || !detail::recording()) return;
  detail::record_begin(&detail::api_step_site, static_cast<std::uint64_t>(step_num));
  api_step_open = true;
  api_step_thread = std::this_thread::get_id();
}

void session::impl::close_api_step() {
  if (!api_step_open) return;
  api_step_open = false;
  if (api_step_thread != std::this_thread::get_id()) return;  // the flusher clips it
  const std::uint64_t t = detail::now_ticks();
  if (auto* r = detail::thread_ring())
    r->push(t, reinterpret_cast<std::uintptr_t>(&detail::api_step_site), scoped_steps ? detail::cancel_end : 0,
            detail::event_kind::end);
}

void session::impl::advance(session& self) {
  align_after_mpi_init();
  const profiler_action previous = current;
  ++step_num;
  current = sched(step_num);
  transit(self, previous, current);
}

void session::step() {
  std::lock_guard lock(detail::session_mutex);
  if (!impl_->opts.enabled) return;
  if (detail::active_session != this) {
    // exit() on another thread stopped it (the atexit hook): the loop that
    // still calls step() until the process ends is not an error.
    if (impl_->ended_at_exit) return;
    throw std::logic_error("proftrace: step() called on a profiler that is not running");
  }
  impl& s = *impl_;
  s.close_api_step();
  s.advance(*this);
  s.open_api_step();
}

namespace detail {

std::int64_t enter_step(bool& drives) noexcept {
  std::lock_guard lock(session_mutex);
  session* s = active_session;
  if (!s) return -1;
  session::impl& im = *s->impl_;
  im.scoped_steps = true;
  thread_steps& mine = this_thread_steps;
  if (mine.generation != im.generation) mine = {im.generation, im.step_num};
  else ++mine.step;
  // The first thread to reach a step drives it: its span is ProfilerStep#N.
  if (im.driven_generation != im.generation || mine.step > im.driven_step) {
    im.driven_generation = im.generation;
    im.driven_step = mine.step;
    drives = true;
  }
  try {
    while (im.step_num < mine.step) im.advance(*s);
  } catch (const std::exception& e) {
    warn(std::string("PROF_STEP: advancing the profiler schedule failed: ") + e.what());
  } catch (...) {
    warn("PROF_STEP: advancing the profiler schedule failed");
  }
  return recording() ? mine.step : -1;
}

}  // namespace detail

}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
