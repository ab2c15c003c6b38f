// `proftrace summary` of one trace (trace_summary.hpp): the offline
// aggregator, which nests a trace's host events by their intervals and
// counts them by torch's rules (lib/aggregation/torch_rules.hpp).
#include "trace_summary.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <exception>
#include <optional>
#include <thread>
#include <string_view>

#include <proftrace_trace_io/torch_rules.hpp>
#include <proftrace_trace_io/perfetto_reader.hpp>
#include <proftrace_trace_io/sorted_runs.hpp>
#include "batch_queue.hpp"
#include "trace_layout.hpp"

namespace proftrace::tools {

// torch's key_averages() rules, shared with the live aggregator.
namespace rules = proftrace::detail;

namespace {

// Times are kept within +-4e18 ns (the year 2096 in Unix time), so that an
// end (start + duration) always fits; totals saturate instead of wrapping.
// A trace holding 1e300 still summarises, to numbers that say "huge".
constexpr double max_abs_ns = 4e18;
std::int64_t to_ns(double us) {
  const double ns = us * 1000.0;
  if (ns != ns) return 0;
  return static_cast<std::int64_t>(std::llround(std::clamp(ns, -max_abs_ns, max_abs_ns)));
}

}  // namespace

bool is_host_op(const trace_event& e) noexcept {
  using namespace std::string_view_literals;
  return e.ph == "X"sv && !e.has_stream && rules::is_host_category(e.cat);
}

struct aggregator::event_runs {
  // A type of its own, not a function pointer: the sort inlines the comparison.
  struct less {
    bool operator()(const record& a, const record& b) const noexcept { return before(a, b); }
  };
  proftrace::detail::sorted_runs<record, less> runs;
};

aggregator::aggregator(bool group_by_input_shape, std::size_t max_pending_per_thread, std::size_t max_buffered_events)
    : by_shape_(group_by_input_shape),
      max_pending_(std::max<std::size_t>(max_pending_per_thread, 2)),
      runs_(std::make_unique<event_runs>(event_runs{{event_runs::less{}, {.max_items = std::max<std::size_t>(max_buffered_events, 1)}}})) {
  // A thread listed in end order: among identical intervals the one listed
  // last encloses (see buffer()), decided from what was seen by then.
  runs_->runs.before_sort([this](record& r) {
    if (seen_[r.thread].evidence == order::by_end && r.tie >= 0) r.tie = -r.tie - 1;
  });
}

aggregator::~aggregator() = default;

std::size_t aggregator::spilled_runs() const noexcept { return runs_->runs.spilled_runs(); }

std::size_t aggregator::row_for(const trace_event& e) {
  const bool step = rules::is_step_event(e.name);
  if (const auto n = step ? rules::step_number(e.name) : std::nullopt) {
    first_step_ = std::min(first_step_, *n);
    last_step_ = std::max(last_step_, *n);
  }
  const bool shaped = by_shape_ && !step && e.has_input_dims;
  if (!step && !shaped)  // most events: a row that exists, found without building its key
    if (const auto it = index_.find(e.name); it != index_.end()) return it->second;
  std::string key = step ? std::string(rules::step_row_key) : e.name;
  std::string index_key = shaped ? rules::row_key(key, e.input_dims) : key;
  auto [it, fresh] = index_.try_emplace(std::move(index_key), rows_.size());
  if (fresh) {
    rows_.emplace_back();
    row_finalized_.push_back(false);
    rows_.back().key = std::move(key);
    if (shaped) rows_.back().input_shapes = e.input_dims;
    row_first_start_.push_back(INT64_MAX);
    row_first_end_.push_back(INT64_MIN);
  }
  return it->second;
}

void aggregator::add_weight(interval::stack_data& to, std::string path, std::int64_t ns) {
  // A short list is searched; a long one (a parent with many distinct
  // subtrees) through an index, so claiming n children stays linear.
  constexpr std::size_t indexed_from = 16;
  if (to.below.size() < indexed_from) {
    for (auto& [p, v] : to.below)
      if (p == path) {
        rules::add_saturating(v, ns);
        return;
      }
  } else {
    if (!to.index) {
      to.index = std::make_unique<std::unordered_map<std::string, std::size_t>>();
      for (std::size_t i = 0; i < to.below.size(); ++i) to.index->emplace(to.below[i].first, i);
    }
    if (const auto it = to.index->find(path); it != to.index->end()) {
      rules::add_saturating(to.below[it->second].second, ns);
      return;
    }
    to.index->emplace(path, to.below.size());
  }
  to.below.emplace_back(std::move(path), ns);
}

// An interval nobody will claim any more: its own stack and its subtree's go
// to the totals, under the enclosing names it had when it arrived.
void aggregator::emit_stacks(const interval& x) {
  std::string own = x.stacks->path;
  if (!own.empty()) own += '\x1f';
  own += rows_[x.row].key;
  const auto add = [&](const std::string& path, std::int64_t ns) {
    auto [it, fresh] = stack_self_ns_.try_emplace(path, 0);
    if (fresh) stack_order_.push_back(path);
    rules::add_saturating(it->second, ns);
  };
  add(own, rules::self_ns(rules::duration_ns(x.start, x.end), x.child_ns));
  for (const auto& [p, v] : x.stacks->below) add(own + '\x1f' + p, v);
}

proftrace::event_averages aggregator::stacks() const {
  proftrace::event_averages out;
  for (const auto& path : stack_order_) {
    proftrace::event_average row;
    std::vector<std::string> names;
    for (std::size_t from = 0;;) {
      const std::size_t sep = path.find('\x1f', from);
      names.push_back(path.substr(from, sep == std::string::npos ? std::string::npos : sep - from));
      if (sep == std::string::npos) break;
      from = sep + 1;
    }
    row.key = names.back();
    names.pop_back();
    row.stack.assign(names.rbegin(), names.rend());
    row.self_cpu_time_total_ns = stack_self_ns_.at(path);
    out.rows.push_back(std::move(row));
  }
  return out;
}

// torch's self memory: an event's own interval's bytes less its direct
// children's (python_function children included).
void aggregator::claim_memory(interval& parent, const interval& child) noexcept {
  for (int d = 0; d < 2; ++d) rules::add_saturating(parent.mem_self[d], child.mem_total[d] == INT64_MIN ? INT64_MAX : -child.mem_total[d]);
}

void aggregator::finalize(const interval& x, bool has_parent) {
  if (x.memory || x.python) return;
  if (stacks_on_ && !(has_parent && x.stacks->path.empty() && !x.nested)) emit_stacks(x);
  auto& r = rows_[x.row];
  // As in torch, a key is top-level when its first occurrence (in time) had
  // no parent.
  if (!row_finalized_[x.row] || x.start < row_first_start_[x.row] ||
      (x.start == row_first_start_[x.row] && x.end > row_first_end_[x.row])) {
    row_finalized_[x.row] = true;
    row_first_start_[x.row] = x.start;
    row_first_end_[x.row] = x.end;
    r.top_level = !has_parent;
  }
  const std::int64_t dur = rules::duration_ns(x.start, x.end);
  const std::int64_t self = rules::self_ns(dur, x.child_ns);
  rules::add_event_time(r, dur, self);
  if (self_time_sink_) self_time_sink_(r, x.row, self);
  rules::add_event_flops_memory(r, x.flops, x.mem_total, x.mem_self);
}

std::string aggregator::add(const trace_event& e) {
  if (std::string problem = event_problem(e); !problem.empty()) return problem;
  using namespace std::string_view_literals;
  if (e.ph != "M"sv && e.ts_type == json_type::number) first_ts_ns_ = std::min(first_ts_ns_, to_ns(e.ts));
  if (e.ph == "i"sv && e.has_bytes && e.name == "[memory]"sv) {
    // An allocation or a free: as in torch, it counts for every host event,
    // of any thread of its process, whose interval holds its time (ends
    // included): CPU Mem / Self CPU Mem, CUDA Mem, ... (A merged trace's
    // ranks are processes: one rank's allocations are not another's.)
    if (e.ts_type != json_type::number) return {};
    memory_record m;
    m.process = process_id(e.pid);
    m.ts = to_ns(e.ts);
    m.bytes[e.device_type == 1 ? 1 : 0] = e.bytes;
    memory_.push_back(m);
    saw_memory_ = true;
    return {};
  }
  if (e.ph != "X"sv) return {};
  // torch nests host events inside the Python frames recorded with
  // with_stack (cat python_function), though it shows no rows for them.
  const bool python = e.cat == "python_function"sv && !e.has_stream;
  if (!python && !is_host_op(e)) return {};

  record r;
  r.start = to_ns(e.ts);
  r.end = r.start + std::max<std::int64_t>(to_ns(e.dur), 0);
  r.row = python ? UINT32_MAX : static_cast<std::uint32_t>(row_for(e));
  r.flops = python ? 0 : e.flops;
  saw_python_ = saw_python_ || python;
  buffer(r, e);
  return {};
}

// Per thread by start, the longer first (torch's order for nesting); among
// identical intervals by `tie`.
bool aggregator::before(const record& a, const record& b) noexcept {
  if (a.thread != b.thread) return a.thread < b.thread;
  if (a.start != b.start) return a.start < b.start;
  if (a.end != b.end) return a.end > b.end;
  return a.tie < b.tie;
}

void aggregator::buffer(record r, const trace_event& e) {
  // Events come in runs of one thread: look the thread up only when it changes.
  if (last_thread_id_ == UINT32_MAX || e.pid != last_pid_ || e.tid != last_tid_) {
    last_pid_ = e.pid;
    last_tid_ = e.tid;
    auto [it, fresh] = thread_ids_.try_emplace(e.pid + "/" + e.tid, static_cast<std::uint32_t>(thread_names_.size()));
    if (fresh) {
      thread_names_.push_back(it->first);
      thread_process_.push_back(process_id(e.pid));
      seen_.emplace_back();
    }
    last_thread_id_ = it->second;
  }
  r.thread = last_thread_id_;
  thread_seen& S = seen_[r.thread];
  // Which order the file lists this thread in: start order (torch: a parent
  // before its children) or end order (proftrace: children first). Among
  // identical intervals the one listed first encloses in start order, the
  // one listed last in end order. Anything else is out of order: sorted.
  if (S.any) {
    const bool identical = r.start == S.start && r.end == S.end;
    if (!identical && S.evidence == order::unknown) {
      if (S.start <= r.start && r.end <= S.end) S.evidence = order::by_start;
      else if (r.start <= S.start && S.end <= r.end) S.evidence = order::by_end;
    }
    if (r.start < S.start || (r.start == S.start && r.end > S.end)) S.out_of_order = true;
  }
  S.any = true;
  S.start = r.start;
  S.end = r.end;
  r.tie = static_cast<std::int64_t>(seq_++);
  runs_->runs.add(r);
}

void aggregator::replay(const record& r) {
  const std::string& name = thread_names_[r.thread];
  if (!replay_state_ || replay_thread_ != r.thread) {
    replay_thread_ = r.thread;
    replay_state_ = &threads_[name];
    replay_state_->mode = order::by_start;  // sorted: parents come first
  }
  interval E;
  E.start = r.start;
  E.end = r.end;
  E.python = r.row == UINT32_MAX;
  E.row = E.python ? SIZE_MAX : r.row;
  E.flops = r.flops;
  if (stacks_on_ && !E.python) E.stacks = std::make_unique<interval::stack_data>();
  count_memory(r, E);
  place(std::move(E), *replay_state_, name);
}

std::uint32_t aggregator::process_id(const std::string& pid) {
  return process_ids_.try_emplace(pid, static_cast<std::uint32_t>(process_ids_.size())).first->second;
}

// The bytes of r's process's memory events in [start, end], from that
// process's prefix sums.
void aggregator::count_memory(const record& r, interval& E) {
  const std::uint32_t process = thread_process_[r.thread];
  if (process >= process_memory_.size()) return;
  const auto first = memory_.begin() + static_cast<std::ptrdiff_t>(process_memory_[process].first);
  const auto last = memory_.begin() + static_cast<std::ptrdiff_t>(process_memory_[process].second);
  if (first == last) return;
  const auto lo = std::lower_bound(first, last, r.start, [](const memory_record& m, std::int64_t t) { return m.ts < t; });
  const auto hi = std::upper_bound(first, last, r.end, [](std::int64_t t, const memory_record& m) { return t < m.ts; });
  ++memory_cover_[static_cast<std::size_t>(lo - memory_.begin())];
  --memory_cover_[static_cast<std::size_t>(hi - memory_.begin())];
  for (int d = 0; d < 2; ++d) {
    const std::int64_t upto_hi = hi == first ? 0 : std::prev(hi)->bytes[d];
    const std::int64_t upto_lo = lo == first ? 0 : std::prev(lo)->bytes[d];
    if (__builtin_sub_overflow(upto_hi, upto_lo, &E.mem_total[d]))  // sums of crafted sizes: saturate
      E.mem_total[d] = upto_hi > upto_lo ? INT64_MAX : INT64_MIN;
    E.mem_self[d] = E.mem_total[d];
  }
}

// E, the next interval of thread T by start (the longer first), among the
// pending ones: what it closes, what it claims, where it nests.
void aggregator::place(interval E, thread_state& T, const std::string& thread) {
  const bool claimed = claim_arrived_children(E, T);
  if (claimed && T.evicted_end != INT64_MIN && E.start < T.evicted_end && !T.warned) {
    T.warned = true;
    warnings_.push_back("thread " + thread + ": more than " + std::to_string(max_pending_) +
                        " events waited for an enclosing event; self times of enclosing events may be overstated");
  }
  close_ended_before(E, T);
  nest_in_open_parent(E, T);
  if (stacks_on_ && E.stacks) take_enclosing_names(E, T);
  push_pending(std::move(E), T);
}

// (a) Intervals that arrived before E and lie inside it: E's children,
// written before their parent (proftrace writes a thread's events as they
// end). Only the ones not already counted under a parent are direct.
// A memory event (zero length) claims nothing. Returns whether E claimed any.
bool aggregator::claim_arrived_children(interval& E, thread_state& T) {
  bool claimed = false;
  while (!E.memory && !T.stack.empty()) {
    const interval& X = T.stack.back();
    const bool inside = X.start >= E.start && X.end <= E.end;
    const bool identical = X.start == E.start && X.end == E.end;
    if (!inside || (identical && T.mode != order::by_end)) break;
    // A memory event before its scope says nothing about the order: PyTorch
    // may list it apart from the ops.
    if (!identical && T.mode == order::unknown && !X.memory) T.mode = order::by_end;
    if (!X.nested) {
      rules::add_saturating(E.child_ns, X.end - X.start);
      claim_memory(E, X);
    } else if (T.stack.size() >= 2) {
      claim_memory(T.stack[T.stack.size() - 2], X);  // its parent lies right below it
    }
    claimed = true;
    if (stacks_on_ && !X.memory && !X.python && E.stacks) {
      // X and what hangs below it now hang below E.
      const std::string& name = rows_[X.row].key;
      add_weight(*E.stacks, name, rules::self_ns(rules::duration_ns(X.start, X.end), X.child_ns));
      for (const auto& [p, v] : X.stacks->below) add_weight(*E.stacks, name + '\x1f' + p, v);
    }
    finalize(X, true);
    T.stack.pop_back();
  }
  return claimed;
}

// (b) Intervals that ended before E starts: done, unless (events written
// in end order) an enclosing event may still claim them.
void aggregator::close_ended_before(const interval& E, thread_state& T) {
  while (!T.stack.empty()) {
    const interval& X = T.stack.back();
    const bool contains = X.start <= E.start && E.end <= X.end;
    if (contains || X.end > E.start) break;
    if (!X.nested && T.mode != order::by_start) break;
    // A nested interval's parent lies right below it (see finish()).
    if (X.nested && T.stack.size() >= 2) claim_memory(T.stack[T.stack.size() - 2], X);
    finalize(X, X.nested);
    T.stack.pop_back();
  }
}

// (c) An open interval that contains E: E's parent (PyTorch lists a
// thread's events in start order).
void aggregator::nest_in_open_parent(interval& E, thread_state& T) {
  if (T.stack.empty()) return;
  interval& X = T.stack.back();
  if (X.start <= E.start && E.end <= X.end) {
    rules::add_saturating(X.child_ns, E.end - E.start);
    E.nested = true;
    if (T.mode == order::unknown && !E.memory && !(X.start == E.start && X.end == E.end)) T.mode = order::by_start;
  }
}

// E's enclosing names: those of its nearest enclosing frame (the chain
// above E is its ancestors: events are nested in start order), plus that
// frame's own name. Python frames carry none and are passed over, a
// memory event passes its parent's names on unchanged (neither is a
// frame of the stack). Taken from that one interval, never by a walk over
// every pending interval: that walk made `stacks` quadratic in a
// thread's top-level events.
void aggregator::take_enclosing_names(interval& E, const thread_state& T) const {
  if (!E.nested) return;
  for (auto it = T.stack.rbegin(); it != T.stack.rend(); ++it) {
    const interval& P = *it;
    if (!(P.start <= E.start && E.end <= P.end)) break;  // a finished sibling still pending: no ancestor
    if (P.python || !P.stacks) continue;
    E.stacks->path = P.stacks->path;
    if (!P.memory) {
      if (!E.stacks->path.empty()) E.stacks->path += '\x1f';
      E.stacks->path += rows_[P.row].key;
    }
    break;
  }
}

// E joins the pending intervals; past max_pending_ the oldest is closed.
void aggregator::push_pending(interval E, thread_state& T) {
  T.stack.push_back(std::move(E));
  if (T.stack.size() > max_pending_) {
    const interval& F = T.stack.front();
    T.evicted_end = std::max(T.evicted_end, F.end);
    finalize(F, F.nested);
    T.stack.pop_front();
  }
}

// Memory events that no host event of any thread holds: torch's top-level
// "[memory]" row (one call per event, its bytes as its own memory).
void aggregator::add_uncovered_memory_row() {
  std::size_t row = SIZE_MAX;
  std::int64_t cover = 0;
  for (std::size_t i = 0; i < memory_.size(); ++i) {
    cover += memory_cover_[i];
    if (cover > 0) continue;
    if (row == SIZE_MAX) {
      row = rows_.size();
      rows_.emplace_back();
      rows_.back().key = rules::memory_row_key;
      row_finalized_.push_back(true);
      row_first_start_.push_back(memory_[i].ts);
      row_first_end_.push_back(memory_[i].ts);
    }
    const bool same_process = i && memory_[i - 1].process == memory_[i].process;  // prefix sums restart per process
    const std::int64_t host = memory_[i].bytes[0] - (same_process ? memory_[i - 1].bytes[0] : 0);
    const std::int64_t device = memory_[i].bytes[1] - (same_process ? memory_[i - 1].bytes[1] : 0);
    const std::int64_t bytes[2] = {host, device};
    rules::add_unscoped_memory(rows_[row], bytes, 1);  // top-level, as torch's
  }
  memory_cover_.clear();
}

// Memory events by process and time, as prefix sums per process.
void aggregator::sum_memory_by_process() {
  std::stable_sort(memory_.begin(), memory_.end(), [](const memory_record& a, const memory_record& b) {
    return a.process != b.process ? a.process < b.process : a.ts < b.ts;
  });
  process_memory_.assign(process_ids_.size(), {0, 0});
  for (std::size_t i = 0; i < memory_.size(); ++i) {
    if (i && memory_[i - 1].process == memory_[i].process)
      for (int d = 0; d < 2; ++d) rules::add_saturating(memory_[i].bytes[d], memory_[i - 1].bytes[d]);
    else process_memory_[memory_[i].process].first = i;
    process_memory_[memory_[i].process].second = i + 1;
  }
  memory_cover_.assign(memory_.size() + 1, 0);
}

// The buffered events, sorted and merged with the spilled runs on a thread
// of its own (reading the runs back is half the work), replayed on this one.
void aggregator::replay_merged() {
  batch_queue<record> queue(4096, 4);
  std::exception_ptr failure;
  std::thread merging([&] {
    try {
      auto b = queue.take_empty();
      runs_->runs.merge([&](const record& r, std::string_view) {
        if (!b) return;  // the replay stopped (it threw)
        b->next() = r;
        if (b->full()) b = queue.push(b) ? queue.take_empty() : nullptr;
      });
      if (b && b->size > 0) queue.push(b);
    } catch (...) {
      failure = std::current_exception();
    }
    queue.close();
  });
  std::unique_ptr<batch_queue<record>::batch> b;
  try {
    while (queue.pop(b))
      for (std::size_t i = 0; i < b->size; ++i) replay(b->items[i]);
  } catch (...) {
    queue.cancel();
    merging.join();
    throw;
  }
  merging.join();
  if (failure) std::rethrow_exception(failure);
}

proftrace::event_averages aggregator::finish() {
  sum_memory_by_process();
  for (const auto& S : seen_) threads_out_of_order_ += S.out_of_order ? 1 : 0;
  replay_merged();
  replay_state_ = nullptr;
  for (auto& [key, T] : threads_) {
    // A nested interval's parent is the one right below it: it was the top
    // of the stack when the child arrived, and nothing under the child is
    // removed before it but from the front (then the child is the front).
    // Children's memory first, then every interval in arrival order.
    for (std::size_t i = T.stack.size(); i-- > 1;)
      if (T.stack[i].nested) claim_memory(T.stack[i - 1], T.stack[i]);
    for (const auto& x : T.stack) finalize(x, x.nested);
    T.stack.clear();
  }
  threads_.clear();
  add_uncovered_memory_row();
  proftrace::event_averages out;
  // Keys in the order of their first event in time (the longer first among
  // equal starts), as torch's key_averages() lists them: not the file's order.
  std::vector<std::size_t> by_time(rows_.size());
  for (std::size_t i = 0; i < by_time.size(); ++i) by_time[i] = i;
  std::stable_sort(by_time.begin(), by_time.end(), [&](std::size_t a, std::size_t b) {
    if (row_first_start_[a] != row_first_start_[b]) return row_first_start_[a] < row_first_start_[b];
    return row_first_end_[a] > row_first_end_[b];
  });
  out.rows.reserve(rows_.size());
  for (auto i : by_time) out.rows.push_back(rows_[i]);
  out.grouped_by_input_shape = by_shape_;
  return out;
}


read_result aggregate(const std::filesystem::path& path, aggregator& agg, std::vector<std::string>& warnings,
                      bool progress) {
  std::string error;
  read_options opts;
  opts.progress = progress;
  opts.on_event = [&](const trace_event& e) {
    error = agg.add(e);
    return error.empty();
  };
  const read_result r = read_trace(path, opts);
  if (!error.empty()) throw trace_error(path.string() + ": " + error);
  require_trace_layout(path, r);
  if (r.truncated)
    warnings.push_back(path.string() + ": " + where_cut(r, "trace") +
                       " (cut off, or still being written); summarised the " + std::to_string(r.events) +
                       " events before it");
  if (r.unplaced_events)
    warnings.push_back(path.string() + ": " + std::to_string(r.unplaced_events) +
                       " events on a clock that no clock snapshot of their sequence placed were skipped");
  if (const std::string note = incompleteness(r); !note.empty()) warnings.push_back(path.string() + ": " + note);
  if (r.skipped_open_slices)
    warnings.push_back(path.string() + ": " + std::to_string(r.skipped_open_slices) +
                       " slices begun while " +
                       std::to_string(proftrace::detail::max_open_slices) + " were open were skipped (a corrupt trace?)");
  for (auto& w : agg.warnings()) warnings.push_back(path.string() + ": " + w);
  return r;
}

std::string us_text(std::int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(ns) / 1000.0);
  return buf;
}

void take_loss_counter(const metadata_entry& m, proftrace::loss_counts& losses) {
  static const std::pair<const char*, std::uint64_t proftrace::loss_counts::*> counters[] = {
      {"proftrace.dropped_events", &proftrace::loss_counts::dropped},
      {"proftrace.overwritten_events", &proftrace::loss_counts::overwritten},
      {"proftrace.unattached_events", &proftrace::loss_counts::unattached},
      {"proftrace.late_events", &proftrace::loss_counts::late},
      {"proftrace.unpaired_events", &proftrace::loss_counts::unpaired}};
  for (const auto& [key, field] : counters)
    if (m.key == key)
      if (const auto n = integer_value(m, 0, INT64_MAX)) losses.*field = static_cast<std::uint64_t>(*n);
}

std::string numeric_csv(const proftrace::event_averages& averages) {
  // The quantities the table and csv() show (CPU memory whenever the trace
  // was recorded with profile_memory), so that no view leaves one out.
  const auto shown = averages.shown_quantities();
  const bool cuda_time = shown.cuda_time, cpu_mem = shown.cpu_memory, cuda_mem = shown.cuda_memory, flops = shown.flops,
             shapes = averages.grouped_by_input_shape;
  const auto quoted = [](const std::string& s) {
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  const auto avg_us = [](std::int64_t total_ns, std::int64_t count) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", count ? static_cast<double>(total_ns) / 1e3 / static_cast<double>(count) : 0.0);
    return std::string(buf);
  };
  std::string out = "name";
  if (shapes) out += ",input_shapes";
  out += ",count,cpu_total_us,self_cpu_us,cpu_avg_us";
  if (cuda_time) out += ",cuda_total_us,self_cuda_us,cuda_avg_us";
  if (cpu_mem) out += ",cpu_memory_bytes,self_cpu_memory_bytes";
  if (cuda_mem) out += ",cuda_memory_bytes,self_cuda_memory_bytes";
  if (flops) out += ",flops";
  out += "\n";
  for (const auto& r : averages.rows) {
    out += quoted(r.key);
    if (shapes) out += "," + quoted(r.input_shapes);
    out += "," + std::to_string(r.count) + "," + us_text(r.cpu_time_total_ns) + "," + us_text(r.self_cpu_time_total_ns) +
           "," + avg_us(r.cpu_time_total_ns, r.count);
    if (cuda_time)
      out += "," + us_text(r.cuda_time_total_ns) + "," + us_text(r.self_cuda_time_total_ns) + "," +
             avg_us(r.cuda_time_total_ns, r.count);
    if (cpu_mem) out += "," + std::to_string(r.cpu_memory_usage) + "," + std::to_string(r.self_cpu_memory_usage);
    if (cuda_mem) out += "," + std::to_string(r.cuda_memory_usage) + "," + std::to_string(r.self_cuda_memory_usage);
    if (flops) out += "," + std::to_string(r.flops);
    out += "\n";
  }
  return out;
}

proftrace::event_averages summarize(const std::filesystem::path& path, bool group_by_input_shape,
                                    std::vector<std::string>& warnings, bool progress, trace_info* info,
                                    const aggregator::self_time_sink& self_times) {
  aggregator agg(group_by_input_shape);
  agg.on_self_time(self_times);
  const read_result r = aggregate(path, agg, warnings, progress);
  auto out = agg.finish();
  trace_info t;
  for (const auto& m : r.metadata) {
    const bool on = (m.type == json_type::number || m.type == json_type::string) && m.value == "1";
    if (m.key == "with_flops" && on) t.with_flops = true;
    if (m.key == "profile_memory" && on) t.profile_memory = true;
    take_loss_counter(m, out.losses);
  }
  t.memory_events = agg.saw_memory();
  t.profile_memory = t.profile_memory || t.memory_events;
  t.python_events = agg.saw_python();
  t.threads_out_of_order = agg.threads_out_of_order();
  out.profile_memory = t.profile_memory;
  if (info) *info = t;
  return out;
}

proftrace::event_averages summarize_stacks(const std::filesystem::path& path, std::vector<std::string>& warnings,
                                           bool progress) {
  aggregator agg;
  agg.collect_stacks(true);
  aggregate(path, agg, warnings, progress);
  agg.finish();
  return agg.stacks();
}

}  // namespace proftrace::tools
