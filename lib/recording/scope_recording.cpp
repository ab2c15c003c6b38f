// The recording halves of the scope macros (detail/recorder.hpp): what a
// scope does once a session records, out of the instrumented function.
//
// A scope that opens marks beside its events (an NVTX range, a CUDA
// external correlation, perf counters) keeps them on its thread's stack of
// marked scopes until its end, so that its guard holds one word. Marks are
// per-thread stacks themselves (NVTX ranges, CUPTI's correlation, the
// counters' levels): a scope's end on its own thread finds its entry at the
// top; a scope that ended on another thread (a coroutine moved) closes no
// marks there, and its entry is closed on its own thread when a scope below
// it ends.
#include "proftrace/detail/recorder.hpp"

#include "level_stack.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {
namespace {

constexpr std::uint32_t marks_mask = (PROFTRACE_WITH_NVTX ? state_nvtx : 0u) |
                                     (PROFTRACE_WITH_CUDA ? state_cuda : 0u) |
                                     (PROFTRACE_WITH_COUNTERS ? state_counters : 0u);

struct marked_scope {
  std::uint64_t begin;
  gpu_marks gpu;
  counter_marks counters;
};
struct marked_stack {
  level_stack<marked_scope, 64> at;
  std::uint32_t depth;
};
constinit thread_local marked_stack this_thread_marked{};
struct marked_stack_release {
  ~marked_stack_release() { this_thread_marked.at.release(); }
};
thread_local marked_stack_release this_thread_marked_release;

// Opens the marks `state` asks for, then `begin(correlation)`; the token
// names the begin, marked when the marks were kept.
template <class PushRange, class Begin>
scope_token open_marked(std::uint32_t state, const PushRange& push_range, const Begin& begin) noexcept {
  marked_stack& m = this_thread_marked;
  marked_scope* e = (state & marks_mask) ? m.at.slot(m.depth) : nullptr;
  if (!e) return token_of(begin(0));  // no marks asked for, or no memory for them
  (void)&this_thread_marked_release;  // constructed with the first marked scope, to free the levels at thread exit
  // The entry is found afresh after each call: a signal handler's marked
  // scope in between may have grown, and so moved, the levels.
  const std::uint32_t level = m.depth++;
  e->gpu.open(state, push_range);
  m.at.slot(level)->counters.open(state);
  const std::uint64_t at = begin(m.at.slot(level)->gpu.correlation);
  m.at.slot(level)->begin = at;
  return token_of(at) | token_marked;
}

// The marks of the scope that ends here: their entry, after closing those
// of scopes above it that moved away; null when the scope began elsewhere.
marked_scope* take_marked(std::uint64_t begin) noexcept {
  marked_stack& m = this_thread_marked;
  for (std::uint32_t i = m.depth; i-- > 0;) {
    if (m.at.slot(i)->begin != begin) continue;
    for (std::uint32_t above = m.depth; --above > i;) {
      m.at.slot(above)->counters.close(no_begin);
      m.at.slot(above)->gpu.close();
    }
    m.depth = i;
    return m.at.slot(i);
  }
  return nullptr;
}

// The marked halves apart: with them inline, a plain scope's end saved six
// registers for paths it never takes (callgrind: 54 instructions per end,
// 47 without).
PROFTRACE_NOINLINE scope_token start_marked_scope(ring* r, const site* s, std::uint32_t state) noexcept {
  return open_marked(
      state, [s] { push_nvtx_range(s); },
      [r, s](std::uint64_t correlation) {
        return r->push(r->now(), reinterpret_cast<std::uintptr_t>(s), correlation, event_kind::begin);
      });
}

PROFTRACE_NOINLINE void finish_marked_scope(const site* s, scope_token t) noexcept {
  const std::uint64_t begin = begin_of(t);
  marked_scope* marks = take_marked(begin);
  if (marks) marks->counters.close(begin);
  record_end(s, begin);
  if (marks) marks->gpu.close();
}

// What the ring's fast path leaves: the thread's first event, marks, a
// full ring, a dropped begin, a scope that ends on another thread.
PROFTRACE_NOINLINE scope_token start_scope_fully(const site* s, std::uint32_t state) noexcept {
  ring* r = thread_ring();
  if (!r) return 0;
  if (PROFTRACE_UNLIKELY(state & marks_mask)) return start_marked_scope(r, s, state);
  return token_of(r->push(r->now(), reinterpret_cast<std::uintptr_t>(s), 0, event_kind::begin));
}

PROFTRACE_NOINLINE void finish_scope_fully(const site* s, scope_token t) noexcept {
  if (PROFTRACE_UNLIKELY(t & token_marked)) return finish_marked_scope(s, t);
  record_end(s, begin_of(t));  // after a dropped begin too: counted, unpaired, as the lost scope's second event
}

}  // namespace

// The fast paths call nothing but, where they fail, the full path: so they
// keep no register of the caller's and set up no frame (callgrind: 43 and
// 56 instructions per begin and end before this split).
scope_token start_scope(const site* s, std::uint32_t state) noexcept {
  ring* r = this_thread_ring;
  const auto fully = [s, state] { return start_scope_fully(s, state); };
  if (PROFTRACE_UNLIKELY(r == nullptr || (state & marks_mask) != 0)) return fully();
  return r->push_short_begin_or(reinterpret_cast<std::uintptr_t>(s), fully);
}

void finish_scope(const site* s, scope_token t) noexcept {
  ring* r = this_thread_ring;
  const auto fully = [s, t] { finish_scope_fully(s, t); };
  if (PROFTRACE_UNLIKELY(r == nullptr)) return fully();
  r->push_short_end_or(t, fully);
}

scope_token start_shapes_scope(const site* s, shape_list shapes) noexcept {
  const std::uint32_t state = session_state.load(std::memory_order_relaxed);
  return open_marked(
      state, [s] { push_nvtx_range(s); },
      [s, shapes](std::uint64_t correlation) { return record_begin_with_shapes(s, shapes, correlation); });
}

scope_token start_dynamic_scope(const site* s, std::string_view name) noexcept {
  const std::uint32_t state = session_state.load(std::memory_order_relaxed);
  return open_marked(
      state, [s] { push_nvtx_range(s); },
      [s, name](std::uint64_t correlation) { return record_dynamic_begin(s, name, correlation); });
}

open_step_span start_step() noexcept {
  bool drives = false;
  const std::int64_t n = enter_step(drives);
  if (n < 0) return {nullptr, 0};
  const site* s = drives ? &step_site : &thread_step_site;
  const std::uint32_t state = session_state.load(std::memory_order_relaxed);
  return {s, open_marked(
                 state, [n] { push_nvtx_step(n); },
                 [s, n]([[maybe_unused]] std::uint64_t correlation) {
#if PROFTRACE_WITH_CUDA
                   if (correlation != 0) return record_step_begin(s, n, correlation);
#endif
                   return record_begin(s, static_cast<std::uint64_t>(n));
                 })};
}

}  // namespace proftrace::detail
