// tools/trace_reader.hpp — a streaming reader for Kineto-layout trace files
// (.json, .json.gz, .json.zst), and what the `proftrace` command line builds
// on it: per-name aggregates (summary, diff) and the layout checks (validate).
//
// The file is read once, in 1 MiB chunks, through boost::json::basic_parser
// (a SAX parser): no document is ever built, so memory stays bounded whatever
// the size of the trace. Each element of the top-level "traceEvents" array is
// handed to a callback as a small `trace_event` record.
#pragma once

#include <climits>
#include <cstdio>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <stdexcept>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>
#include <deque>

#include <proftrace/key_averages.hpp>

namespace proftrace::tools {

// The JSON type of a field, `absent` when the event has no such key.
enum class json_type : std::uint8_t { absent, string, number, boolean, null, object, array };
const char* to_string(json_type t) noexcept;

struct trace_event {
  std::uint64_t index = 0;        // position in traceEvents, from 0
  json_type type = json_type::object;  // the element itself (an event must be an object)

  std::string ph, cat, name;
  json_type ph_type = json_type::absent, cat_type = json_type::absent, name_type = json_type::absent;
  json_type ts_type = json_type::absent, dur_type = json_type::absent;
  json_type pid_type = json_type::absent, tid_type = json_type::absent;
  double ts = 0;   // microseconds
  double dur = 0;  // microseconds
  std::string pid, tid;  // as text (numbers in decimal, strings as written)

  bool has_args = false;
  bool has_stream = false;       // args.stream: a device event
  bool has_input_dims = false;
  std::string input_dims;        // args["Input Dims"] as "[[64, 128], [128, 256]]"
  bool has_external_id = false;
  std::int64_t external_id = 0;
  std::int64_t flops = 0;        // args.flops (with_flops traces)
  // args of a "[memory]" event (profile_memory traces): its "Bytes"
  // (negative for a free) and "Device Type" (0 CPU, 1 CUDA, as Kineto's).
  bool has_bytes = false;
  std::int64_t bytes = 0;
  std::int64_t device_type = 0;

  void clear();  // back to a default event, member by member (a new member goes there too)
};

struct metadata_entry {
  std::string key;  // a top-level key, or "key.field" for a scalar field of a top-level object
  json_type type = json_type::absent;
  std::string value;  // scalars as text; "{...}" / "[...]" for containers
};

// A number for an integer field: NaN as 0, beyond int64's range its ends
// (a cast would be undefined behaviour: "flops": 1e30 from a bad estimate).
std::int64_t saturated_int64(double d);

// A metadata entry's value as an integer in [lo, hi]; nullopt for anything
// else (not a number, a fraction, an exponent, out of range): what a trace's
// rank and clock keys must be before any arithmetic is done with them.
std::optional<std::int64_t> integer_value(const metadata_entry& m, std::int64_t lo, std::int64_t hi);

struct read_result {
  std::uint64_t bytes = 0;   // uncompressed bytes consumed by the parser
  std::uint64_t events = 0;  // elements of traceEvents seen
  bool top_level_object = false;
  bool has_trace_events = false;
  bool trace_events_is_array = false;
  // The input ended inside traceEvents (a spool still being written, or a
  // crash): every complete event before `bytes` was delivered.
  bool truncated = false;
  bool stopped = false;  // on_event returned false
  // .pftrace: events on a clock of their sequence that no snapshot placed (skipped)
  std::uint64_t unplaced_events = 0;
  // .pftrace: slices past the reader's bound on slices open at once (skipped)
  std::uint64_t skipped_open_slices = 0;
  // .pftrace: where a truncated trace ends ("the input ends inside packet
  // ..."); empty for JSON, which is cut inside traceEvents.
  std::string cut_inside_packet;
  std::vector<metadata_entry> metadata;  // top-level keys other than traceEvents
};

// A trace that cannot be read: message is one line naming the file and the
// byte offset (or event index).
class trace_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  // The message without its leading "PATH: ", for a caller that names the file itself.
  std::string reason(const std::filesystem::path& path) const {
    std::string m = what();
    const std::string prefix = path.string() + ": ";
    if (m.rfind(prefix, 0) == 0) m.erase(0, prefix.size());
    return m;
  }
};

// A value JSON's grammar allows and no command accepts (a number beyond a
// double, such as 1e400: read as infinity), ending at uncompressed byte `byte`.
class refused_value_error : public trace_error {
 public:
  refused_value_error(const std::string& message, std::uint64_t at) : trace_error(message), byte(at) {}
  std::uint64_t byte;
};

struct read_options {
  // Called per element of traceEvents; return false to stop reading (then
  // read_trace returns what it had, with `stopped` set in the result).
  std::function<bool(const trace_event&)> on_event;
  std::size_t chunk_size = std::size_t{1} << 20;
  bool progress = false;  // a progress line on stderr (the CLI sets it for big files on a terminal)
  // Stop (with `stopped` set) where traceEvents opens, or as soon as the
  // top-level value is not an object: the metadata before the events, and
  // whether the file is a trace at all, without reading it.
  bool stop_at_events = false;
};

// Reads `path` once. Throws trace_error for a missing or unreadable file,
// corrupt compressed data, malformed JSON, or input that ends before
// traceEvents (a cut inside traceEvents is reported as `truncated` instead);
// refused_value_error for a number beyond a double.
read_result read_trace(const std::filesystem::path& path, const read_options& options);

// ---- the reader contract: what every command refuses (tools/trace_summary.cpp) ----

// Why an event no command can use (not an object, no string "ph"; an "X"
// without a string "name" or a numeric "ts" and "dur"): "event 3 has no
// \"ph\"". Empty when it is usable.
std::string event_problem(const trace_event& e);
// Throws trace_error when the top level is not an object whose "traceEvents" is an array.
void require_trace_layout(const std::filesystem::path& path, const read_result& r);
// Reads `path` once and throws the trace_error every command throws for it
// (read_trace's, event_problem's, require_trace_layout's); a trace cut
// inside traceEvents is returned `truncated`, as read_trace does.
read_result read_readable_trace(const std::filesystem::path& path);
// What a trace's "proftrace" object says of a recording whose trace file
// could not be written whole (a full disk, a file-size limit): its
// "incomplete" reason and its "events_not_written" (.pftrace:
// "packets_not_written") count, as one line every command prints; empty for
// a trace that does not say so.
std::string incompleteness(const read_result& r);

// ---- Perfetto traces (.pftrace, .pftrace.gz; tools/trace_pftrace.cpp) ----

// A .pftrace, .pftrace.gz or .pftrace.zst name, or a file whose
// (decompressed) first byte is 0x0a (Trace.packet) and whose first byte
// other than white space is not '{' (that is JSON starting with a newline).
// Never throws.
bool is_perfetto_trace(const std::filesystem::path& path);
bool named_perfetto_trace(const std::filesystem::path& path);  // by the suffix alone
// The suffix of the format `path` holds (".json", ".pftrace"), as is_perfetto_trace tells it.
std::string format_suffix_of(const std::filesystem::path& path);
bool named_json(const std::filesystem::path& path);            // .json, .json.gz, .json.zst
inline constexpr const char* trace_suffixes = ".json, .json.gz, .json.zst, .pftrace, .pftrace.gz, .pftrace.zst";

// read_trace's work for a Perfetto trace: its slices become "X" events,
// instants "i", counters "C" (in the order their END appears), with pid,
// tid (a named track's name as tid), ts and dur in microseconds from the
// first event's time base, and the args the summary reads. A file cut
// inside a packet is `truncated`; malformed content throws trace_error.
read_result read_perfetto_trace(const std::filesystem::path& path, const read_options& options);

struct conversion_report {
  std::string summary;  // one line: what was converted
  std::vector<std::string> warnings;
};
// IN .json[.gz|.zst] -> OUT .pftrace[.gz]; IN .pftrace[.gz] -> OUT
// .json[.gz|.zst]; the same format on both sides re-encodes (or copies).
// Throws trace_error for unknown suffixes and unreadable or invalid input.
// (tools/trace_convert.cpp)
conversion_report convert_trace(const std::filesystem::path& input, const std::filesystem::path& output);

// ---- telling traces from the other files of an output directory ----

// Whether a file is a Kineto trace, decided by its content (not its name): a
// JSON object whose "traceEvents" is an array. Reads up to where
// traceEvents opens (a non-object stops at its first byte). Never throws.
struct trace_probe {
  bool is_trace = false;
  // Why not, when !is_trace: "not JSON (...)", "a JSON array, not an
  // object", "a JSON object without a \"traceEvents\" array", ...
  std::string reason;
  bool merged = false;  // written by `proftrace merge` (a "proftraceMerged" key)
  std::vector<metadata_entry> metadata;  // the top-level members before traceEvents
};
trace_probe probe_trace(const std::filesystem::path& path);

struct skipped_file {
  std::filesystem::path file;
  std::string reason;  // "not a Kineto trace (a JSON array, not an object)"
};

// The traces of a directory: its regular files named *.json, *.json.gz or
// *.json.zst (the suffix picks the decompression), each probed. Files that
// are not traces, and merged traces (their ranks are in the directory
// already), go to `skipped`; `exclude` (e.g. merge's own output) is left
// out silently. Sorted by name. Throws trace_error when the directory cannot
// be read.
std::vector<std::filesystem::path> list_traces(const std::filesystem::path& dir, std::vector<skipped_file>& skipped,
                                               const std::vector<std::filesystem::path>& exclude = {});

// ---- aggregation: torch's key_averages() from the trace's host events ----

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
  void replay(const record& r);
  std::uint32_t process_id(const std::string& pid);
  void count_memory(const record& r, interval& E);
  void sum_memory_by_process();
  std::size_t row_for(const trace_event& e);
  void place(interval E, thread_state& T, const std::string& thread);
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

// ---- several ranks ----

struct rank_summary {
  std::filesystem::path file;
  int rank = -1;  // distributedInfo.rank; -1 when the trace has none
  int world_size = -1;  // distributedInfo.world_size; -1 when the trace has none
  std::string host;
  // The ProfilerStep#N numbers among its host events (-1: none): a schedule
  // with repeat > 1 writes one trace per cycle, told apart by these.
  std::int64_t first_step = -1, last_step = -1;
  std::int64_t base_ns = 0;  // baseTimeNanoseconds
  std::int64_t start_ns = 0; // base_ns + the earliest event's ts: the trace's order in time
  std::size_t cycle = 0;     // index into ranks_summary::cycles
  bool duplicate = false;    // a second trace of the same rank and cycle (left out of the view across ranks)
  proftrace::event_averages averages;
  // "steps 10-14", "step 7", or empty without steps.
  std::string steps() const;
};

struct cycle_summary {
  std::int64_t first_step = -1, last_step = -1;  // over its traces; -1: traces without steps
  std::string label;  // "steps 10-14", "step 7", "trace 2" or empty (one cycle of traces without steps)
  std::size_t entities = 0;  // distinct ranks (each trace without a rank counts alone)
  bool all_ranked = true;
};

struct ranks_summary {
  // Cycle by cycle (in step order), ranks in order within a cycle (traces
  // without a rank last, by file name).
  std::vector<rank_summary> traces;
  std::vector<cycle_summary> cycles;
  std::vector<skipped_file> skipped;  // files of the directory that are not traces
};

// Summaries of every trace in `dir` (see list_traces: files that are not
// Kineto traces are skipped, not an error; a broken trace is an error),
// grouped into schedule cycles: traces with steps by their first
// ProfilerStep#N (a trace cut short keeps its cycle), traces without steps
// by their order in time within their rank. Throws trace_error when no trace
// is left.
ranks_summary summarize_ranks(const std::filesystem::path& dir, bool group_by_input_shape,
                              std::vector<std::string>& warnings);
// Per key, across the traces of one cycle (duplicates left out): how many
// ranks have it, out of how many, the min, median and max of its self CPU
// time and the rank with the max ("-" when all are equal), sorted by
// max - min, largest first; `row_limit` rows at most (-1: all).
std::string cross_rank_table(const ranks_summary& ranks, std::size_t cycle, int row_limit = -1);

struct merge_result {
  std::uint64_t traces = 0;
  std::uint64_t ranks = 0;  // distinct distributedInfo.rank values (each trace without one counts alone)
  std::uint64_t events = 0;
  std::uint64_t unaligned = 0;  // traces without a measured clock offset (taken as 0)
  std::uint64_t drift_corrected = 0;  // traces whose offset at stop() gave the drift between start and stop
};

// Writes one trace holding every input's events: one process per rank (and
// per device of a rank), named "rank N (host)" and sorted by rank; a rank's
// traces of several schedule cycles share its processes (the cycles lie one
// after another in time), the host process named with their step ranges,
// "rank N (host) steps 10-14, 20-24"; process names are unique; times
// moved onto rank 0's clock by each trace's clockAlignment offset (and,
// where the offset was measured again at stop, clockAlignmentAtStop, by the
// drift interpolated linearly between the two) and onto one base; flow ids and correlations kept apart per rank. Streaming: one
// event in memory at a time. Writes JSON (.json, .json.gz, .json.zst; the
// command line converts it for a .pftrace). Throws trace_error on a bad
// input or output.
merge_result merge_traces(std::vector<std::filesystem::path> files, const std::filesystem::path& output);

// ---- validation ----

struct problem {
  std::int64_t index = -1;  // event index, -1 for the file as a whole
  std::string message;
};

// Reports every problem found through `on_problem`, as it is found (nothing
// is stored, so a huge broken trace costs no memory); returns their number.
// A read error (malformed JSON, truncation, corrupt compression) becomes the
// last problem, with index -1.
std::uint64_t validate(const std::filesystem::path& path, const std::function<void(const problem&)>& on_problem,
                       read_result* result = nullptr);

// ---- repair ----

// What `proftrace validate --repair` keeps of a trace that may be cut off
// anywhere: the longest prefix of its uncompressed text that ends on a
// complete event of "traceEvents" (or a complete top-level member, when the
// cut is before or after that array), and the closing that makes it valid.
struct repair_plan {
  bool complete = false;          // whole JSON, whole compressed stream: nothing to repair
  std::uint64_t bytes = 0;        // uncompressed bytes read before the input ended or went wrong
  std::uint64_t keep_bytes = 0;   // the prefix of the uncompressed text that is kept
  std::string closing;            // written after it: "]}", "}" or ", \"traceEvents\": []}"
  std::uint64_t events_kept = 0;  // complete elements of traceEvents in the prefix
  // How and where the input stops, e.g. "cut inside event 12 at byte 3456",
  // "gzip stream cut between events at uncompressed byte 9000"; empty when complete.
  std::string cut;
};

// Reads `path` once, streaming, in bounded memory. Throws trace_error
// ("PATH: nothing to repair: ...") when no trace can be recovered: missing,
// empty or unreadable file, a top-level value that is not an object, invalid
// JSON or corrupt compressed data before "traceEvents", "traceEvents" not an
// array. A cut (end of data, truncated gzip or zstd stream, corrupt
// compressed data, invalid JSON such as a zero-filled tail) inside or after
// traceEvents keeps every complete event before it; a cut before it keeps
// the complete members and adds an empty "traceEvents".
repair_plan plan_repair(const std::filesystem::path& path);

// Writes the plan's prefix of `input` and its closing to `output`,
// compressed by output's suffix (.gz, .zst, else plain), through a temporary
// file renamed at the end (so `output` may be `input`). Throws trace_error.
void write_repaired(const std::filesystem::path& input, const repair_plan& plan, const std::filesystem::path& output);

// "<name>.repaired<suffixes>" next to `input`: t.pt.trace.json.gz ->
// t.pt.trace.repaired.json.gz.
std::filesystem::path default_repair_output(const std::filesystem::path& input);

// ---- diff ----

struct diff_row {
  std::string key;
  std::int64_t count_a = 0, count_b = 0;
  std::int64_t self_a_ns = 0, self_b_ns = 0;
  std::int64_t total_a_ns = 0, total_b_ns = 0;
  bool in_a = false, in_b = false;
  std::int64_t self_change_ns() const noexcept { return self_b_ns - self_a_ns; }
  // Percent change of self time; +inf for a key new in B with self time.
  double self_change_pct() const noexcept;
};

// "-1.500ms", "12.000us", "3.250s": a signed time for tables and messages.
std::string format_time_signed(double us);

// A row's key in a diff: its name, and its input shapes when grouped by them.
std::string diff_key(const proftrace::event_average& row);
// Rows sorted by |change of self time|, largest first (ties by key); a key's
// rows on one side (several traces pooled) are summed. The statistics and
// the table: tools/trace_diff.hpp.
std::vector<diff_row> diff(const proftrace::event_averages& a, const proftrace::event_averages& b);

}  // namespace proftrace::tools
