// Internal: what pairing keeps per thread while it turns ring records into
// finished scopes — the open scopes, the open async ranges — and what a
// resolved memory event carries. Writers and the aggregator read these.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "proftrace/config.hpp"
#include "proftrace/detail/event.hpp"
#include "proftrace/detail/site.hpp"
#include "proftrace/memory_category.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

// A scope's "cat" in a trace.
constexpr const char* category_name(const site& where) noexcept {
  return where.cat == category::cpu_op      ? "cpu_op"
         : where.cat == category::proftrace ? "proftrace"
         : where.cat == category::openmp    ? "openmp"
                                            : "user_annotation";
}

// A PROF_ARG value attached to a scope.
struct scope_arg {
  const char* key = nullptr;
  arg_type type = arg_type::integer;
  std::int64_t integer = 0;
  double floating = 0;
  std::string text;
};
// Args past this many on one scope are dropped (and counted).
inline constexpr std::size_t max_scope_args = 16;

struct open_scope {
  const site* where = nullptr;
  std::int64_t begin_ns = 0;
  std::int64_t child_ns = 0;
  std::uint64_t external_id = 0;
  std::uint64_t payload = 0;  // the step number of a step annotation
  std::int64_t flops = 0;     // estimates recorded while it was the innermost scope
  std::int64_t mem_self[2] = {0, 0};   // bytes allocated minus freed while innermost: [host, device]
  std::int64_t mem_child[2] = {0, 0};  // the same, summed over closed children
  std::int64_t comm_bytes = -1;        // a communication call's bytes and peer (-1: none)
  std::int32_t comm_peer = -1;
  // Set by a writer that wrote this scope's begin before its end (Perfetto's
  // slices: an enclosing scope's begin must precede its children's).
  bool announced = false;
  // Once a gap (lost events) followed the begin, its end may have been lost
  // there: it is "frozen" at the last event seen before that gap, where it
  // closes, marked truncated, if its end never comes. Children that end
  // after that point count toward it only if its end does come.
  bool frozen = false;
  bool truncated = false;
  std::string shapes;       // "[[2, 3], [3]]" with record_shapes, else empty
  std::uint64_t index = 0;  // the begin's index in its ring, which its end names
  std::uint64_t frozen_ticks = 0;
  std::int64_t late_child_ns = 0;
  std::int64_t late_mem_child[2] = {0, 0};
  // A runtime name (PROF_SCOPE_DYNAMIC, proftrace_push): shown and aggregated
  // instead of where->name when not empty. Both stay empty (no allocation)
  // for the common scope.
  std::string dynamic_name;
  std::vector<scope_arg> args;  // PROF_ARG values, in record order
};

// An allocation, free or reserve report as resolved in time order across
// threads: what it changed, the totals after it, and the step it fell in.
struct resolved_memory {
  std::int64_t bytes = 0;
  std::int64_t total_allocated = 0;
  std::int64_t total_reserved = 0;
  std::int64_t step = -1;
  memory_category category = memory_category::unknown;
  bool known = true;  // false: a free of an address never seen allocated
};

// A memory event as a trace shows it: where, when, what it resolved to.
struct memory_event {
  std::int64_t tid = 0;
  std::int64_t ns = 0;
  int device = -1;  // -1: host
  std::uint64_t address = 0;
  event_kind kind = event_kind::alloc;
  const resolved_memory* resolved = nullptr;
};

// An async range whose begin was seen and whose end was not yet.
struct open_async {
  const site* where = nullptr;
  std::int64_t begin_ns = 0;
  std::int64_t tid = 0;  // the thread that began it
  std::uint64_t external_id = 0;
};
// An async range's end that reached the flusher before its begin (the
// beginning thread's ring was drained first).
struct early_async_end {
  std::int64_t end_ns = 0;
  std::int64_t tid = 0;
};

struct thread_state {
  std::int64_t tid = 0;
  std::uint64_t uid = 0;         // its ring's uid: an end naming another uid began on another thread
  std::uint64_t next_index = 0;  // the index of the next record its ring hands out
  std::uint64_t last_ticks = 0;  // the time of the last record taken from its ring
  std::size_t frozen = 0;        // the stack's entries below this are frozen (entries above may be too)
  std::uint64_t marked_drops = 0;  // drops its ring's gap records reported
  std::vector<open_scope> stack;
  std::vector<event> batch;    // what the current drain took from the ring
  std::vector<event> pending;  // during a switch: events after the switch point
  std::deque<resolved_memory> resolved;  // one per memory event of batch and pending, in thread order
  bool exited = false;         // the thread had exited before its ring was last taken
  std::uint64_t dropped_seen = 0;
  std::uint64_t overwritten_seen = 0;
  std::uint64_t window_seen = 0;  // id of the last window that named this thread
  const void* owner = nullptr;    // the registry's record of the thread (its name)
};

// What pairing counts in the window it writes to, beside loss_counts.
struct pairing_counts {
  std::uint64_t invalid_flop_estimates = 0;   // negative dimensions or counts, impossible shapes, overflow
  std::uint64_t unscoped_flop_estimates = 0;  // recorded with no scope open on the thread
  std::uint64_t unknown_frees = 0;            // frees of addresses never seen allocated (no event was lost)
  std::uint64_t truncated_scopes = 0;         // scopes whose end was lost: written up to the loss, marked
  std::uint64_t moved_scopes = 0;             // scopes that ended on another thread: written as async ranges
  std::uint64_t instant_events = 0;
  std::uint64_t counter_events = 0;
  std::uint64_t truncated_names = 0;  // runtime names and string args cut at the maximum length
  std::uint64_t dropped_args = 0;     // PROF_ARG with no scope open, or past max_scope_args on one scope
};

// A stack frame as traces and tables show it: "file(line): name", or
// "ProfilerStep*" for every step, so identical call paths stay one group
// across steps.
std::string frame_of(const site& f);
// The same for an open scope: its runtime name, if it has one.
std::string frame_of(const open_scope& s);
// "Call stack": `s` and the scopes around it on ts.stack, innermost first, ';'-separated.
std::string call_stack(const thread_state& ts, const open_scope& s);
// "Module Hierarchy": the PROF_MODULE scopes on ts.stack, outermost first, '.'-separated.
std::string module_path(const thread_state& ts);

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
