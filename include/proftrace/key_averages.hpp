// proftrace/key_averages.hpp — per-name statistics and torch's summary table.
//
//   proftrace::profile p;
//   p.start(); run(); p.stop();
//   std::cout << p.key_averages().table({.sort_by = "self_cpu_time_total", .row_limit = 10});
//
//   for (const proftrace::event_average& row : p.key_averages()) use(row.key, row.count);
//
// The flusher keeps these aggregates as it pairs events, so they cost no
// second pass over the trace. Times are nanoseconds internally and printed
// in torch's units (us / ms / s). A report with nothing behind it (no trace
// finished, a disabled profiler, a build with PROFTRACE_ENABLED=0) is empty
// and says why in `note`, which the table prints under itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"

namespace proftrace {

// A counter's deltas summed over a row's scopes (profile_options::counters):
// over each scope (total) and over each scope less its counted children (self).
struct counter_total {
  std::string name;  // perf list's: "task-clock" (ns), "page-faults", ...
  std::int64_t total = 0;
  std::int64_t self = 0;
};

struct event_average {
  std::string key;           // the scope's name; every ProfilerStep#N is "ProfilerStep*"
  std::string input_shapes;  // "[[64, 128], [128, 256]]" when grouped by input shape
  // Enclosing scopes, innermost first, as "file(line): name" (with_stack);
  // kept to the first n frames when grouped by stack.
  std::vector<std::string> stack;
  bool top_level = false;    // its first occurrence had no enclosing scope
  std::int64_t count = 0;
  std::int64_t cpu_time_total_ns = 0;
  std::int64_t self_cpu_time_total_ns = 0;
  // Filled by the device, memory and FLOP collectors; zero without them (the
  // table then leaves their columns out, as torch's does).
  std::int64_t cuda_time_total_ns = 0;
  std::int64_t self_cuda_time_total_ns = 0;
  std::int64_t cpu_memory_usage = 0;  // bytes
  std::int64_t self_cpu_memory_usage = 0;
  std::int64_t cuda_memory_usage = 0;
  std::int64_t self_cuda_memory_usage = 0;
  std::int64_t flops = 0;
  std::vector<counter_total> counters;  // in the order the session named them; empty without counters

  // The counter of that name, or nullptr.
  const counter_total* counter(std::string_view name) const noexcept {
    for (const counter_total& c : counters)
      if (c.name == name) return &c;
    return nullptr;
  }
  counter_total& counter_named(std::string_view name) {
    for (counter_total& c : counters)
      if (c.name == name) return c;
    return counters.emplace_back(counter_total{std::string(name), 0, 0});
  }
  double cpu_time_total_us() const noexcept { return static_cast<double>(cpu_time_total_ns) / 1e3; }
  double self_cpu_time_total_us() const noexcept { return static_cast<double>(self_cpu_time_total_ns) / 1e3; }
  double cpu_time_avg_us() const noexcept { return count ? cpu_time_total_us() / static_cast<double>(count) : 0.0; }
  double cuda_time_total_us() const noexcept { return static_cast<double>(cuda_time_total_ns) / 1e3; }
  double self_cuda_time_total_us() const noexcept { return static_cast<double>(self_cuda_time_total_ns) / 1e3; }
  double cuda_time_avg_us() const noexcept { return count ? cuda_time_total_us() / static_cast<double>(count) : 0.0; }
  // Adds another row's figures (same key) to this one.
  void merge(const event_average& o) noexcept {
    count += o.count;
    cpu_time_total_ns += o.cpu_time_total_ns;
    self_cpu_time_total_ns += o.self_cpu_time_total_ns;
    cuda_time_total_ns += o.cuda_time_total_ns;
    self_cuda_time_total_ns += o.self_cuda_time_total_ns;
    cpu_memory_usage += o.cpu_memory_usage;
    self_cpu_memory_usage += o.self_cpu_memory_usage;
    cuda_memory_usage += o.cuda_memory_usage;
    self_cuda_memory_usage += o.self_cuda_memory_usage;
    flops = o.flops > INT64_MAX - flops ? INT64_MAX : flops + o.flops;  // counts are >= 0: saturates
    for (const counter_total& c : o.counters) {
      counter_total& mine = counter_named(c.name);
      mine.total += c.total;
      mine.self += c.self;
    }
  }
};

struct table_options {
  // One of torch's keys: cpu_time, cuda_time, cpu_time_total,
  // cuda_time_total, self_cpu_time_total, self_cuda_time_total,
  // cpu_memory_usage, cuda_memory_usage, self_cpu_memory_usage,
  // self_cuda_memory_usage, count, flops. Empty: the order of each key's
  // first start, as torch lists keys. Sorted descending; ties keep that order.
  std::string sort_by{};
  int row_limit = 100;  // -1: every row
  int max_name_column_width = 55;
  int max_shapes_column_width = 80;
  int max_src_column_width = 75;
  std::string header{};  // printed above the table under a line of '='
  bool top_level_events_only = false;
};

// How collapsed_stacks() writes a frame's name: as torch's export_stacks
// does (spaces, ';', tabs and newlines as '_'), or as it is, with only what
// the collapsed format cannot hold replaced (';' by ':', a line break by a
// space), so that the frames are the table's names (`proftrace stacks`).
enum class frame_names : std::uint8_t { torch, as_is };

// One complete event of a finished trace, kept only when the session asked
// for it (profile_options::retain_events); the aggregates never need them.
struct function_event {
  std::string name;
  std::string input_shapes;
  std::int64_t thread = 0;
  std::int64_t start_unix_ns = 0;
  std::int64_t duration_ns = 0;
  std::int64_t self_duration_ns = 0;
  std::uint64_t external_id = 0;
  int depth = 0;  // 0: no enclosing scope on its thread
  std::uint64_t parent_external_id = 0;  // the enclosing scope's External id (0: none)
  std::string category;      // "user_annotation", "cpu_op" or "async"
  std::int64_t flops = 0;    // FLOP estimates recorded while it was the innermost scope
  std::int64_t bytes = -1;   // a communication call's bytes (-1: none)
  // An async range (proftrace::async_range): it may end on another thread
  // (end_thread); its time counts in CPU total only, never as self time.
  bool is_async = false;
  std::int64_t end_thread = 0;
};

// What a trace lost, reported under the table and in the trace metadata.
struct loss_counts {
  std::uint64_t dropped = 0;      // full ring under `drop` (or `block` without a flusher)
  std::uint64_t overwritten = 0;  // overwritten unread under `drop_oldest`
  std::uint64_t unattached = 0;   // no ring for the thread (exiting, out of memory)
  std::uint64_t late = 0;         // reached the flusher after its trace was closed
  std::uint64_t unpaired = 0;     // a begin whose end was lost, or the reverse
  std::uint64_t total() const noexcept { return dropped + overwritten + unattached + late + unpaired; }
};

// With PROFTRACE_ENABLED=0 the reports are inline and reference no library
// symbol; a distinct namespace keeps such a translation unit's class apart
// from the library's.
#if !PROFTRACE_ENABLED
inline namespace compiled_out {
#endif

class event_averages {
 public:
  std::vector<event_average> rows;
  loss_counts losses;
  // Events written that are not rows: PROF_INSTANT and PROF_COUNTER marks.
  std::uint64_t instant_events = 0;
  std::uint64_t counter_events = 0;
  bool grouped_by_input_shape = false;
  bool profile_memory = false;  // recorded with profile_memory: the table shows CPU Mem columns, as torch's
  // Why the report is empty or partial ("no trace finished: ..."); empty
  // for a whole trace.
  std::string note;

  // torch's EventList: iterable and indexable like `rows`.
  auto begin() const noexcept { return rows.begin(); }
  auto end() const noexcept { return rows.end(); }
  auto begin() noexcept { return rows.begin(); }
  auto end() noexcept { return rows.end(); }
  std::size_t size() const noexcept { return rows.size(); }
  bool empty() const noexcept { return rows.empty(); }
  const event_average& operator[](std::size_t i) const { return rows[i]; }
  event_average& operator[](std::size_t i) { return rows[i]; }

  double self_cpu_time_total() const noexcept { return static_cast<double>(self_cpu_time_total_ns()) / 1e3; }  // us

  // The quantities beyond CPU time and calls that every report of these
  // rows shows (table(), csv(), `proftrace csv --numbers`): CPU memory for
  // a trace recorded with profile_memory, each other one when a row has it.
  struct quantities {
    bool cuda_time = false, cpu_memory = false, cuda_memory = false, flops = false;
  };
  quantities shown_quantities() const noexcept {
    quantities q;
    q.cpu_memory = profile_memory;
    for (const auto& r : rows) {
      q.cuda_time = q.cuda_time || r.cuda_time_total_ns != 0 || r.self_cuda_time_total_ns != 0;
      q.cpu_memory = q.cpu_memory || r.cpu_memory_usage != 0 || r.self_cpu_memory_usage != 0;
      q.cuda_memory = q.cuda_memory || r.cuda_memory_usage != 0 || r.self_cuda_memory_usage != 0;
      q.flops = q.flops || r.flops > 0;
    }
    return q;
  }
#if PROFTRACE_ENABLED
  // torch's key_averages().table(): throws std::invalid_argument, naming the
  // valid keys, for an unknown sort key. The note, if any, is its last line.
  std::string table(const table_options& options = {}) const;
  // The rows as CSV (torch_geometric's save_profile_data columns, values
  // formatted as in the table), a header line first; the table's columns,
  // in its order, named in capitals (CPU MEM, ..., TOTAL MFLOPS).
  std::string csv() const;
  // Collapsed stacks for flamegraph.pl and speedscope: one line per distinct
  // stack with a positive metric, frames outermost first joined by ';' with
  // the row's name last, a space, then the integer microseconds of `metric`
  // (self_cpu_time_total or self_cuda_time_total; std::invalid_argument
  // otherwise). Frames are named as `names` says (torch's: spaces, ';',
  // tabs and newlines inside a frame become '_').
  std::string collapsed_stacks(std::string_view metric = "self_cpu_time_total",
                               frame_names names = frame_names::torch) const;
  // All rows summed into one, keyed "Total".
  event_average total_average() const;
  std::int64_t self_cpu_time_total_ns() const noexcept;
  std::int64_t self_cuda_time_total_ns() const noexcept;
#else
  // Compiled out: nothing was recorded, so every report is empty; the
  // table is its note.
  std::string table(const table_options& = {}) const { return note.empty() ? std::string() : "Note: " + note + "\n"; }
  std::string csv() const { return {}; }
  std::string collapsed_stacks(std::string_view = "self_cpu_time_total", frame_names = frame_names::torch) const {
    return {};
  }
  event_average total_average() const {
    event_average total;
    total.key = "Total";
    return total;
  }
  std::int64_t self_cpu_time_total_ns() const noexcept { return 0; }
  std::int64_t self_cuda_time_total_ns() const noexcept { return 0; }
#endif
};

#if !PROFTRACE_ENABLED
}  // namespace compiled_out
#endif

}  // namespace proftrace
