// tools/trace_summary.hpp — `proftrace summary` of one trace: torch's
// key_averages() rules (lib/aggregation/torch_rules.hpp, shared with the live
// session) applied to the host events of a Kineto JSON or Perfetto trace,
// nested from their intervals whatever their order in the file.
#pragma once

#include <climits>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <proftrace/key_averages.hpp>

#include "trace_reader.hpp"

namespace proftrace::tools {


// Complete ("X") host events with cat cpu_op, user_annotation, cuda_runtime
// or cuda_driver count; events with a "stream" arg or a device cat do not.
bool is_host_op(const trace_event& e) noexcept;

class aggregator {
 public:
  // Events are nested in torch's order whatever their order in the file:
  // each thread's events are sorted by start (the longer first), in memory
  // up to `max_buffered_events`, spilled to sorted temporary runs beyond it
  // and merged in finish().
  explicit aggregator(bool group_by_input_shape = false, std::size_t max_pending_per_thread = std::size_t{1} << 18,
                      std::size_t max_buffered_events = std::size_t{1} << 20);
  ~aggregator();
  aggregator(const aggregator&) = delete;
  aggregator& operator=(const aggregator&) = delete;

  // Also collect self time per distinct stack of enclosing event names, for
  // stacks(). Costs a string per event; off by default.
  void collect_stacks(bool on) noexcept { stacks_on_ = on; }
  // Called with each host event's row, the row's index (stable, unlike its
  // address) and its self time (ns) as the event is closed, for diff's
  // per-call samples; none by default.
  using self_time_sink = std::function<void(const proftrace::event_average& row, std::size_t index, std::int64_t self_ns)>;
  void on_self_time(self_time_sink sink) { self_time_sink_ = std::move(sink); }

  // Adds one event; returns an error message (naming the event index) for an
  // event the summary cannot use, empty otherwise.
  std::string add(const trace_event& e);
  // Closes every thread's open intervals and returns the rows, in the order
  // of each key's earliest event in time (torch's order; not the file's).
  proftrace::event_averages finish();
  // After finish(): one row per distinct stack (key: the event's name, stack:
  // its enclosing events' names, innermost first) with its self time, ready
  // for event_averages::collapsed_stacks().
  proftrace::event_averages stacks() const;
  const std::vector<std::string>& warnings() const noexcept { return warnings_; }
  // The smallest and largest N of the ProfilerStep#N host events added;
  // -1, -1 when there were none.
  std::int64_t first_step() const noexcept { return first_step_ == INT64_MAX ? -1 : first_step_; }
  std::int64_t last_step() const noexcept { return last_step_ == INT64_MIN ? -1 : last_step_; }
  // The smallest `ts` (ns) of the events added, metadata left out; 0 when none.
  std::int64_t first_ts_ns() const noexcept { return first_ts_ns_ == INT64_MAX ? 0 : first_ts_ns_; }
  // Threads whose events were not in start order in the file (sorted before
  // nesting), and the sorted runs spilled to temporary files: after finish().
  std::size_t threads_out_of_order() const noexcept { return threads_out_of_order_; }
  std::size_t spilled_runs() const noexcept;
  // Whether the trace had "python_function" events (with_stack) and
  // "[memory]" events (profile_memory).
  bool saw_python() const noexcept { return saw_python_; }
  bool saw_memory() const noexcept { return saw_memory_; }

 private:
  struct interval {
    std::int64_t start = 0, end = 0, child_ns = 0;
    std::size_t row = 0;
    std::int64_t flops = 0;
    // Bytes allocated (net of frees) while it was open, [0] host, [1] CUDA:
    // in its subtree, and directly in it. A "[memory]" event is an interval
    // of zero length (memory = true, no row) with its bytes as mem_total.
    std::int64_t mem_total[2] = {0, 0}, mem_self[2] = {0, 0};
    bool memory = false;
    bool python = false;  // a python_function event: nests, has no row
    bool nested = false;  // counted as a child of an entry below it on the stack
    // Only with collect_stacks (kept out of line so the summary's intervals
    // stay small): the enclosing names known when it arrived (events in
    // start order), and the stacks of its subtree, relative to it, that
    // arrived before it (events in end order).
    struct stack_data {
      std::string path;
      std::vector<std::pair<std::string, std::int64_t>> below;
      std::unique_ptr<std::unordered_map<std::string, std::size_t>> index;  // into below, once it is long
    };
    std::unique_ptr<stack_data> stacks;
  };
  enum class order : std::uint8_t { unknown, by_start, by_end };
  struct thread_state {
    order mode = order::unknown;
    std::deque<interval> stack;
    std::int64_t evicted_end = INT64_MIN;  // latest end among intervals evicted by the cap
    bool warned = false;
  };
  // One host or python_function event, buffered until finish().
  struct record {
    std::uint32_t thread = 0;
    std::uint32_t row = 0;  // UINT32_MAX: a python_function event
    std::int64_t start = 0, end = 0, flops = 0;
    std::int64_t tie = 0;  // among identical intervals, the smaller encloses
  };
  struct memory_record {
    std::uint32_t process = 0;  // memory counts in the events of its own process only
    std::int64_t ts = 0, bytes[2] = {0, 0};
  };
  static bool before(const record& a, const record& b) noexcept;
  void buffer(record r, const trace_event& e);
  void replay_merged();
  void replay(const record& r);
  std::uint32_t process_id(const std::string& pid);
  void count_memory(const record& r, interval& E);
  void sum_memory_by_process();
  std::size_t row_for(const trace_event& e);
  void place(interval E, thread_state& T, const std::string& thread);
  bool claim_arrived_children(interval& E, thread_state& T);
  void close_ended_before(const interval& E, thread_state& T);
  static void nest_in_open_parent(interval& E, thread_state& T);
  void take_enclosing_names(interval& E, const thread_state& T) const;
  void push_pending(interval E, thread_state& T);
  static void claim_memory(interval& parent, const interval& child) noexcept;
  void finalize(const interval& x, bool has_parent);
  void emit_stacks(const interval& x);
  static void add_weight(interval::stack_data& to, std::string path, std::int64_t ns);

  bool by_shape_;
  std::size_t max_pending_;
  std::vector<proftrace::event_average> rows_;
  std::vector<bool> row_finalized_;
  std::unordered_map<std::string, std::size_t> index_;
  std::unordered_map<std::string, thread_state> threads_;  // by "pid/tid"; nodes never move
  std::string last_pid_, last_tid_;
  std::vector<std::string> warnings_;
  std::int64_t first_step_ = INT64_MAX, last_step_ = INT64_MIN;
  std::int64_t first_ts_ns_ = INT64_MAX;
  bool stacks_on_ = false;
  self_time_sink self_time_sink_;
  std::unordered_map<std::string, std::int64_t> stack_self_ns_;  // '\x1f'-joined names, outermost first
  std::vector<std::string> stack_order_;

  // Buffered events (see the constructor; lib/spool/sorted_runs.hpp) and their threads.
  struct event_runs;
  std::unique_ptr<event_runs> runs_;
  std::vector<std::string> thread_names_;
  std::unordered_map<std::string, std::uint32_t> thread_ids_;
  struct thread_seen {
    std::int64_t start = 0, end = 0;
    bool any = false, out_of_order = false;
    order evidence = order::unknown;  // which order the file's events are in, from the first nesting seen
  };
  std::vector<thread_seen> seen_;
  std::uint32_t last_thread_id_ = UINT32_MAX;
  std::uint64_t seq_ = 0;
  std::unordered_map<std::string, std::uint32_t> process_ids_;  // by pid text
  std::vector<std::uint32_t> thread_process_;                    // by thread id
  // "[memory]" events of every thread; after finish() sorts them by process
  // and time, prefix sums per process, process_memory_[p] its [begin, end).
  std::vector<memory_record> memory_;
  std::vector<std::pair<std::size_t, std::size_t>> process_memory_;
  // How many host events hold each memory event, as differences: +1 at the
  // first one an event holds, -1 after the last. None: torch's "[memory]" row.
  std::vector<std::int32_t> memory_cover_;
  void add_uncovered_memory_row();
  std::vector<std::int64_t> row_first_start_, row_first_end_;  // each key's earliest event
  std::size_t threads_out_of_order_ = 0;
  bool saw_python_ = false, saw_memory_ = false;
  std::uint32_t replay_thread_ = UINT32_MAX;
  thread_state* replay_state_ = nullptr;
};

// Reads a trace and aggregates it. Throws trace_error (read errors, or an
// event the summary cannot use). `warnings` receives the truncation warning
// and the aggregator's.
// What the trace says about how it was recorded, beside its rows.
struct trace_info {
  bool with_flops = false;      // the header's "with_flops": 1 (torch writes it, yet no per-event FLOPs)
  bool profile_memory = false;  // the header's "profile_memory": 1, or "[memory]" events
  bool memory_events = false;   // some "[memory]" event
  bool python_events = false;   // some python_function event (with_stack)
  std::size_t threads_out_of_order = 0;  // threads whose events were sorted before nesting
};
// The rows' profile_memory is set for a trace recorded with profile_memory
// (torch's CPU Mem columns).
proftrace::event_averages summarize(const std::filesystem::path& path, bool group_by_input_shape,
                                    std::vector<std::string>& warnings, bool progress = false,
                                    trace_info* info = nullptr, const aggregator::self_time_sink& self_times = {});
// The same read, as one row per distinct stack of enclosing event names with
// its self time (for event_averages::collapsed_stacks()).
proftrace::event_averages summarize_stacks(const std::filesystem::path& path, std::vector<std::string>& warnings,
                                           bool progress = false);

// The rows as CSV of plain numbers, one quantity per column, for
// spreadsheets and pandas: name, [input_shapes], count, cpu_total_us,
// self_cpu_us, cpu_avg_us, then when any row has them cuda_total_us,
// self_cuda_us, cuda_avg_us; cpu_memory_bytes, self_cpu_memory_bytes;
// cuda_memory_bytes, self_cuda_memory_bytes; flops. Times in microseconds
// with three decimals, bytes and FLOPs as integers.
std::string numeric_csv(const proftrace::event_averages& averages);

// ---- what the commands built on the summary share ----

// Reads `path` through `agg` (the caller takes the results from it). Throws
// trace_error as summarize(); `warnings` receives the truncation and
// incompleteness warnings and the aggregator's, each naming the file.
read_result aggregate(const std::filesystem::path& path, aggregator& agg, std::vector<std::string>& warnings,
                      bool progress);
// proftrace's loss counters ("proftrace": {...}) give the table its "Lost
// events" line, as the session's does: `m`'s into `losses`, if it is one.
void take_loss_counter(const metadata_entry& m, proftrace::loss_counts& losses);
// Nanoseconds as microseconds with three decimals, "12.345".
std::string us_text(std::int64_t ns);

}  // namespace proftrace::tools
