// Records: a scope as pairing hands it to the writers and the aggregator
// (open while on its thread's stack, finished when handed over), the args
// it carries, and a run of leaf scopes closed in one step.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "proftrace/config.hpp"
#include "proftrace/detail/event.hpp"
#include "proftrace/detail/site.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// Which step a scope is, if any: pairing tells it from the scope's site.
enum class step_kind : std::uint8_t {
  none,
  step,         // PROF_STEP, a C or Fortran step: "ProfilerStep#N"
  api_step,     // profile::step()'s annotation
  thread_step,  // "thread step": another thread's span of step N
};
// A step written and aggregated as "ProfilerStep#N" (a thread step is not).
constexpr bool is_profiler_step(step_kind k) noexcept { return k == step_kind::step || k == step_kind::api_step; }

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
  step_kind step = step_kind::none;
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
  // With record_shapes: the number of inputs, then per input its rank and
  // its dims ({2, 2, 2, 3, 1, 3} for [[2, 3], [3]]; append_shapes_json
  // writes it); else empty.
  std::vector<std::int64_t> shapes;
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
    step = step_kind::none;
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

// A leaf scope (no children, args, FLOPs, memory or shapes; not a step) as
// pairing hands a run of them to its sink in one call.
struct closed_leaf {
  const site* where;
  std::int64_t begin_ns, end_ns;
  std::uint64_t external_id;
};

// Consecutive leaves of one site, as pairing hands them to a sink that keeps
// no leaf one by one (a profile-only window's aggregator): their count and
// summed durations, and the first one's begin.
struct leaf_totals {
  const site* where;
  std::int64_t first_begin_ns;
  std::int64_t count, total_ns;
};

}  // namespace proftrace::detail
