// Internal: the rows behind key_averages() and the reports, built from the
// finished records of a trace window as pairing delivers them — times, FLOPs
// and memory per (name, input shapes[, stack]), GPU time attributed to the
// scopes that launched it, the retained events and the memory records.
// torch's rules for a row (its name, key, what an event adds to it) are
// torch_rules.hpp's, shared with the command line's summary; this keeps
// what is live: rows found by call site, a scope's parent from its
// thread's stack of open scopes, GPU attribution, counters, retained events.
#pragma once

#include <array>
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "records/async_range.hpp"
#include "records/gpu_batch.hpp"
#include "records/memory.hpp"
#include "records/thread.hpp"
#include "torch_rules.hpp"
#include "proftrace/key_averages.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

struct aggregation_options {
  bool with_stack = false;     // rows per enclosing stack too
  bool retain_events = false;  // keep every event (profile::events(), the execution trace)
  bool cuda = false;           // remember each scope's row and parent for GPU attribution
};

class aggregator {
 public:
  explicit aggregator(aggregation_options o) : opts_(o) {}

  // `s` closed at end_ns inside ts.stack (its enclosing scopes, outermost first).
  // Inline: the drain loop's common case is a cached row and a few sums
  // (left to itself GCC called it: a fifth of its cost was the call).
  PROFTRACE_ALWAYS_INLINE void add_scope(const thread_state& ts, const open_scope& s, std::int64_t end_ns) {
    const std::int64_t dur = duration_ns(s.begin_ns, end_ns);
    const std::int64_t self = self_ns(dur, s.child_ns);
    event_average& row = row_for(ts, s);
    began(row, s.begin_ns);
    if (opts_.cuda) note_launcher(ts, s, row);
    add_event_time(row, dur, self);
    if (PROFTRACE_UNLIKELY((s.flops | s.mem_self[0] | s.mem_self[1] | s.mem_child[0] | s.mem_child[1]) != 0)) {
      const std::int64_t memory_total[2] = {s.mem_self[0] + s.mem_child[0], s.mem_self[1] + s.mem_child[1]};
      add_event_flops_memory(row, s.flops, memory_total, s.mem_self);  // adding zeros changes nothing
    }
    if (PROFTRACE_UNLIKELY(!s.args.empty() || !counter_children_.empty())) add_counters(ts, s, row);
    if (opts_.retain_events) retain(ts, s, end_ns, self);
  }
  // Pairing's leaves: no children, FLOPs, memory, args or shapes, so only
  // their time counts; the rest as add_scope. A run is mostly one site's.
  void add_leaves(thread_state& ts, std::span<const closed_leaf> run) {
    if (PROFTRACE_UNLIKELY(!takes_leaf_totals(ts))) {
      for (const closed_leaf& l : run) add_scope(ts, as_leaf(ts, l), l.end_ns);
      return;
    }
    // A site's consecutive leaves are summed in registers, then added to its row once.
    const site* last = nullptr;
    event_average* row = nullptr;
    std::int64_t count = 0, total = 0;
    for (const closed_leaf& l : run) {
      if (l.where != last) {
        if (row != nullptr) add_event_times(*row, count, total, total);
        count = total = 0;
        last = l.where;
        row = &leaf_row(ts, l);
      }
      count += 1;
      add_saturating(total, duration_ns(l.begin_ns, l.end_ns));
    }
    if (row != nullptr) add_event_times(*row, count, total, total);
  }
  // Whether leaves may come as totals: only their time counts here.
  bool takes_leaf_totals(const thread_state& ts) const noexcept {
    return !(opts_.cuda || opts_.retain_events || !counter_children_.empty() || (opts_.with_stack && !ts.stack.empty()));
  }
  void add_leaf_totals(thread_state& ts, const leaf_totals& t) {
    add_event_times(leaf_row(ts, {t.where, t.first_begin_ns, t.first_begin_ns, 0}), t.count, t.total_ns, t.total_ns);
  }
  void add_async(const open_async& a, std::int64_t end_ns, std::int64_t end_tid);
  // A resolved memory event; `scoped`: a scope was open to take its bytes.
  void add_memory(const memory_event& m, bool scoped);
  // Allocations ([host, device] bytes) to the [memory] row: `events` of them.
  void add_unscoped_memory(const std::int64_t (&bytes)[2], std::int64_t events);
  // GPU time to the launching scopes (self) and every scope around them
  // (total); returns the user scopes' projections onto the streams.
  std::vector<gpu_span> add_gpu(const std::vector<gpu_activity>& activities);
  // A CUDA allocation or free to the scope that launched it and those around it.
  void add_gpu_memory(const gpu_activity& a, const memory_event& m);

  // The rows as torch's key_averages() lists keys: by their first event's start.
  std::vector<event_average> rows_by_first_begin() const;
  std::vector<function_event> take_retained() { return std::move(retained_); }
  std::vector<memory_record>& memory() noexcept { return memory_; }

  // The name a scope is written and aggregated under.
  static const char* row_name(const open_scope& s) noexcept;

 private:
  // One row per (name, input shapes), and per enclosing stack with with_stack.
  event_average& row_for(const thread_state& ts, const open_scope& s) {
    if (keyed_by_site(ts, s)) {
      const site_slot& slot = site_cache_[cache_index(s.where)];
      if (slot.where == s.where) return rows_[slot.row];
    }
    return find_row(ts, s);
  }
  bool keyed_by_site(const thread_state& ts, const open_scope& s) const noexcept {
    return (s.shapes.empty() || s.step != step_kind::none) && (!opts_.with_stack || ts.stack.empty()) &&
           s.dynamic_name.empty();
  }
  static std::size_t cache_index(const site* where) noexcept {
    return (reinterpret_cast<std::uintptr_t>(where) >> 4) % site_cache_size;
  }
  event_average& find_row(const thread_state& ts, const open_scope& s);
  void note_launcher(const thread_state& ts, const open_scope& s, const event_average& row);
  event_average& keyed_row(std::string key, const char* name);
  event_average& new_row();
  // The row of a run of one site's leaves, `first` the run's first.
  event_average& leaf_row(thread_state& ts, const closed_leaf& first) {
    const site_slot& slot = site_cache_[cache_index(first.where)];
    event_average& row = slot.where == first.where ? rows_[slot.row] : find_row(ts, as_leaf(ts, first));
    began(row, first.begin_ns);  // one thread's leaves, in order: the first of a site began first
    return row;
  }
  void began(const event_average& row, std::int64_t begin_ns) {
    std::int64_t& first = first_begin_ns_[static_cast<std::size_t>(&row - rows_.data())];
    first = std::min(first, begin_ns);
  }
  void retain(const thread_state& ts, const open_scope& s, std::int64_t end_ns, std::int64_t self);
  void add_counters(const thread_state& ts, const open_scope& s, event_average& row);
  template <class Fn>
  void for_each_launcher(std::uint64_t external_id, Fn&& fn) const;

  aggregation_options opts_;
  std::vector<event_average> rows_;
  std::vector<std::int64_t> first_begin_ns_;  // per row: its earliest event's start
  std::unordered_map<const site*, std::size_t> by_site_;
  // by_site_'s recent answers, direct-mapped by address: the drain loop's
  // lookup without hashing.
  struct site_slot {
    const site* where = nullptr;
    std::size_t row = 0;
  };
  static constexpr std::size_t site_cache_size = 64;
  std::array<site_slot, site_cache_size> site_cache_{};
  std::unordered_map<std::string, std::size_t> by_key_;
  std::vector<function_event> retained_;
  std::vector<memory_record> memory_;
  // With CUDA: every closed scope by external id, with its row, the
  // enclosing scope's id (0 at the top) and its site.
  struct launcher {
    std::size_t row;
    std::uint64_t parent;
    const site* where;
  };
  std::unordered_map<std::uint64_t, launcher> launchers_;
  // Counters' deltas of the closed children of each thread's open scopes,
  // by depth, for their self counts: [tid][depth] -> per counter kind.
  std::unordered_map<std::int64_t, std::vector<std::vector<std::int64_t>>> counter_children_;
  std::vector<bool> counted_;  // add_counters' scratch: the kinds a scope has a value of
};

}  // namespace proftrace::detail
