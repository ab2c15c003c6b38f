// Internal: what pairing keeps per thread while it turns ring records into
// finished scopes — the open scopes, the open async ranges — and what a
// resolved memory event carries. Writers and the aggregator read these.
#pragma once

#include <algorithm>
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
  std::int64_t integer = 0;  // an unsigned_integer's bits too
  double floating = 0;
  std::string text;
};
// Args past this many on one scope are dropped (and counted).
inline constexpr std::size_t max_scope_args = 16;

// A scope open on a thread's stack. The fields read for every scope come
// first; the rest are for scopes with args, shapes, a runtime name, a
// communication call, or a loss around them.
struct open_scope {
  const site* where = nullptr;
  std::int64_t begin_ns = 0;
  std::int64_t child_ns = 0;
  std::uint64_t external_id = 0;
  std::uint64_t index = 0;    // the begin's index in its ring, which its end names
  std::uint64_t payload = 0;  // the step number of a step annotation
  std::int64_t flops = 0;     // estimates recorded while it was the innermost scope
  std::int64_t mem_self[2] = {0, 0};   // bytes allocated minus freed while innermost: [host, device]
  std::int64_t mem_child[2] = {0, 0};  // the same, summed over closed children
  // Set by a writer that wrote this scope's begin before its end (Perfetto's
  // slices: an enclosing scope's begin must precede its children's).
  bool announced = false;
  // Once a gap (lost events) followed the begin, its end may have been lost
  // there: it is "frozen" at the last event seen before that gap, where it
  // closes, marked truncated, if its end never comes. Children that end
  // after that point count toward it only if its end does come.
  bool frozen = false;
  bool truncated = false;
  std::int32_t comm_peer = -1;
  std::int64_t comm_bytes = -1;  // a communication call's bytes and peer (-1: none)
  std::uint64_t frozen_ticks = 0;
  std::int64_t late_child_ns = 0;
  std::int64_t late_mem_child[2] = {0, 0};
  // Bytes allocated while it was innermost but frozen, and how many events:
  // its own if its end comes; else they go on to the scope around it (none:
  // the [memory] row).
  std::int64_t late_mem_self[2] = {0, 0};
  std::int64_t late_mem_events = 0;
  std::string shapes;  // "[[2, 3], [3]]" with record_shapes, else empty
  // A runtime name (PROF_SCOPE_DYNAMIC, proftrace_push): shown and aggregated
  // instead of where->name when not empty. Both stay empty (no allocation)
  // for the common scope.
  std::string dynamic_name;
  std::vector<scope_arg> args;  // PROF_ARG values, in record order

  // Back to a fresh scope, keeping the strings' and args' storage.
  void reset() noexcept {
    where = nullptr;
    begin_ns = child_ns = 0;
    external_id = index = payload = 0;
    flops = 0;
    mem_self[0] = mem_self[1] = mem_child[0] = mem_child[1] = 0;
    announced = frozen = truncated = false;
    comm_peer = -1;
    comm_bytes = -1;
    frozen_ticks = 0;
    late_child_ns = 0;
    late_mem_child[0] = late_mem_child[1] = 0;
    late_mem_self[0] = late_mem_self[1] = 0;
    late_mem_events = 0;
    shapes.clear();
    dynamic_name.clear();
    args.clear();
  }
};

// A thread's open scopes, outermost first, with the interface of a vector.
// Its slots are kept and reused: opening a scope resets a slot rather than
// constructing one, and the scope closed by pop_back() stays readable in
// its slot until the next push (pairing hands it to the sink from there),
// so the common scope is never moved, constructed or destroyed.
class scope_stack {
 public:
  scope_stack() = default;
  scope_stack(const scope_stack& o) : slots_(o.begin(), o.end()), size_(o.size_) {}
  scope_stack& operator=(const scope_stack& o) {
    if (this != &o) {
      slots_.assign(o.begin(), o.end());
      size_ = o.size_;
    }
    return *this;
  }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  open_scope& operator[](std::size_t i) noexcept { return slots_[i]; }
  const open_scope& operator[](std::size_t i) const noexcept { return slots_[i]; }
  open_scope& back() noexcept { return slots_[size_ - 1]; }
  const open_scope& back() const noexcept { return slots_[size_ - 1]; }
  open_scope* begin() noexcept { return slots_.data(); }
  open_scope* end() noexcept { return slots_.data() + size_; }
  const open_scope* begin() const noexcept { return slots_.data(); }
  const open_scope* end() const noexcept { return slots_.data() + size_; }

  // A fresh scope on top.
  open_scope& push() {
    if (size_ == slots_.size()) slots_.emplace_back();
    else slots_[size_].reset();
    return slots_[size_++];
  }
  void push_back(open_scope&& s) {
    if (size_ == slots_.size()) slots_.push_back(std::move(s));
    else slots_[size_] = std::move(s);
    ++size_;
  }
  // The top scope leaves the stack; it stays readable in back()'s old slot
  // until the next push.
  void pop_back() noexcept { --size_; }
  void resize(std::size_t k) noexcept {
    if (k < size_) size_ = k;
  }
  void clear() noexcept { size_ = 0; }
  void erase(open_scope* it) {
    std::move(it + 1, end(), it);
    --size_;
  }

 private:
  std::vector<open_scope> slots_;
  std::size_t size_ = 0;
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
  // An allocation at an address still live (its free was never reported):
  // the earlier block is taken as freed here, its bytes out of the totals.
  bool replaced_live = false;
  std::int64_t replaced_bytes = 0;
  memory_category replaced_category = memory_category::unknown;
  // What the event adds to the memory of the scope it happens in.
  std::int64_t attributed_bytes() const noexcept { return bytes - replaced_bytes; }
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
  std::string dynamic_name{};  // a scope's runtime name (PROF_SCOPE_DYNAMIC, proftrace_push)
  bool truncated = false;  // written where it was last known open: its end was most likely lost
  // A scope that ended on another thread: what was recorded in it while it
  // was its first thread's innermost scope, written on the range.
  std::string shapes{};
  std::int64_t flops = 0;
  std::vector<scope_arg> args{};
  const char* name() const noexcept { return dynamic_name.empty() ? where->name : dynamic_name.c_str(); }
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

// A leaf scope (no children, args, FLOPs, memory or shapes; not a step) as
// pairing hands a run of them to its sink in one call.
struct closed_leaf {
  const site* where;
  std::int64_t begin_ns, end_ns;
  std::uint64_t external_id;
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

// What pairing counts in the window it writes to, beside loss_counts.
struct pairing_counts {
  std::uint64_t invalid_flop_estimates = 0;   // negative dimensions or counts, impossible shapes, overflow
  std::uint64_t unscoped_flop_estimates = 0;  // recorded with no scope open on the thread
  std::uint64_t unknown_frees = 0;            // frees of addresses never seen allocated (no event was lost)
  std::uint64_t invalid_memory_devices = 0;   // allocations, frees and reserves naming a device outside -1..253
  std::uint64_t unfreed_reallocations = 0;    // allocations at an address still live (no event was lost)
  std::uint64_t truncated_scopes = 0;         // scopes whose end was lost: written up to the loss, marked
  std::uint64_t moved_scopes = 0;             // scopes that ended on another thread: written as async ranges
  std::uint64_t closed_at_thread_exit = 0;  // open when their thread exited, ended by no other: written ending there
  // Ends of scopes and async ranges that an earlier trace window wrote
  // closed at its end (a session's stop): not losses.
  std::uint64_t ended_after_their_session = 0;
  std::uint64_t instant_events = 0;
  std::uint64_t counter_events = 0;
  std::uint64_t truncated_names = 0;  // runtime names and string args cut at the maximum length
  std::uint64_t dropped_args = 0;     // PROF_ARG with no scope open, or past max_scope_args on one scope
};

// A stack frame as traces and tables show it: "file(line): name" (the name
// alone for a site with no line of its own), or "ProfilerStep*" for every
// step, so identical call paths stay one group across steps.
std::string frame_of(const site& f);
// The same for an open scope: its runtime name, if it has one.
std::string frame_of(const open_scope& s);
// A frame's name: what follows its "file(line): ", if it has one.
std::string_view frame_name(std::string_view frame) noexcept;
// Whether an open scope is a frame of the stacks its children show (not a
// profile::step() annotation that will not be written).
bool is_frame(const thread_state& ts, const open_scope& s) noexcept;
// "Call stack": `s` and the scopes around it on ts.stack, innermost first, ';'-separated.
std::string call_stack(const thread_state& ts, const open_scope& s);
// "Module Hierarchy": the PROF_MODULE scopes on ts.stack, outermost first, '.'-separated.
std::string module_path(const thread_state& ts);

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
