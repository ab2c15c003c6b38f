// Aggregation (summary, diff) and layout checks (validate) over the
// streaming reader.
#include <algorithm>
#include <numeric>
#include <set>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string_view>
#include <limits>

#include "spool/sorted_runs.hpp"
#include "trace_reader.hpp"
#include "formats/perfetto/perfetto_reader.hpp"

namespace proftrace::tools {

namespace {

std::string type_problem(const char* field, json_type got, const char* want) {
  return std::string("\"") + field + "\" is " + to_string(got) + ", not " + want;
}

// Times are kept within +-4e18 ns (the year 2096 in Unix time), so that an
// end (start + duration) always fits; totals saturate instead of wrapping.
// A trace holding 1e300 still summarises, to numbers that say "huge".
constexpr double max_abs_ns = 4e18;
std::int64_t to_ns(double us) {
  const double ns = us * 1000.0;
  if (ns != ns) return 0;
  return static_cast<std::int64_t>(std::llround(std::clamp(ns, -max_abs_ns, max_abs_ns)));
}

void add_saturating(std::int64_t& to, std::int64_t v) {
  if (__builtin_add_overflow(to, v, &to)) to = v > 0 ? INT64_MAX : INT64_MIN;
}

}  // namespace

std::string format_time_signed(double us) {
  char buf[64];
  const double a = std::fabs(us);
  const char* sign = us < 0 ? "-" : "";
  if (a >= 1e6) std::snprintf(buf, sizeof buf, "%s%.3fs", sign, a / 1e6);
  else if (a >= 1e3) std::snprintf(buf, sizeof buf, "%s%.3fms", sign, a / 1e3);
  else std::snprintf(buf, sizeof buf, "%s%.3fus", sign, a);
  return buf;
}

bool is_host_op(const trace_event& e) noexcept {
  using namespace std::string_view_literals;  // compared as views: lengths first, no strlen
  const std::string_view cat = e.cat;
  if (e.ph != "X"sv || e.has_stream) return false;
  // "proftrace": a producer's wait for room in its full ring, a row of its
  // own and out of its scope's self time, as in the session's table;
  // "openmp": the OMPT collector's regions, loops and waits, as there too.
  return cat == "cpu_op"sv || cat == "user_annotation"sv || cat == "cuda_runtime"sv || cat == "cuda_driver"sv ||
         cat == "proftrace"sv || cat == "openmp"sv;
}

struct aggregator::event_runs {
  using less = bool (*)(const record&, const record&) noexcept;
  proftrace::detail::sorted_runs<record, less> runs;
};

aggregator::aggregator(bool group_by_input_shape, std::size_t max_pending_per_thread, std::size_t max_buffered_events)
    : by_shape_(group_by_input_shape),
      max_pending_(std::max<std::size_t>(max_pending_per_thread, 2)),
      runs_(std::make_unique<event_runs>(event_runs{{before, {.max_items = std::max<std::size_t>(max_buffered_events, 1)}}})) {
  // A thread listed in end order: among identical intervals the one listed
  // last encloses (see buffer()), decided from what was seen by then.
  runs_->runs.before_sort([this](record& r) {
    if (seen_[r.thread].evidence == order::by_end && r.tie >= 0) r.tie = -r.tie - 1;
  });
}

aggregator::~aggregator() = default;

std::size_t aggregator::spilled_runs() const noexcept { return runs_->runs.spilled_runs(); }

std::size_t aggregator::row_for(const trace_event& e) {
  const bool step = e.name.rfind("ProfilerStep#", 0) == 0;
  if (step) {
    std::int64_t n = 0;
    const char* digits = e.name.data() + 13;
    const auto [end, err] = std::from_chars(digits, e.name.data() + e.name.size(), n);
    if (err == std::errc{} && end == e.name.data() + e.name.size() && n >= 0) {
      first_step_ = std::min(first_step_, n);
      last_step_ = std::max(last_step_, n);
    }
  }
  std::string key = step ? std::string("ProfilerStep*") : e.name;
  const bool shaped = by_shape_ && !step && e.has_input_dims;
  std::string index_key = key;
  if (shaped) {
    index_key += '\x1f';
    index_key += e.input_dims;
  }
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
        add_saturating(v, ns);
        return;
      }
  } else {
    if (!to.index) {
      to.index = std::make_unique<std::unordered_map<std::string, std::size_t>>();
      for (std::size_t i = 0; i < to.below.size(); ++i) to.index->emplace(to.below[i].first, i);
    }
    if (const auto it = to.index->find(path); it != to.index->end()) {
      add_saturating(to.below[it->second].second, ns);
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
    add_saturating(it->second, ns);
  };
  const std::int64_t dur = x.end - x.start;
  add(own, dur > x.child_ns ? dur - x.child_ns : 0);
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
  for (int d = 0; d < 2; ++d) add_saturating(parent.mem_self[d], child.mem_total[d] == INT64_MIN ? INT64_MAX : -child.mem_total[d]);
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
  const std::int64_t dur = x.end - x.start;
  r.count += 1;
  const std::int64_t self = dur > x.child_ns ? dur - x.child_ns : 0;
  add_saturating(r.cpu_time_total_ns, dur);
  add_saturating(r.self_cpu_time_total_ns, self);
  if (self_time_sink_) self_time_sink_(r, x.row, self);
  add_saturating(r.flops, x.flops);
  add_saturating(r.cpu_memory_usage, x.mem_total[0]);
  add_saturating(r.self_cpu_memory_usage, x.mem_self[0]);
  add_saturating(r.cuda_memory_usage, x.mem_total[1]);
  add_saturating(r.self_cuda_memory_usage, x.mem_self[1]);
}

std::string event_problem(const trace_event& e) {
  // Made only for a problem: this runs for every event.
  const auto where = [&] { return "event " + std::to_string(e.index); };
  if (e.type != json_type::object) return where() + " is " + to_string(e.type) + ", not an object";
  if (e.ph_type == json_type::absent) return where() + " has no \"ph\"";
  if (e.ph_type != json_type::string) return where() + ": " + type_problem("ph", e.ph_type, "a string");
  if (e.ph != "X") return {};
  if (e.name_type != json_type::string)
    return where() + (e.name_type == json_type::absent ? " has no \"name\"" : ": " + type_problem("name", e.name_type, "a string"));
  if (e.ts_type != json_type::number)
    return where() + (e.ts_type == json_type::absent ? " has no \"ts\"" : ": " + type_problem("ts", e.ts_type, "a number"));
  if (e.dur_type != json_type::number)
    return where() + (e.dur_type == json_type::absent ? " has no \"dur\"" : ": " + type_problem("dur", e.dur_type, "a number"));
  return {};
}

void require_trace_layout(const std::filesystem::path& path, const read_result& r) {
  if (!r.top_level_object) throw trace_error(path.string() + ": the top-level value is not an object");
  if (!r.has_trace_events) throw trace_error(path.string() + ": no \"traceEvents\" key");
  if (!r.trace_events_is_array) throw trace_error(path.string() + ": \"traceEvents\" is not an array");
}

read_result read_readable_trace(const std::filesystem::path& path) {
  std::string error;
  read_options opts;
  opts.on_event = [&](const trace_event& e) {
    error = event_problem(e);
    return error.empty();
  };
  const read_result r = read_trace(path, opts);
  if (!error.empty()) throw trace_error(path.string() + ": " + error);
  require_trace_layout(path, r);
  return r;
}

std::string incompleteness(const read_result& r) {
  const metadata_entry* reason = nullptr;
  std::optional<std::int64_t> missing;
  std::string unit = "events";
  for (const metadata_entry& m : r.metadata) {
    if (m.key == "proftrace.incomplete") reason = &m;
    if (m.key == "proftrace.events_not_written" || m.key == "proftrace.packets_not_written") {
      missing = integer_value(m, 0, INT64_MAX);
      if (m.key == "proftrace.packets_not_written") unit = "packets";
    }
  }
  if (reason == nullptr) return {};
  const std::string why = reason->type == json_type::string ? reason->value : "(no reason given)";
  const std::string how_much = missing ? std::to_string(*missing) + " " + unit + " the session recorded are not in it"
                                       : "how much is missing was not recorded";
  return "incomplete trace: " + how_much + " (it holds the " + std::to_string(r.events) +
         " events written before the trace file failed: " + why + ")";
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

void aggregator::place(interval E, thread_state& T, const std::string& thread) {
  const std::int64_t dur = E.end - E.start;

  // (a) Intervals that arrived before E and lie inside it: E's children,
  // written before their parent (proftrace writes a thread's events as they
  // end). Only the ones not already counted under a parent are direct.
  // A memory event (zero length) claims nothing.
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
      add_saturating(E.child_ns, X.end - X.start);
      claim_memory(E, X);
    } else if (T.stack.size() >= 2) {
      claim_memory(T.stack[T.stack.size() - 2], X);  // its parent lies right below it
    }
    claimed = true;
    if (stacks_on_ && !X.memory && !X.python && E.stacks) {
      // X and what hangs below it now hang below E.
      const std::string& name = rows_[X.row].key;
      const std::int64_t xdur = X.end - X.start;
      add_weight(*E.stacks, name, xdur > X.child_ns ? xdur - X.child_ns : 0);
      for (const auto& [p, v] : X.stacks->below) add_weight(*E.stacks, name + '\x1f' + p, v);
    }
    finalize(X, true);
    T.stack.pop_back();
  }
  if (claimed && T.evicted_end != INT64_MIN && E.start < T.evicted_end && !T.warned) {
    T.warned = true;
    warnings_.push_back("thread " + thread + ": more than " + std::to_string(max_pending_) +
                        " events waited for an enclosing event; self times of enclosing events may be overstated");
  }
  // (b) Intervals that ended before E starts: done, unless (events written
  // in end order) an enclosing event may still claim them.
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
  // (c) An open interval that contains E: E's parent (PyTorch lists a
  // thread's events in start order).
  if (!T.stack.empty()) {
    interval& X = T.stack.back();
    if (X.start <= E.start && E.end <= X.end) {
      add_saturating(X.child_ns, dur);
      E.nested = true;
      if (T.mode == order::unknown && !E.memory && !(X.start == E.start && X.end == E.end)) T.mode = order::by_start;
    }
  }
  if (stacks_on_ && E.stacks) {
    // E's enclosing names: those of its nearest enclosing frame (the chain
    // above E is its ancestors: events are nested in start order), plus that
    // frame's own name. Python frames carry none and are passed over, a
    // memory event passes its parent's names on unchanged (neither is a
    // frame of the stack). Taken from that one interval, never by a walk over
    // every pending interval: that walk made `stacks` quadratic in a
    // thread's top-level events.
    if (E.nested) {
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
  }
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
      rows_.back().key = "[memory]";
      rows_.back().top_level = true;
      row_finalized_.push_back(true);
      row_first_start_.push_back(memory_[i].ts);
      row_first_end_.push_back(memory_[i].ts);
    }
    proftrace::event_average& r = rows_[row];
    r.count += 1;
    const bool same_process = i && memory_[i - 1].process == memory_[i].process;  // prefix sums restart per process
    const std::int64_t host = memory_[i].bytes[0] - (same_process ? memory_[i - 1].bytes[0] : 0);
    const std::int64_t device = memory_[i].bytes[1] - (same_process ? memory_[i - 1].bytes[1] : 0);
    add_saturating(r.cpu_memory_usage, host);
    add_saturating(r.self_cpu_memory_usage, host);
    add_saturating(r.cuda_memory_usage, device);
    add_saturating(r.self_cuda_memory_usage, device);
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
      for (int d = 0; d < 2; ++d) add_saturating(memory_[i].bytes[d], memory_[i - 1].bytes[d]);
    else process_memory_[memory_[i].process].first = i;
    process_memory_[memory_[i].process].second = i + 1;
  }
  memory_cover_.assign(memory_.size() + 1, 0);
}

proftrace::event_averages aggregator::finish() {
  sum_memory_by_process();
  for (const auto& S : seen_) threads_out_of_order_ += S.out_of_order ? 1 : 0;
  // The buffered events, sorted, merged with the spilled runs.
  runs_->runs.merge([this](const record& r, std::string_view) { replay(r); });
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

namespace {

// Where a truncated trace ends ("the <what> ends at byte N inside
// traceEvents"): a Perfetto trace names the packet instead.
std::string where_cut(const read_result& r, std::string_view what) {
  if (!r.cut_inside_packet.empty()) return r.cut_inside_packet;
  return "the " + std::string(what) + " ends at byte " + std::to_string(r.bytes) + " inside \"traceEvents\"";
}

// Reads `path` through `agg`; the caller takes the results from it.
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

}  // namespace

namespace {

std::string steps_text(std::int64_t first, std::int64_t last) {
  if (first < 0) return {};
  return first == last ? "step " + std::to_string(first) : "steps " + std::to_string(first) + "-" + std::to_string(last);
}

}  // namespace

std::string rank_summary::steps() const { return steps_text(first_step, last_step); }

namespace {
// proftrace's loss counters ("proftrace": {...}) give the table its "Lost
// events" line, as the session's does.
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
}  // namespace

namespace {

// The ranks a cycle's world_size names that left no trace: a view across
// ranks that silently lacked one would lie.
void warn_missing_ranks(const std::vector<rank_summary>& traces, std::size_t cycle, const std::string& label,
                        std::vector<std::string>& warnings) {
  std::set<int> present;
  int world = -1;
  for (const rank_summary& t : traces)
    if (t.cycle == cycle && t.rank >= 0) present.insert(t.rank), world = std::max(world, t.world_size);
  if (present.empty() || world <= 0) return;
  std::string missing;
  int count = 0;
  for (int r = 0; r < world; ++r)
    if (!present.contains(r) && ++count <= 16) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
  if (count == 0) return;
  if (count > 16) missing += ", ...";
  warnings.push_back("no trace of rank" + std::string(count == 1 ? " " : "s ") + missing + " of world_size " +
                     std::to_string(world) + (label.empty() ? "" : " (" + label + ")") + ": the view across ranks shows " +
                     std::to_string(present.size()) + " of " + std::to_string(world));
}

}  // namespace

ranks_summary summarize_ranks(const std::filesystem::path& dir, bool group_by_input_shape,
                              std::vector<std::string>& warnings) {
  ranks_summary out;
  const auto files = list_traces(dir, out.skipped);
  if (files.empty()) {
    std::string why = dir.string() + ": no Kineto trace in the directory";
    if (!out.skipped.empty())
      why += " (" + std::to_string(out.skipped.size()) + (out.skipped.size() == 1 ? " file" : " files") +
             " skipped, e.g. " + out.skipped.front().file.filename().string() + ": " + out.skipped.front().reason + ")";
    throw trace_error(why);
  }
  for (const auto& file : files) {
    rank_summary s;
    s.file = file;
    aggregator agg(group_by_input_shape);
    bool profile_memory = false;
    proftrace::loss_counts losses;
    for (const auto& m : aggregate(file, agg, warnings, false).metadata) {
      take_loss_counter(m, losses);
      if (m.key == "profile_memory" && m.value == "1") profile_memory = true;
      if (m.key == "distributedInfo.host" && m.type == json_type::string) s.host = m.value;
      if (m.key == "distributedInfo.world_size")
        if (const auto world = integer_value(m, 1, INT_MAX)) s.world_size = static_cast<int>(*world);
      if (m.key == "distributedInfo.rank") {
        if (const auto rank = integer_value(m, 0, INT_MAX)) s.rank = static_cast<int>(*rank);
        else warnings.push_back(file.string() + ": \"distributedInfo.rank\" is " + m.value +
                                ", not a rank; the trace is summarised as one without a rank");
      }
      if (m.key == "baseTimeNanoseconds") {
        if (const auto base = integer_value(m, INT64_MIN, INT64_MAX)) s.base_ns = *base;
        else warnings.push_back(file.string() + ": \"baseTimeNanoseconds\" is " + m.value +
                                ", not an integer of nanoseconds; taken as 0");
      }
    }
    s.averages = agg.finish();
    s.averages.losses = losses;
    s.averages.profile_memory = profile_memory || agg.saw_memory();
    s.first_step = agg.first_step();
    s.last_step = agg.last_step();
    if (__builtin_add_overflow(s.base_ns, agg.first_ts_ns(), &s.start_ns))  // a crafted base: order it last or first
      s.start_ns = s.base_ns > 0 ? INT64_MAX : INT64_MIN;
    out.traces.push_back(std::move(s));
  }
  // Cycles: traces with steps by their first step; a rank's traces without
  // steps by their order in time (the k-th such trace of every rank together).
  std::map<int, std::vector<std::size_t>> stepless_by_rank;
  for (std::size_t i = 0; i < out.traces.size(); ++i)
    if (out.traces[i].first_step < 0) stepless_by_rank[out.traces[i].rank].push_back(i);
  // Key: (0, first step) or (1, ordinal); a trace without a rank is its own rank.
  std::map<std::pair<int, std::int64_t>, std::vector<std::size_t>> cycles;
  for (std::size_t i = 0; i < out.traces.size(); ++i)
    if (out.traces[i].first_step >= 0) cycles[{0, out.traces[i].first_step}].push_back(i);
  for (auto& [rank, idx] : stepless_by_rank) {
    if (rank < 0) {
      for (auto i : idx) cycles[{1, 0}].push_back(i);
      continue;
    }
    std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
      // Every proftrace and Kineto trace shares one base: order by first event.
      return out.traces[a].start_ns != out.traces[b].start_ns ? out.traces[a].start_ns < out.traces[b].start_ns
                                                              : out.traces[a].file < out.traces[b].file;
    });
    for (std::size_t k = 0; k < idx.size(); ++k) cycles[{1, static_cast<std::int64_t>(k)}].push_back(idx[k]);
  }
  const bool several_stepless = cycles.count({1, 1}) != 0;
  std::vector<rank_summary> ordered;
  for (auto& [key, idx] : cycles) {
    cycle_summary c;
    for (auto i : idx) {
      const auto& t = out.traces[i];
      if (t.first_step >= 0) {
        c.first_step = c.first_step < 0 ? t.first_step : std::min(c.first_step, t.first_step);
        c.last_step = std::max(c.last_step, t.last_step);
      }
    }
    c.label = key.first == 0 ? steps_text(c.first_step, c.last_step)
              : several_stepless ? "trace " + std::to_string(key.second + 1)
                                 : std::string();
    std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
      const auto &x = out.traces[a], &y = out.traces[b];
      if ((x.rank >= 0) != (y.rank >= 0)) return x.rank >= 0;
      return x.rank != y.rank ? x.rank < y.rank : x.file < y.file;
    });
    const std::size_t cycle = out.cycles.size();
    int previous_rank = -1;
    std::string first_file;
    for (auto i : idx) {
      rank_summary t = std::move(out.traces[i]);
      t.cycle = cycle;
      if (t.rank < 0) c.all_ranked = false;
      if (t.rank >= 0 && t.rank == previous_rank) {
        t.duplicate = true;
        warnings.push_back(t.file.string() + ": a second trace of rank " + std::to_string(t.rank) +
                           (c.label.empty() ? "" : ", " + c.label) + " (after " + first_file +
                           "): its table is shown, the view across ranks uses the first");
      } else {
        ++c.entities;
        first_file = t.file.filename().string();
      }
      previous_rank = t.rank;
      ordered.push_back(std::move(t));
    }
    warn_missing_ranks(ordered, cycle, c.label, warnings);
    out.cycles.push_back(std::move(c));
  }
  out.traces = std::move(ordered);
  return out;
}

std::string cross_rank_table(const ranks_summary& ranks, std::size_t cycle, int row_limit) {
  struct key_stats {
    std::vector<std::pair<std::int64_t, std::size_t>> self;  // (self CPU ns, index into ranks.traces)
  };
  std::map<std::string, key_stats> keys;
  for (std::size_t i = 0; i < ranks.traces.size(); ++i) {
    const auto& t = ranks.traces[i];
    if (t.cycle != cycle || t.duplicate) continue;
    for (const auto& row : t.averages.rows) keys[row.key].self.emplace_back(row.self_cpu_time_total_ns, i);
  }
  const std::size_t total = cycle < ranks.cycles.size() ? ranks.cycles[cycle].entities : 0;
  struct line {
    std::string key;
    std::size_t present;
    std::int64_t min, median, max;
    std::size_t slowest;
  };
  std::vector<line> lines;
  for (auto& [key, st] : keys) {
    std::sort(st.self.begin(), st.self.end());
    const std::size_t n = st.self.size();  // an even count's median: the mean of the middle two
    const std::int64_t median = n % 2 ? st.self[n / 2].first : std::midpoint(st.self[n / 2 - 1].first, st.self[n / 2].first);
    lines.push_back({key, n, st.self.front().first, median, st.self.back().first, st.self.back().second});
  }
  std::stable_sort(lines.begin(), lines.end(),
                   [](const line& a, const line& b) { return a.max - a.min > b.max - b.min; });
  const auto who = [&](std::size_t i) {
    return ranks.traces[i].rank >= 0 ? "rank " + std::to_string(ranks.traces[i].rank)
                                     : ranks.traces[i].file.filename().string();
  };
  std::size_t name_width = 4;
  for (const auto& l : lines) name_width = std::max(name_width, std::min<std::size_t>(l.key.size(), 55));
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-*s  %7s  %14s  %14s  %14s  %s\n", static_cast<int>(name_width), "Name", "Ranks",
                "Self CPU min us", "median us", "max us", "Slowest");
  out += buf;
  int n = 0;
  for (const auto& l : lines) {
    if (row_limit >= 0 && n++ >= row_limit) break;
    const std::string name = l.key.size() > 55 ? l.key.substr(0, 52) + "..." : l.key;
    const std::string present = std::to_string(l.present) + "/" + std::to_string(total);
    std::snprintf(buf, sizeof buf, "%-*s  %7s  %14s  %14s  %14s  %s\n", static_cast<int>(name_width), name.c_str(),
                  present.c_str(), us_text(l.min).c_str(), us_text(l.median).c_str(), us_text(l.max).c_str(),
                  l.max > l.min ? who(l.slowest).c_str() : "-");
    out += buf;
  }
  return out;
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

std::uint64_t validate(const std::filesystem::path& path, const std::function<void(const problem&)>& on_problem,
                       read_result* result) {
  std::uint64_t n = 0;
  const auto report = [&](std::int64_t index, std::string message) {
    ++n;
    on_problem(problem{index, std::move(message)});
  };
  std::uint64_t seen = 0;
  read_options opts;
  opts.on_event = [&](const trace_event& e) {
    ++seen;
    const auto i = static_cast<std::int64_t>(e.index);
    if (e.type != json_type::object) {
      report(i, std::string("is ") + to_string(e.type) + ", not an object");
      return true;
    }
    if (e.ph_type == json_type::absent) report(i, "has no \"ph\"");
    else if (e.ph_type != json_type::string) report(i, type_problem("ph", e.ph_type, "a string"));
    if (e.name_type == json_type::absent) report(i, "has no \"name\" (TensorBoard needs one on every event)");
    else if (e.name_type != json_type::string) report(i, type_problem("name", e.name_type, "a string"));
    const bool complete = e.ph_type == json_type::string && e.ph == "X";
    if (complete) {
      if (e.cat_type == json_type::absent) report(i, "is a complete event (\"X\") without \"cat\"");
      else if (e.cat_type != json_type::string) report(i, type_problem("cat", e.cat_type, "a string"));
      if (e.ts_type == json_type::absent) report(i, "is a complete event (\"X\") without \"ts\"");
      if (e.dur_type == json_type::absent) report(i, "is a complete event (\"X\") without \"dur\"");
    }
    if (e.ts_type != json_type::absent && e.ts_type != json_type::number) report(i, type_problem("ts", e.ts_type, "a number"));
    if (e.dur_type != json_type::absent && e.dur_type != json_type::number) report(i, type_problem("dur", e.dur_type, "a number"));
    if (e.ts_type == json_type::number && e.ts < 0) report(i, "\"ts\" is negative (" + format_time_signed(e.ts) + ")");
    if (e.dur_type == json_type::number && e.dur < 0) report(i, "\"dur\" is negative (" + format_time_signed(e.dur) + ")");
    return true;
  };
  read_result r;
  try {
    r = read_trace(path, opts);
  } catch (const trace_error& e) {
    r.events = seen;
    report(-1, e.reason(path));
    if (result) *result = r;
    return n;
  }
  if (!r.top_level_object) report(-1, "the top-level value is not an object");
  else if (!r.has_trace_events) report(-1, "no \"traceEvents\" key");
  else if (!r.trace_events_is_array) report(-1, "\"traceEvents\" is not an array");
  if (r.truncated)
    report(-1, where_cut(r, "file") + " (truncated after " + std::to_string(r.events) + " events)");
  if (const std::string note = incompleteness(r); !note.empty()) report(-1, note);
  if (result) *result = r;
  return n;
}

double diff_row::self_change_pct() const noexcept {
  if (self_a_ns == 0) return self_b_ns > 0 ? std::numeric_limits<double>::infinity() : 0.0;
  return static_cast<double>(self_b_ns - self_a_ns) * 100.0 / static_cast<double>(self_a_ns);
}

std::string diff_key(const proftrace::event_average& r) {
  return r.input_shapes.empty() ? r.key : r.key + " " + r.input_shapes;
}

std::vector<diff_row> diff(const proftrace::event_averages& a, const proftrace::event_averages& b) {
  std::vector<diff_row> rows;
  std::unordered_map<std::string, std::size_t> index;
  const auto key_of = diff_key;
  const auto row = [&](const proftrace::event_average& r) -> diff_row& {
    auto [it, fresh] = index.try_emplace(key_of(r), rows.size());
    if (fresh) rows.push_back(diff_row{.key = key_of(r)});
    return rows[it->second];
  };
  // One side's rows into its columns of the diff.
  using count_field = std::int64_t diff_row::*;
  const auto add_side = [&](const proftrace::event_averages& side, bool diff_row::*in, count_field count, count_field self,
                            count_field total) {
    for (const auto& r : side.rows) {
      auto& d = row(r);
      d.*in = true;
      add_saturating(d.*count, r.count);
      add_saturating(d.*self, r.self_cpu_time_total_ns);
      add_saturating(d.*total, r.cpu_time_total_ns);
    }
  };
  add_side(a, &diff_row::in_a, &diff_row::count_a, &diff_row::self_a_ns, &diff_row::total_a_ns);
  add_side(b, &diff_row::in_b, &diff_row::count_b, &diff_row::self_b_ns, &diff_row::total_b_ns);
  std::stable_sort(rows.begin(), rows.end(), [](const diff_row& x, const diff_row& y) {
    const auto ax = std::llabs(x.self_change_ns()), ay = std::llabs(y.self_change_ns());
    if (ax != ay) return ax > ay;
    return x.key < y.key;
  });
  return rows;
}

}  // namespace proftrace::tools
