// proftrace/profile.hpp — the session API, modelled on torch.profiler.profile.
//
//   proftrace::profile p({
//       .schedule = proftrace::schedule({.wait = 1, .warmup = 1, .active = 3}),
//       .on_trace_ready = proftrace::tensorboard_trace_handler("./log"),
//       .record_shapes = true,
//   });
//   p.start();
//   for (int it = 0; it < 8; ++it) { train_step(); p.step(); }
//   p.stop();
//   std::cout << p.key_averages().table({.sort_by = "self_cpu_time_total"});
//
// Or let instrumented threads drive the schedule with PROF_STEP() at the top
// of each loop body (then profile::step() records no annotations of its own).
// One session records at a time: starting a second one throws
// std::logic_error. A session still running when the process exits (exit()
// from any thread, return from main with it open, a static or leaked
// session) is stopped then, as stop() would: its trace closes and goes to
// on_trace_ready, or, without one, stays next to the spool as a finished
// .pt.trace.json (a warning names it). Events stream to a spool file (spool_dir) that is valid
// JSON at every flush; export_chrome_trace() copies it, compressed by suffix.
//
// Reports never end a program that used the API in order: with no finished
// trace (a run shorter than its schedule, a disabled profile, never
// started) they are empty and say why (event_averages::note, printed by
// table()); has_trace() tells beforehand. With PROFTRACE_ENABLED=0 the whole
// session API is inline and does nothing, so a zero-cost build links no
// proftrace, Boost or CUDA code.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collect/counters.hpp"
#include "collect/cpu_ranges.hpp"
#include "collect/cuda_kernels.hpp"
#include "collect/nvtx_ranges.hpp"
#include "collect/flops.hpp"
#include "collect/memory.hpp"
#include "collect/openmp.hpp"
#include "collectors.hpp"
#include "config.hpp"
#include "key_averages.hpp"
#include "memory_stats.hpp"
#include "overflow.hpp"
#include "rank_averages.hpp"
#include "schedule.hpp"

namespace proftrace {
inline namespace PROFTRACE_SESSION_NAMESPACE {

class session;
class execution_trace_observer;
#if PROFTRACE_ENABLED
namespace detail {
std::int64_t enter_step(bool& drives) noexcept;
struct session_access;
}
#endif
using trace_ready_fn = std::function<void(session&)>;

enum class fork_child : std::uint8_t { profiling_off, fresh_session };

// The format a trace streams in while it records. json: Kineto's JSON
// (HTA, TensorBoard). pftrace: Perfetto's protobuf — a fraction of the
// size, a fraction of the flusher's work, what Perfetto UI and
// trace_processor load best. Exports take the format their path names
// (.json[.gz|.zst], .pftrace[.gz|.zst]) and convert when it is the other one.
// automatic: pftrace when on_trace_ready is a tensorboard_trace_handler
// writing .pftrace, else json. Export-only formats (a session asked for
// one streams JSON and converts at the export): otf2, an OTF2 archive
// (Vampir, Scalasca, otf2-print; `run.otf2` is the archive's anchor file,
// its run.def and run/ beside it; builds without libotf2
// (PROFTRACE_WITH_OTF2) throw std::runtime_error there, naming the
// package); caliper, a calling-context profile in Caliper's JSON-split
// layout (.cali.json) for Hatchet and Thicket. none: a profile-only
// session, aggregating every report (key_averages, table, memory, FLOPs,
// counters, stacks, rank_averages) and writing no trace and no spool; an
// export of a trace then throws std::logic_error saying so, and a
// tensorboard_trace_handler writes nothing.
enum class trace_format : std::uint8_t { automatic, json, pftrace, otf2, caliper, none };

struct profile_options {
  // Empty: everything this build compiled in, CUDA only where it is really
  // there (library, driver, device), silently as torch. Naming
  // activity::cuda where it is missing warns once per process.
  activity_set activities{};
  schedule_fn schedule{};     // empty: record from start() to stop(), no step annotations
  trace_ready_fn on_trace_ready{};
  bool record_shapes = false;
  bool profile_memory = false;  // record PROF_ALLOC / PROF_FREE: memory columns and "[memory]" events
  bool with_stack = false;    // "Call stack" (file(line): name, innermost first) on each event
  bool with_flops = false;    // record PROF_MATMUL, PROF_CONV, ... estimates: "flops" args, Total FLOPs column
  bool with_modules = false;  // "Module Hierarchy" from enclosing PROF_MODULE scopes
  // Counters read at each recorded scope's begin and end, named as `perf
  // list` spells them ("task-clock", "context-switches", "page-faults",
  // "cycles", "instructions", "cache-misses", ...): their deltas become the
  // scope's args and the table's columns (<proftrace/collect/counters.hpp>).
  // Empty: none. Builds with PROFTRACE_WITH_COUNTERS (Linux).
  std::vector<std::string> counters{};
  bool retain_events = false; // keep every complete event for events() (memory grows with the trace)
  // torch's acc_events: key_averages(), table(), events() and export_stacks()
  // accumulate every schedule cycle of the session (and of later start()s)
  // instead of showing the last cycle only; each trace file still holds its
  // own cycle.
  bool acc_events = false;
  // Calls cudaProfilerStart when a trace starts and cudaProfilerStop when it
  // ends, so `nsys profile --capture-range=cudaProfilerApi` captures only the
  // schedule's active steps (builds with CUDA; a failure is one warning).
  bool cuda_profiler_gating = false;
  std::optional<overflow_policy> overflow{};  // empty: PROFTRACE_OVERFLOW_POLICY
  // For threads that attach from now on; a ring the flusher finds falling
  // behind grows once to PROFTRACE_RING_GROWTH (4) times this.
  std::uint32_t ring_events = PROFTRACE_RING_EVENTS;
  std::chrono::milliseconds flush_period{100};
  trace_format stream_format = trace_format::automatic;  // see trace_format
  // In an MPI job (proftrace::mpi linked, MPI initialised): at each trace's
  // end and at stop(), every rank's rows are reduced over MPI into one
  // report of the job on rank 0, rank_averages(). A collective, as the
  // clock alignment: every rank must end the same traces in the same order
  // (PROFTRACE_NO_RANK_REDUCTION=1 turns it off where they cannot). With
  // proftrace::mpi_calls linked, such a session still running at
  // MPI_Finalize ends there.
  bool across_ranks = false;
  // The ranks that write traces, "0,7,100-131" (empty: every rank;
  // PROFTRACE_TRACE_RANKS overrides it): the others run profile-only
  // (trace_format::none) and still take part in rank_averages().
  std::string trace_ranks{};
  // Where traces stream while recording. Empty: $PROFTRACE_SPOOL_DIR, else
  // the system's temporary directory.
  std::filesystem::path spool_dir{};
  // What a child made by fork() does while this session runs in the parent:
  // nothing (its recording is off; the parent's trace is untouched), or
  // record a fresh session of its own, to a file named by the child's pid
  // (CPU collectors only: CUDA cannot be used across fork()).
  fork_child in_forked_child = fork_child::profiling_off;
  // false: start(), stop() and step() do nothing and record nothing (the
  // legacy profiler's enabled flag); the reports are then empty, the table
  // one line saying so, and the exports write nothing and warn.
  bool enabled = true;
  // Started and stopped with the session; gets every trace's scopes as a
  // graph (<proftrace/execution_trace.hpp>). Not owned; must outlive the session.
  proftrace::execution_trace_observer* execution_trace_observer = nullptr;
};

#if PROFTRACE_ENABLED
class session {
 public:
  session(const session&) = delete;
  session& operator=(const session&) = delete;
  virtual ~session();  // stops a running session; problems become warnings

  // Throws std::logic_error if any session is already running (this one:
  // "not reentrant"), and std::runtime_error if the first trace's spool file
  // cannot be created. Naming CUDA in `activities` where it cannot be had
  // (no library, driver or device) warns once per process and records the
  // CPU profile; default activities leave it out silently.
  void start();
  // Ends the session (closing a trace in progress, which runs on_trace_ready).
  void stop();
  // Signals that the next step has begun: torch's profile.step().
  void step();

  // Drains every thread's ring into the trace in progress now, instead of at
  // the flusher's next wake-up (for example before a checkpoint).
  void flush();

  bool running() const;
  std::int64_t step_num() const;
  profiler_action current_action() const;
  // Before start(): the compiled-in subset of what the session asked for.
  // From start() on: what it really records (CUDA only where collection
  // started, NVTX only where a tool is attached).
  activity_set activities() const;

  // A finished trace is there for the reports below. Without one (never
  // started, disabled, stopped before its schedule recorded, or the first
  // trace still recording) the reports are empty and their note says why,
  // the exports write nothing and warn once, memory_stats() and events()
  // are empty.
  bool has_trace() const;

  // Aggregates of the last finished trace, by name, and by input shape and
  // the first `group_by_stack_n` enclosing frames (with_stack) when asked.
  // A trace that stop() cut short before its schedule's last active step
  // is reported with a note saying so.
  event_averages key_averages(bool group_by_input_shape = false, int group_by_stack_n = 0) const;
  // key_averages().table(options), total_average(), self_cpu_time_total()
  // (microseconds), as the legacy profiler's.
  std::string table(const table_options& options = {}) const;
  event_average total_average() const;
  double self_cpu_time_total() const;
  // The complete events of the last finished trace, sorted by start time
  // and, for equal starts, longest first (an enclosing scope before the
  // scopes it contains); needs retain_events (std::logic_error otherwise,
  // once a trace has finished).
  std::vector<function_event> events() const;
  // Collapsed stacks ("outer;inner;op 123", integer microseconds of
  // `metric`) for flamegraph.pl and speedscope. Needs with_stack
  // (std::logic_error); metric is self_cpu_time_total or
  // self_cuda_time_total (std::invalid_argument otherwise); an unwritable
  // path throws std::runtime_error.
  void export_stacks(const std::filesystem::path& path, std::string_view metric = "self_cpu_time_total") const;
  // Writes the last finished trace in the format its suffix names:
  // ".json", ".json.gz" or ".json.zst", ".pftrace[.gz|.zst]", or
  // ".cali.json" (a Caliper profile, as export_profile). Throws
  // std::runtime_error naming the path when it cannot be written.
  void export_chrome_trace(const std::filesystem::path& path) const;
  // The last finished trace as a calling-context profile for Hatchet and
  // Thicket: `path` should end in ".cali.json" (Caliper's JSON-split
  // layout, docs/concepts/trace-formats.md); any other suffix exports as
  // export_chrome_trace does.
  void export_profile(const std::filesystem::path& path) const { export_chrome_trace(path); }
  // torch's export_memory_timeline for the last finished trace, by suffix:
  // ".html" a self-contained page (inline SVG stacked by category, peak
  // marked), "raw.json.gz" gzipped [[t_ns, action, bytes, category], ...],
  // ".json.gz" / ".json" [times_us, [[0, bytes per category], ...]].
  // `device`: "cpu", "cuda:N"; empty: "cuda:0" when the trace holds device 0
  // memory, else "cpu". Needs profile_memory (std::logic_error); a bad
  // device throws std::invalid_argument, an unwritable path std::runtime_error.
  void export_memory_timeline(const std::filesystem::path& path, std::string_view device = {}) const;
  // Peak and current memory per device: over the last trace, over the whole
  // session, and per step (empty before the first trace ends).
  std::vector<device_memory_stats> memory_stats() const;
  // The job's report of the last finished trace, reduced over MPI
  // (profile_options::across_ranks): per key, the ranks' sums, min, mean,
  // max and imbalance. On rank 0; elsewhere, and without across_ranks or
  // MPI, empty, its note saying why.
  proftrace::rank_averages rank_averages() const;

  // The file of the last finished trace: its spool (removed with the
  // session), or the export the spool became (the first plain export in
  // the stream's format on the spool's file system takes the file itself).
  std::filesystem::path trace_path() const;

  // torch's metadata calls. A value passed as JSON must parse
  // (std::invalid_argument otherwise). While recording, metadata goes to the
  // trace in progress; afterwards, to the last finished trace.
  void add_metadata(std::string_view key, std::string_view value);
  void add_metadata_json(std::string_view key, std::string_view json_value);
  void preset_metadata_json(std::string_view key, std::string_view json_value);

  struct impl;

 protected:
  session(profile_options options, activity_set compiled);

 private:
  friend std::int64_t detail::enter_step(bool& drives) noexcept;
  friend struct detail::session_access;
  std::unique_ptr<impl> impl_;
};
#else
// PROFTRACE_ENABLED=0: the same API, inline, doing nothing. start(), stop()
// and step() only keep the order of calls; every report is empty and says
// the profiler was compiled out.
class session {
 public:
  session(const session&) = delete;
  session& operator=(const session&) = delete;
  ~session() = default;

  void start() noexcept { running_ = true; }
  void stop() noexcept { running_ = false; }
  void step() noexcept { ++step_num_; }
  void flush() noexcept {}
  bool running() const noexcept { return running_; }
  std::int64_t step_num() const noexcept { return step_num_; }
  profiler_action current_action() const noexcept { return profiler_action::none; }
  activity_set activities() const noexcept { return {}; }
  bool has_trace() const noexcept { return false; }

  event_averages key_averages(bool = false, int = 0) const {
    event_averages none;
    none.note = "proftrace was compiled out (PROFTRACE_ENABLED=0): nothing was recorded";
    return none;
  }
  std::string table(const table_options& options = {}) const { return key_averages().table(options); }
  event_average total_average() const { return key_averages().total_average(); }
  double self_cpu_time_total() const noexcept { return 0; }
  std::vector<function_event> events() const { return {}; }
  void export_stacks(const std::filesystem::path&, std::string_view = "self_cpu_time_total") const noexcept {}
  void export_chrome_trace(const std::filesystem::path&) const noexcept {}
  void export_profile(const std::filesystem::path&) const noexcept {}
  void export_memory_timeline(const std::filesystem::path&, std::string_view = {}) const noexcept {}
  std::vector<device_memory_stats> memory_stats() const { return {}; }
  proftrace::rank_averages rank_averages() const {
    proftrace::rank_averages none;
    none.note = "proftrace was compiled out (PROFTRACE_ENABLED=0): nothing was recorded";
    return none;
  }
  std::filesystem::path trace_path() const { return {}; }
  void add_metadata(std::string_view, std::string_view) noexcept {}
  void add_metadata_json(std::string_view, std::string_view) noexcept {}
  void preset_metadata_json(std::string_view, std::string_view) noexcept {}

 protected:
  session(const profile_options&, activity_set) noexcept {}

 private:
  bool running_ = false;
  std::int64_t step_num_ = 0;
};
#endif

// A session restricted, at compile time, to the collectors C... that this
// build has available.
template <class... C>
class basic_profile : public session {
 public:
  using collectors = collector_list<C...>;
  static constexpr activity_set compiled_activities = activities_of<collectors>::value;

  explicit basic_profile(profile_options options = {}) : session(std::move(options), compiled_activities) {}
};

// basic_profile over a type_list.
template <class List>
struct basic_profile_of;
template <class... C>
struct basic_profile_of<type_list<C...>> {
  using type = basic_profile<C...>;
};

// Every collector this build compiled in.
using build_collectors =
    collector_list<collect::cpu_ranges, collect::cuda_kernels, collect::nvtx_ranges, collect::memory, collect::flops,
                   collect::counters, collect::openmp>;
using profile = typename basic_profile_of<build_collectors>::type;

// Starts a session for the lifetime of a scope.
class session_scope {
 public:
  explicit session_scope(session& s) : s_(s) { s_.start(); }
  ~session_scope() {
    try {
      s_.stop();
    } catch (...) {
    }
  }
  session_scope(const session_scope&) = delete;
  session_scope& operator=(const session_scope&) = delete;

 private:
  session& s_;
};

}  // namespace PROFTRACE_SESSION_NAMESPACE
}  // namespace proftrace
