// Records: a thread as pairing hands it to the writers and the aggregator:
// its id, its open scopes (outermost first) and what its last drain took.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "records/memory.hpp"
#include "records/scope.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

struct thread_state {
  std::int64_t tid = 0;
  std::uint64_t uid = 0;         // its ring's uid: an end naming another uid began on another thread
  std::uint64_t next_index = 0;  // the index of the next record its ring hands out
  std::uint64_t last_ticks = 0;  // the time of the last record taken from its ring
  std::size_t frozen = 0;        // the stack's entries below this are frozen (entries above may be too)
  std::uint64_t marked_drops = 0;  // drops its ring's gap records reported
  scope_stack stack;
  open_scope leaf;  // a leaf scope closed in one step (closed_leaf, as_leaf()): never on the stack
  std::vector<event> batch;    // what the current drain took from the ring
  std::vector<event> pending;  // during a switch: events after the switch point
  std::deque<resolved_memory> resolved;  // one per memory event of batch and pending, in thread order
  bool exited = false;         // the thread had exited before its ring was last taken
  std::uint64_t dropped_seen = 0;
  std::uint64_t overwritten_seen = 0;
  std::uint64_t window_seen = 0;  // id of the last window that named this thread
  const void* owner = nullptr;    // the registry's record of the thread (its name)
  // Pairing's flag (pairing::discard_api_steps): profile::step()'s
  // annotations are not written, so stacks leave their frames out.
  const bool* api_steps_discarded = nullptr;
};

// Pairing's leaf (thread_state::leaf) set to `l`: for the paths that take
// a leaf as an open_scope.
inline open_scope& as_leaf(thread_state& ts, const closed_leaf& l) noexcept {
  open_scope& s = ts.leaf;  // only these fields ever change in it
  s.where = l.where;
  s.begin_ns = l.begin_ns;
  s.external_id = l.external_id;
  return s;
}

}  // namespace proftrace::detail
