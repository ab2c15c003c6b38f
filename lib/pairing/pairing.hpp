// Internal: pairing — ring records into finished, time-resolved scopes.
//
// The flusher hands each thread's records, in ring order, to process(); what
// is finished goes to the Sink (the open trace window, or a test's
// recorder) as typed calls, with no text formatting:
//
//   sink.thread_seen(ts)                      first record of a thread in this window
//   sink.scope(ts, scope, end_ns)             a scope closed; its enclosing scopes are ts.stack
//   sink.leaves(ts, span<closed_leaf>)        leaf scopes closed, in order, under ts.stack
//   sink.async(range, id, end_ns, end_tid)    an async range (or a scope that ended on another thread)
//   sink.withdrawn(ts, scope, ns)             a scope a writer announced (wrote its begin) left its
//                                             thread's stack unclosed: it ended on another thread
//   sink.memory(ts, memory_event, scoped)     an allocation, free or reserve report
//   sink.unscoped_memory(bytes[2], events)    allocations first kept for a scope that turned out
//                                             truncated, with no scope around it: the [memory] row
//   sink.instant(ts, site, ns), sink.counter(ts, site, ns, value)
//
// and reads sink.to_ns(ticks) (and sink.ns_of_ticks(), the same conversion as a
// copyable function), sink.start_ticks, sink.id, sink.record_shapes(),
// sink.next_external_id, sink.losses (loss_counts), sink.counts (pairing_counts).
//
// An end names its begin by index, so pairing is exact: a lost event never
// makes a later end close an earlier instance. Gap records say where events
// were lost; a scope open across a gap may have lost its end there. When
// something shows that such a scope is over (an end of a scope around it,
// or the trace closing), it is written up to the last event seen before the
// gap, with `truncated`. A scope open with no gap whose end does not come on
// its thread ended on another one: it becomes an async range, closed by the
// end that thread recorded.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "memory_resolver.hpp"
#include "records/async_range.hpp"
#include "records/gpu_batch.hpp"
#include "records/pairing_counts.hpp"
#include "records/thread.hpp"
#include "proftrace/async_range.hpp"
#include "proftrace/key_averages.hpp"
#include "proftrace/detail/recorder.hpp"
#include "recording/record_layout.hpp"
#include "recording/registry.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {


// Which step a scope of `where` is.
inline step_kind step_of(const site* where) noexcept {
  if (where->cat != category::step) return step_kind::none;
  if (where == &api_step_site) return step_kind::api_step;
  return where == &thread_step_site ? step_kind::thread_step : step_kind::step;
}

// The events a record takes in a consumed array (its slots in the ring: ring_slots).
inline std::size_t record_length(const event& e) noexcept {
  return static_cast<event_kind>(e.kind) == event_kind::extension ? 1 : 1 + e.extra;
}

// A `leaf` event as the two records it fused: its begin, at `begin_index`
// in its ring, and its end.
inline std::array<event, 2> unfused_leaf(const event& l, std::uint64_t begin_index) noexcept {
  return {event{l.ticks, l.where, 0, static_cast<std::uint32_t>(event_kind::begin), 0},
          event{l.payload, 0, begin_index, static_cast<std::uint32_t>(event_kind::end), 0}};
}

template <class Sink>
class pairing {
 public:
  explicit pairing(memory_resolver& memory) : memory_(memory) {}

  // profile::step()'s annotations are dropped: PROF_STEP annotates steps
  // (set at each window switch, and from a PROF_STEP step's begin).
  bool discard_api_steps = false;

  // Threads by their ring's uid (an end recorded elsewhere names it).
  void attach(thread_state& ts) {
    by_uid_[ts.uid] = &ts;
    ts.api_steps_discarded = &discard_api_steps;
  }
  void detach(const thread_state& ts) { by_uid_.erase(ts.uid); }

  // Inlined into the drain loops: left to itself GCC keeps it out of line
  // and then stops inlining the scope stack's operations into it (callgrind:
  // 0.5 more units per drained scope; bench/notes/history.md).
  PROFTRACE_ALWAYS_INLINE void process(thread_state& ts, const event* e, Sink* w) {
    const auto kind = static_cast<event_kind>(e->kind);
    if (PROFTRACE_UNLIKELY(kind == event_kind::gap)) {
      on_gap(ts, *e);
      return;
    }
    if (kind == event_kind::leaf) return split_leaf(ts, *e, w);
    const std::uint64_t index = ts.next_index;
    ts.next_index += ring_slots(*e, ts.uid);
    ts.last_ticks = e->ticks;
    if (kind == event_kind::extension) return;  // its head was lost
    if (is_memory(kind)) {
      on_memory(ts, *e, w);
      return;
    }
    if (w == nullptr) return;  // recorded outside any window
    if (e->ticks < w->start_ticks) {
      ++w->losses.late;
      return;
    }
    if (ts.window_seen != w->id) w->thread_seen(ts);
    const site* where = reinterpret_cast<const site*>(e->where);
    const std::int64_t ns = w->to_ns(e->ticks);
    switch (kind) {
      case event_kind::begin:
      case event_kind::shapes:
      case event_kind::comm:
      case event_kind::dynamic_begin: begin_scope(ts, *e, where, ns, index, w); break;
      case event_kind::arg: add_arg(ts, *e, w); break;
      case event_kind::end: end_scope(ts, *e, where, ns, w); break;
      case event_kind::complete: complete_scope(ts, *e, where, ns, index, w); break;
      case event_kind::async_begin: async_begin(ts, *e, where, ns, w); break;
      case event_kind::async_end: async_end(ts, *e, ns, w); break;
      case event_kind::flops: add_flops(ts, *e, w); break;
      case event_kind::instant:
        ++w->counts.instant_events;
        w->instant(ts, *where, ns);
        break;
      case event_kind::counter: {
        ++w->counts.counter_events;
        double v;
        std::memcpy(&v, &e->payload, sizeof v);
        w->counter(ts, *where, ns, v);
        break;
      }
      default: break;
    }
  }

  // Every record of `n` events from one chunk of `ts`'s ring, in order. A
  // leaf scope (a `leaf` event, or a begin followed at once by its end)
  // closes in one step, with no trip through the stack; a run of leaf
  // events goes to the sink in one call.
  PROFTRACE_ALWAYS_INLINE void process_all(thread_state& ts, const event* e, std::size_t n, Sink* w) {
    std::size_t i = 0;
    while (i < n) {
      if (static_cast<event_kind>(e[i].kind) == event_kind::leaf) {
        i += leaves(ts, e + i, n - i, w);
        continue;
      }
      if (i + 1 < n && leaf(ts, e + i, w)) {
        i += 2;
        continue;
      }
      process(ts, e + i, w);
      i += record_length(e[i]);
    }
  }

  // The records of `n` events up to `split_ticks` (a window switch), in
  // order; from the first one after it on, this thread's records go to
  // ts.pending (`parking` says so across a drain's chunks), processed once
  // the next window is open. A leaf event across the split is its begin
  // here and its end parked.
  void process_until(thread_state& ts, const event* e, std::size_t n, std::uint64_t split_ticks, bool& parking,
                     Sink* w) {
    std::size_t i = 0;
    if (!parking) {  // what lies wholly before the split, as any drain takes it (leaves in runs)
      const auto before = [&](const event& r) {
        return r.ticks <= split_ticks &&
               (static_cast<event_kind>(r.kind) != event_kind::leaf || r.payload <= split_ticks);
      };
      while (i < n && before(e[i])) i += record_length(e[i]);
      process_all(ts, e, i, w);
      if (i == n) return;
      if (static_cast<event_kind>(e[i].kind) == event_kind::leaf && e[i].ticks <= split_ticks) {
        const std::array<event, 2> records = unfused_leaf(e[i], ts.next_index);
        process(ts, &records[0], w);
        ts.pending.push_back(records[1]);
        ++i;
      }
    }
    parking = true;
    ts.pending.insert(ts.pending.end(), e + i, e + n);
  }

  // Drops after the last record taken have no gap record yet (it comes
  // with the next record, if any): when a decision cannot wait for it (the
  // thread exited, the trace closes), they freeze what is open.
  void freeze_if_unmarked_drops(thread_state& ts, std::uint64_t ring_dropped) {
    if (ring_dropped > ts.marked_drops) freeze(ts);
  }

  // The thread is gone. What lost its end (a gap froze it) closes
  // truncated now. Anything else open may still end on another thread (a
  // coroutine resumed elsewhere, a fiber moved): then this returns true and
  // the caller keeps `ts` (its address too) until the window closes, when
  // close_at_thread_exit ends what no other thread did.
  bool thread_gone(thread_state& ts, Sink* w) {
    if (w != nullptr && std::any_of(ts.stack.begin(), ts.stack.end(), [](const open_scope& s) { return !s.frozen; }))
      return true;
    while (!ts.stack.empty()) give_up_top(ts, w);
    detach(ts);
    return false;
  }

  // A gone thread's scopes that no other thread ended: they end at its
  // exit, in their own rows, counted as closed there (not as losses).
  void close_at_thread_exit(thread_state& ts, Sink* w) {
    while (!ts.stack.empty()) {
      const open_scope& top = ts.stack.back();
      if (top.frozen || w == nullptr) {
        close_truncated_top(ts, w);
        continue;
      }
      if (top.step != step_kind::api_step || !discard_api_steps) ++w->counts.closed_at_thread_exit;
      remember_closed(top.index);
      close_top(ts, w, std::max(w->to_ns(ts.last_ticks), top.begin_ns), false);
    }
    detach(ts);
  }

  // A window switch at `old_at` (old's ns) / `next_at` (next's): every open
  // scope closes in `old`, outermost last so that children's time reaches
  // their parents, and is carried into `next` (a scope frozen by a gap
  // closes truncated and is not carried: its end was most likely lost).
  void clip_and_carry(thread_state& ts, Sink* old, std::int64_t old_at, Sink* next, std::int64_t next_at) {
    std::vector<open_scope> carried(ts.stack.begin(), ts.stack.end());
    if (old) {
      while (!ts.stack.empty()) {
        if (ts.stack.back().frozen) {
          close_truncated_top(ts, old);
          continue;
        }
        if (!next) remember_closed(ts.stack.back().index);
        close_top(ts, old, old_at, false);
      }
    }
    ts.stack.clear();
    ts.frozen = 0;
    if (!next) return;
    for (auto& c : carried) {
      const bool api_step = c.step == step_kind::api_step;
      if ((api_step && discard_api_steps) || c.frozen) continue;
      c.begin_ns = next_at;
      c.child_ns = 0;
      c.late_child_ns = 0;
      c.announced = false;
      for (int i = 0; i < 2; ++i) c.late_mem_child[i] = c.late_mem_self[i] = 0;
      c.late_mem_events = 0;
      if (!is_cuda_external_id(c.external_id)) c.external_id = next->next_external_id++;
      ts.stack.push_back(std::move(c));
    }
  }

  // Async ranges still open are clipped and carried like scopes, but for
  // those that lost events after they began (their end may be among them):
  // they end where they were last known open, counted truncated, and are
  // not carried (an end that comes later finds no begin: unpaired). An end
  // whose begin never came lost it.
  void clip_and_carry_asyncs(Sink* old, std::int64_t old_at, Sink* next, std::int64_t next_at) {
    std::vector<std::uint64_t> ended;
    for (auto it = open_asyncs_.begin(); it != open_asyncs_.end();) {
      auto& [id, a] = *it;
      if (const std::optional<std::int64_t> lost_at = old ? first_loss_after(*old, a.begin_ns) : std::nullopt) {
        ++old->counts.truncated_scopes;
        a.truncated = true;
        old->async(a, id, std::clamp(*lost_at, a.begin_ns, std::max(old_at, a.begin_ns)), a.tid);
        ended.push_back(id);
        it = open_asyncs_.erase(it);
        continue;
      }
      if (old) old->async(a, id, old_at, a.tid);
      if (next) {
        a.begin_ns = next_at;
        a.external_id = next->next_external_id++;
      }
      ++it;
    }
    if (!ended.empty()) {
      std::sort(ended.begin(), ended.end());
      std::erase_if(moved_async_ids_, [&](const auto& m) { return std::binary_search(ended.begin(), ended.end(), m.second); });
    }
    if (!next) {
      if (old) remember_ranges_closed_at_end();
      open_asyncs_.clear();
      moved_async_ids_.clear();
    }
    if (old) old->losses.unpaired += early_async_ends_.size() + early_moved_ends_.size();
    early_async_ends_.clear();
    early_moved_ends_.clear();
    losses_.clear();
  }

  void forget() {
    by_uid_.clear();
    moved_async_ids_.clear();
    early_moved_ends_.clear();
    closed_before_end_.clear();
    asyncs_closed_before_end_.clear();
  }

 private:
  // Whether the leaves that come next may close in one step: inside a
  // window that named the thread, under a parent that no loss froze.
  bool leaves_allowed(const thread_state& ts, const Sink* w) const noexcept {
    return w != nullptr && ts.window_seen == w->id && early_moved_ends_.empty() &&
           (ts.stack.empty() || !ts.stack.back().frozen);
  }
  static bool closes_as_leaf(const site* where, std::uint64_t begin_ticks, std::uint64_t start_ticks) noexcept {
    return begin_ticks >= start_ticks && where->cat != category::step && where != &api_step_site;
  }

  // The `leaf` events at `e` (at most n, up to the first other record):
  // those that close as leaves go to the sink (in blocks, or as each site's
  // totals where it takes them), the first that does not through process().
  // Returns how many were taken.
  std::size_t leaves(thread_state& ts, const event* e, std::size_t n, Sink* w) {
    std::size_t k = 0;
    if (leaves_allowed(ts, w)) {
      if constexpr (requires { w->takes_leaf_totals(ts); })
        k = w->takes_leaf_totals(ts) ? leaf_totals_of(ts, e, n, w) : closed_leaves(ts, e, n, w);
      else
        k = closed_leaves(ts, e, n, w);
    }
    if (k < n && static_cast<event_kind>(e[k].kind) == event_kind::leaf) process(ts, e + k++, w);
    return k;
  }

  // The leaves that close as such, to the sink in blocks of closed_leaf.
  std::size_t closed_leaves(thread_state& ts, const event* e, std::size_t n, Sink* w) {
    static constexpr std::size_t block = 256;
    // Copies: the compiler cannot know that the stores into `run` leave the sink unchanged.
    const auto to_ns = w->ns_of_ticks();
    const std::uint64_t start_ticks = w->start_ticks;
    closed_leaf run[block];
    const site* checked = nullptr;  // a site known not to be a step's
    std::size_t k = 0;
    for (;;) {
      const std::size_t limit = std::min(block, n - k);
      const std::uint64_t id = w->next_external_id;
      std::size_t m = 0;
      for (; m < limit; ++m) {
        const event& l = e[k + m];
        const site* where = reinterpret_cast<const site*>(l.where);
        if (static_cast<event_kind>(l.kind) != event_kind::leaf || l.ticks < start_ticks) break;
        if (where != checked) {
          if (!closes_as_leaf(where, l.ticks, start_ticks)) break;
          checked = where;
        }
        run[m] = {where, to_ns(l.ticks), to_ns(l.payload), id + m};
      }
      k += m;
      w->next_external_id = id + m;
      ts.next_index += 2 * m;  // a leaf event took two slots
      if (m != 0) hand_over(ts, run, m, e[k - 1].payload, w);
      if (m < block) return k;
    }
  }

  // The leaves that close as such, as each site's consecutive leaves' totals:
  // what a sink that keeps no leaf one by one takes.
  std::size_t leaf_totals_of(thread_state& ts, const event* e, std::size_t n, Sink* w) {
    const auto to_ns = w->ns_of_ticks();
    const std::uint64_t start_ticks = w->start_ticks;
    std::size_t k = 0;
    std::int64_t children_ns = 0;
    while (k < n && static_cast<event_kind>(e[k].kind) == event_kind::leaf) {
      const site* where = reinterpret_cast<const site*>(e[k].where);
      if (!closes_as_leaf(where, e[k].ticks, start_ticks)) break;
      leaf_totals t{where, to_ns(e[k].ticks), 0, 0};
      for (; k < n && static_cast<event_kind>(e[k].kind) == event_kind::leaf &&
             reinterpret_cast<const site*>(e[k].where) == where && e[k].ticks >= start_ticks;
           ++k, ++t.count) {
        const std::int64_t begin_ns = to_ns(e[k].ticks), end_ns = to_ns(e[k].payload);
        if (end_ns > begin_ns && __builtin_add_overflow(t.total_ns, end_ns - begin_ns, &t.total_ns)) t.total_ns = INT64_MAX;
      }
      children_ns += t.total_ns;
      w->leaves(ts, t);
    }
    w->next_external_id += k;
    ts.next_index += 2 * k;  // a leaf event took two slots
    if (k != 0) {
      ts.last_ticks = e[k - 1].payload;
      if (!ts.stack.empty()) ts.stack.back().child_ns += children_ns;
    }
    return k;
  }

  // A begin and the end that names it, adjacent and not fused (consume()
  // without fuse_leaves, or a begin with a CUDA correlation id): one leaf,
  // if it closes as one. False: nothing done.
  PROFTRACE_ALWAYS_INLINE bool leaf(thread_state& ts, const event* e, Sink* w) {
    const event& b = e[0];
    const event& end = e[1];
    if (static_cast<event_kind>(b.kind) != event_kind::begin || static_cast<event_kind>(end.kind) != event_kind::end ||
        end.payload != ts.next_index || !leaves_allowed(ts, w))
      return false;
    const site* where = reinterpret_cast<const site*>(b.where);
    if (!closes_as_leaf(where, b.ticks, w->start_ticks)) return false;
    ts.next_index += ring_slots(b, ts.uid) + 1;  // the end takes one slot: it names a begin of this ring
    const closed_leaf l{where, w->to_ns(b.ticks), w->to_ns(end.ticks),
                        is_cuda_external_id(b.payload) ? b.payload : w->next_external_id++};
    hand_over(ts, &l, 1, end.ticks, w);
    return true;
  }

  // Leaves closed in one step (their slots counted), to the sink; the last
  // record's time was `last_ticks`.
  void hand_over(thread_state& ts, const closed_leaf* run, std::size_t m, std::uint64_t last_ticks, Sink* w) {
    ts.last_ticks = last_ticks;
    if (!ts.stack.empty()) {
      std::int64_t total = 0;
      for (std::size_t i = 0; i < m; ++i) total += run[i].end_ns > run[i].begin_ns ? run[i].end_ns - run[i].begin_ns : 0;
      ts.stack.back().child_ns += total;
    }
    w->leaves(ts, std::span<const closed_leaf>(run, m));
  }

  // A `leaf` event that does not close as a leaf (before the window, a
  // step, under a frozen scope...): its begin and end, one by one.
  PROFTRACE_NOINLINE void split_leaf(thread_state& ts, const event& l, Sink* w) {
    const std::array<event, 2> records = unfused_leaf(l, ts.next_index);
    process_out_of_line(ts, &records[0], w);
    process_out_of_line(ts, &records[1], w);
  }
  // Out of line for split_leaf's two plain records: inlined there, GCC
  // follows the extension reads of other kinds of record past the array
  // and warns (-Warray-bounds), though a plain record has no extension.
  PROFTRACE_NOINLINE void process_out_of_line(thread_state& ts, const event* e, Sink* w) { process(ts, e, w); }

  // Inline: every scope with children takes it (its call cost a fifth of it).
  PROFTRACE_ALWAYS_INLINE void begin_scope(thread_state& ts, const event& e, const site* where, std::int64_t ns,
                                           std::uint64_t index, Sink* w) {
    // PROF_STEP (or proftrace_step) annotates this session's steps: known
    // here from its first step, before the window's switch says so.
    const step_kind step = step_of(where);
    if (step == step_kind::step || step == step_kind::thread_step) discard_api_steps = true;
    open_scope& s = ts.stack.push();
    s.where = where;
    s.step = step;
    s.begin_ns = ns;
    s.payload = e.payload;
    const std::uint64_t pushed = pushed_external_id(e, step != step_kind::none);
    s.external_id = is_cuda_external_id(pushed) ? pushed : w->next_external_id++;
    const auto kind = static_cast<event_kind>(e.kind);
    if (kind == event_kind::shapes && w->record_shapes()) decode_shapes(e, s.shapes);
    if (kind == event_kind::comm) {
      const comm_args c = decode_comm(e);
      s.comm_bytes = c.bytes;
      s.comm_peer = c.peer;
    }
    if (kind == event_kind::dynamic_begin && decode_text(e, s.dynamic_name)) ++w->counts.truncated_names;
    s.index = index;
    if (PROFTRACE_UNLIKELY(!early_moved_ends_.empty()) && begin_of_moved_scope(ts, s, w)) pop(ts);
  }

  // A finished span recorded at once (a producer's wait for ring room): a
  // child of the innermost open scope.
  void complete_scope(thread_state& ts, const event& e, const site* where, std::int64_t ns, std::uint64_t index,
                      Sink* w) {
    open_scope& s = ts.stack.push();
    s.where = where;
    s.begin_ns = std::min(ns, w->to_ns(std::max<std::uint64_t>(e.payload, w->start_ticks)));
    s.external_id = w->next_external_id++;
    s.index = index;
    close_top(ts, w, ns, false);
  }

  void async_begin(thread_state& ts, const event& e, const site* where, std::int64_t ns, Sink* w) {
    const open_async a{.where = where, .begin_ns = ns, .tid = ts.tid, .external_id = w->next_external_id++};
    if (const auto early = early_async_ends_.find(e.payload); early != early_async_ends_.end()) {
      w->async(a, e.payload, early->second.end_ns, early->second.tid);
      early_async_ends_.erase(early);
    } else {
      open_asyncs_[e.payload] = a;
    }
  }

  void async_end(thread_state& ts, const event& e, std::int64_t ns, Sink* w) {
    const auto found = open_asyncs_.find(e.payload);
    if (found == open_asyncs_.end()) {
      if (asyncs_closed_before_end_.erase(e.payload) != 0) ++w->counts.ended_after_their_session;
      else early_async_ends_[e.payload] = {ns, ts.tid};
      return;
    }
    w->async(found->second, e.payload, ns, ts.tid);
    open_asyncs_.erase(found);
  }

  // What an arg, a FLOP count or an allocation goes to: the innermost open
  // scope that will be written (profile::step()'s annotations are stepped
  // over while PROF_STEP annotates steps). Null: none.
  open_scope* innermost_written(thread_state& ts) {
    for (std::size_t k = ts.stack.size(); k-- > 0;)
      if (!(discard_api_steps && ts.stack[k].step == step_kind::api_step)) return &ts.stack[k];
    return nullptr;
  }

  void add_flops(thread_state& ts, const event& e, Sink* w) {
    open_scope* s = innermost_written(ts);
    if (e.where != 0) ++w->counts.invalid_flop_estimates;
    else if (s == nullptr) ++w->counts.unscoped_flop_estimates;
    else if (s->frozen) ++w->losses.unpaired;  // see add_arg
    else if (std::int64_t sum = 0; __builtin_add_overflow(s->flops, static_cast<std::int64_t>(e.payload), &sum))
      ++w->counts.invalid_flop_estimates;  // the scope's sum past 64 bits: as an estimate past them, adds nothing
    else s->flops = sum;
  }

  // A PROF_ARG value: attached to the innermost open scope (none open, or
  // more than max_scope_args on it: dropped and counted).
  // A key given again replaces its value (the last wins, as one JSON key).
  // After a loss (the innermost scope is frozen), the scope it was given to
  // may be one whose begin was lost: counted as unpaired, never attached to
  // a scope it may not belong to.
  void add_arg(thread_state& ts, const event& e, Sink* w) {
    open_scope* s = innermost_written(ts);
    if (s == nullptr) {
      ++w->counts.dropped_args;
      return;
    }
    if (s->frozen) {
      ++w->losses.unpaired;
      return;
    }
    scope_arg a;
    a.key = reinterpret_cast<const site*>(e.where & ~arg_type_mask)->name;
    a.type = static_cast<arg_type>(e.where & arg_type_mask);
    if (a.type == arg_type::floating) std::memcpy(&a.floating, &e.payload, sizeof a.floating);
    else if (a.type == arg_type::string) {
      if (decode_text(e, a.text)) ++w->counts.truncated_names;
    } else a.integer = static_cast<std::int64_t>(e.payload);
    std::vector<scope_arg>& args = s->args;
    for (scope_arg& same : args)
      if (std::string_view(same.key) == a.key) return void(same = std::move(a));
    if (args.size() >= max_scope_args) {
      ++w->counts.dropped_args;
      return;
    }
    args.push_back(std::move(a));
  }

  // An allocation, free or reserve report: resolved (in time order when the
  // drain noted it), attributed to the innermost open scope that is written.
  void on_memory(thread_state& ts, const event& e, Sink* w) {
    resolved_memory m;
    if (ts.resolved.empty()) {
      memory_.resolve(e, m);  // a streamed drain (no memory window): in this thread's order
    } else {
      m = ts.resolved.front();
      ts.resolved.pop_front();
    }
    if (w == nullptr) return;
    if (e.ticks < w->start_ticks) {
      ++w->losses.late;
      return;
    }
    if (payload_device(e.payload) == invalid_memory_device) {
      ++w->counts.invalid_memory_devices;
      return;
    }
    const auto kind = static_cast<event_kind>(e.kind);
    if (kind == event_kind::free && !m.known) {
      // After a loss, its allocation was most likely lost (and counted):
      // this free is counted once more as a lost pair, not as a user's error.
      if (memory_.lost) ++w->losses.unpaired;
      else ++w->counts.unknown_frees;
      return;
    }
    const int device = payload_device(e.payload);
    open_scope* s = innermost_written(ts);
    if (kind != event_kind::reserved) {
      if (ts.window_seen != w->id) w->thread_seen(ts);
      // A re-allocation of a live address: after a loss its free was most
      // likely lost (counted there); else the program never reported it.
      if (m.replaced_live && !memory_.lost) ++w->counts.unfreed_reallocations;
      if (s && s->frozen) {  // it may have ended in the gap: its own only if its end comes (close_top)
        s->late_mem_self[device < 0 ? 0 : 1] += m.attributed_bytes();
        ++s->late_mem_events;
      } else if (s) {
        s->mem_self[device < 0 ? 0 : 1] += m.attributed_bytes();
      }
    }
    w->memory(ts, memory_event{ts.tid, w->to_ns(e.ticks), device, e.where, kind, &m}, s != nullptr);
  }

  // A gap: every scope open now is frozen at the last event seen before it.
  void on_gap(thread_state& ts, const event& e) {
    note_loss(ts.last_ticks, e.ticks);
    if (e.payload != 0) {
      ts.next_index = e.payload;  // handed out by consume(): the survivors start there
    } else {
      ts.next_index += 2;  // written by the producer: it took two slots
      ts.marked_drops += e.where;
    }
    freeze(ts);
  }

  void freeze(thread_state& ts) {
    for (std::size_t i = ts.frozen; i < ts.stack.size(); ++i) {
      open_scope& s = ts.stack[i];
      if (s.frozen) continue;
      s.frozen = true;
      s.frozen_ticks = ts.last_ticks;
    }
    ts.frozen = ts.stack.size();
    memory_.lost = true;
  }

  void pop(thread_state& ts) {
    ts.stack.pop_back();
    if (ts.frozen > ts.stack.size()) ts.frozen = ts.stack.size();
  }

  // Inline for the commonest end, the top scope's (a nested scope's end:
  // its children closed before it); the rest out of line.
  PROFTRACE_ALWAYS_INLINE void end_scope(thread_state& ts, const event& e, const site* where, std::int64_t ns,
                                         Sink* w) {
    const std::uint64_t begin = e.payload;
    if (PROFTRACE_LIKELY(names_a_begin(begin) && ring_uid_of(begin) == ts.uid && !ts.stack.empty() &&
                         ts.stack.back().index == begin))
      return close_top(ts, w, ns, false);
    end_not_on_top(ts, e, where, ns, w);
  }
  void end_not_on_top(thread_state& ts, const event& e, const site* where, std::int64_t ns, Sink* w) {
    const std::uint64_t begin = e.payload;
    if (!names_a_begin(begin)) {
      if (begin == no_begin) ++w->losses.unpaired;  // its begin was dropped (and counted there)
      else end_by_site(ts, where, ns, w, begin == cancel_end);
      return;
    }
    if (ring_uid_of(begin) != ts.uid) {
      end_moved(ts, begin, ns, w);
      return;
    }
    // Indices grow up the stack: the match is at or near the top.
    std::size_t k = ts.stack.size();
    while (k > 0 && ts.stack[k - 1].index > begin) --k;
    const bool found = k > 0 && ts.stack[k - 1].index == begin;
    if (PROFTRACE_LIKELY(found && k == ts.stack.size())) {
      close_top(ts, w, ns, false);
      return;
    }
    // Whatever began after it and is still open ended unseen.
    std::vector<open_scope> kept = unwind_to(ts, k, w);
    if (found) close_top(ts, w, ns, false);
    else if (!ended_after_close(begin, w)) ++w->losses.unpaired;  // its begin was lost (and counted)
    for (auto it = kept.rbegin(); it != kept.rend(); ++it) ts.stack.push_back(std::move(*it));
  }

  // An end with no begin index: the innermost open scope of its site closes.
  // profile::step()'s annotations need not nest with user scopes (as torch's
  // record_function): they close in place and are stepped over.
  void end_by_site(thread_state& ts, const site* where, std::int64_t ns, Sink* w, bool cancelled) {
    std::size_t k = ts.stack.size();
    while (k > 0 && ts.stack[k - 1].where != where) --k;
    if (k == 0) {
      // Its begin preceded the window or was lost. A step annotation's
      // begin is also dropped on purpose when PROF_STEP annotates steps.
      if (where != &api_step_site) ++w->losses.unpaired;
      return;
    }
    std::vector<open_scope> kept;
    if (where == &api_step_site) {
      for (std::size_t i = ts.stack.size(); i-- > k;) kept.push_back(std::move(ts.stack[i]));
      ts.stack.resize(k);
      if (ts.frozen > k) ts.frozen = k;
    } else {
      kept = unwind_to(ts, k, w);
    }
    close_top(ts, w, ns, cancelled);
    for (auto it = kept.rbegin(); it != kept.rend(); ++it) ts.stack.push_back(std::move(*it));
  }

  // Takes every entry at `k` and above off the stack: their ends will not
  // come on this thread. Step annotations of profile::step() are stepped
  // over: returned, innermost first, for the caller to put back once it
  // closed what it closes.
  std::vector<open_scope> unwind_to(thread_state& ts, std::size_t k, Sink* w) {
    std::vector<open_scope> kept;
    while (ts.stack.size() > k) {
      if (ts.stack.back().step == step_kind::api_step) {
        kept.push_back(std::move(ts.stack.back()));
        pop(ts);
        continue;
      }
      give_up_top(ts, w);
    }
    return kept;
  }

  // The top entry's end will not come on this thread. After a gap it was
  // lost: written truncated. Without one, it ended (or will end) on another
  // thread: an async range from here to that end.
  void give_up_top(thread_state& ts, Sink* w) {
    open_scope& top = ts.stack.back();
    if (top.frozen || w == nullptr) {
      close_truncated_top(ts, w);
      return;
    }
    open_scope s = std::move(top);
    pop(ts);
    // No scope's child from here on: what ran inside it on this thread
    // counts as its parent's children, as in the written trace.
    if (!ts.stack.empty()) ts.stack.back().child_ns += s.child_ns;
    if (s.announced) w->withdrawn(ts, s, std::max(w->to_ns(ts.last_ticks), s.begin_ns));
    const open_async a = moved_range(s, ts.tid);
    if (const auto early = early_moved_ends_.find(s.index); early != early_moved_ends_.end()) {
      write_moved(*w, a, early->second.end_ns, early->second.tid);
      early_moved_ends_.erase(early);
      return;
    }
    const std::uint64_t id = next_async_id.fetch_add(1, std::memory_order_relaxed);
    open_asyncs_[id] = a;
    moved_async_ids_[s.index] = id;
  }

  void close_truncated_top(thread_state& ts, Sink* w) {
    if (w == nullptr) {
      pop(ts);
      return;
    }
    const open_scope& top = ts.stack.back();
    const std::int64_t at = top.frozen ? std::max(w->to_ns(top.frozen_ticks), top.begin_ns) : w->to_ns(ts.last_ticks);
    close_top(ts, w, std::max(at, top.begin_ns), false, true);
  }

  // Allocations made after a truncated scope was last seen were not its:
  // they go to the written scope around it (frozen too: kept as late bytes
  // until its own end decides), or, with none, to the [memory] row.
  void hand_on_late_memory(thread_state& ts, const open_scope& s, Sink* w) {
    open_scope* outer = innermost_written(ts);
    if (outer == nullptr) return w->unscoped_memory(s.late_mem_self, s.late_mem_events);
    for (int i = 0; i < 2; ++i) (outer->frozen ? outer->late_mem_self : outer->mem_self)[i] += s.late_mem_self[i];
    if (outer->frozen) outer->late_mem_events += s.late_mem_events;
  }

  // Where a ring lost events, from its last record before them to the gap
  // record after them (ticks): an async range open past one of these may
  // have lost its end there. Past max_losses, one span covers them all.
  void note_loss(std::uint64_t from, std::uint64_t to) {
    if (losses_.size() >= max_losses) {
      for (const auto& [a, b] : losses_) from = std::min(from, a), to = std::max(to, b);
      losses_.clear();
    }
    losses_.emplace_back(from, std::max(from, to));
  }
  // The earliest moment a range begun at `begin_ns` may have lost its end.
  std::optional<std::int64_t> first_loss_after(Sink& w, std::int64_t begin_ns) const {
    std::optional<std::int64_t> first;
    for (const auto& [from, to] : losses_)
      if (w.to_ns(to) > begin_ns) first = std::min(first.value_or(INT64_MAX), std::max(w.to_ns(from), begin_ns));
    return first;
  }

  // The async range a scope that ended on another thread becomes, with what
  // was recorded in it on its first thread (args, FLOPs, shapes).
  static open_async moved_range(const open_scope& s, std::int64_t tid) {
    return {.where = s.where,
            .begin_ns = s.begin_ns,
            .tid = tid,
            .external_id = s.external_id,
            .dynamic_name = s.dynamic_name,
            .shapes = s.shapes,
            .flops = s.flops,
            .args = s.args};
  }

  void write_moved(Sink& w, const open_async& a, std::int64_t end_ns, std::int64_t end_tid) {
    ++w.counts.moved_scopes;
    w.async(a, next_async_id.fetch_add(1, std::memory_order_relaxed), end_ns, end_tid);
  }

  // An end recorded on this thread for a scope that began on another.
  void end_moved(thread_state& ts, std::uint64_t begin, std::int64_t ns, Sink* w) {
    if (const auto parked = moved_async_ids_.find(begin); parked != moved_async_ids_.end()) {
      if (const auto a = open_asyncs_.find(parked->second); a != open_asyncs_.end()) {
        ++w->counts.moved_scopes;
        w->async(a->second, a->first, ns, ts.tid);
        open_asyncs_.erase(a);
      }
      moved_async_ids_.erase(parked);
      return;
    }
    if (const auto owner = by_uid_.find(ring_uid_of(begin)); owner != by_uid_.end() && take_moved(*owner->second, begin, ns, ts.tid, w))
      return;
    if (ended_after_close(begin, w)) return;
    early_moved_ends_[begin] = {ns, ts.tid};  // its begin is still to come (or was lost)
  }

  // Takes the scope `begin` off its own thread's stack, if open there, and
  // writes it as an async range ending at `ns` on `end_tid`.
  bool take_moved(thread_state& o, std::uint64_t begin, std::int64_t ns, std::int64_t end_tid, Sink* w) {
    const auto it = std::lower_bound(o.stack.begin(), o.stack.end(), begin,
                                     [](const open_scope& s, std::uint64_t i) { return s.index < i; });
    if (it == o.stack.end() || it->index != begin) return false;
    const open_async a = moved_range(*it, o.tid);
    if (it->announced) w->withdrawn(o, *it, std::max(ns, it->begin_ns));
    const auto at = static_cast<std::size_t>(it - o.stack.begin());
    if (at > 0) o.stack[at - 1].child_ns += it->child_ns;  // as give_up_top: its children become its parent's
    o.stack.erase(it);
    if (o.frozen > at) --o.frozen;
    write_moved(*w, a, ns, end_tid);
    return true;
  }

  // A begin whose end, recorded on another thread, came first.
  bool begin_of_moved_scope(thread_state& ts, const open_scope& s, Sink* w) {
    const auto early = early_moved_ends_.find(s.index);
    if (early == early_moved_ends_.end()) return false;
    write_moved(*w, moved_range(s, ts.tid), early->second.end_ns, early->second.tid);
    early_moved_ends_.erase(early);
    return true;
  }

  // Scopes written closed at the end of their trace window (its session's
  // stop, or their gone thread's exit) by begin index: their end may still
  // come in a later one (a scope across a stop and a start, a C push popped
  // in the next session), counted as such, not as a loss.
  static constexpr std::size_t max_closed_before_end = std::size_t{1} << 16;
  void remember_closed(std::uint64_t begin) {
    if (closed_before_end_.size() < max_closed_before_end) closed_before_end_.insert(begin);
  }
  void remember_closed_async(std::uint64_t id) {
    if (asyncs_closed_before_end_.size() < max_closed_before_end) asyncs_closed_before_end_.insert(id);
  }
  // The ranges a session's end closed (async ranges, and scopes given up on
  // their thread): their ends may come in the next session.
  void remember_ranges_closed_at_end() {
    std::unordered_set<std::uint64_t> given_up;
    for (const auto& [begin, id] : moved_async_ids_) {
      remember_closed(begin);
      given_up.insert(id);
    }
    for (const auto& [id, a] : open_asyncs_)
      if (!given_up.contains(id)) remember_closed_async(id);
  }
  // Whether an end with no open begin belongs to a scope written closed
  // before it came (then counted as such).
  bool ended_after_close(std::uint64_t begin, Sink* w) {
    if (closed_before_end_.erase(begin) == 0) return false;
    ++w->counts.ended_after_their_session;
    return true;
  }

  // `truncated`: its end was lost; end_ns is the last moment it was seen open.
  // The scope stays in its stack slot (not moved) while the sink reads it.
  void close_top(thread_state& ts, Sink* w, std::int64_t end_ns, bool cancelled, bool truncated = false) {
    open_scope& s = ts.stack.back();
    pop(ts);
    const bool api_step = s.step == step_kind::api_step;
    if (cancelled || (api_step && discard_api_steps)) return;
    if (!truncated && s.frozen) {  // its end came: what ended inside it after its freeze was its child after all
      s.child_ns += s.late_child_ns;  // (late_* stay 0 unless it was frozen)
      for (int i = 0; i < 2; ++i) {
        s.mem_child[i] += s.late_mem_child[i];
        s.mem_self[i] += s.late_mem_self[i];
      }
    } else if (s.late_mem_events != 0) {
      hand_on_late_memory(ts, s, w);
    }
    s.truncated = truncated;
    if (truncated) ++w->counts.truncated_scopes;
    const std::int64_t dur = end_ns > s.begin_ns ? end_ns - s.begin_ns : 0;
    if (!ts.stack.empty()) {
      open_scope& parent = ts.stack.back();
      const bool late = parent.frozen && end_ns > w->to_ns(parent.frozen_ticks);
      (late ? parent.late_child_ns : parent.child_ns) += dur;
      for (int i = 0; i < 2; ++i) (late ? parent.late_mem_child : parent.mem_child)[i] += s.mem_self[i] + s.mem_child[i];
    }
    w->scope(ts, s, end_ns);
  }

  memory_resolver& memory_;
  std::unordered_map<std::uint64_t, thread_state*> by_uid_;
  // Async ranges by id, across threads: open ones, and ends seen first.
  std::unordered_map<std::uint64_t, open_async> open_asyncs_;
  std::unordered_map<std::uint64_t, early_async_end> early_async_ends_;
  // Scopes that end on another thread than their begin's, by begin index:
  // those whose begin's thread gave them up (now async ranges in
  // open_asyncs_, under the id given here), and ends seen before their begin.
  std::unordered_map<std::uint64_t, std::uint64_t> moved_async_ids_;
  std::unordered_map<std::uint64_t, early_async_end> early_moved_ends_;
  std::unordered_set<std::uint64_t> closed_before_end_;
  std::unordered_set<std::uint64_t> asyncs_closed_before_end_;
  // The window's losses (note_loss): [from, to] in ticks.
  static constexpr std::size_t max_losses = 1024;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> losses_;
};

}  // namespace proftrace::detail
