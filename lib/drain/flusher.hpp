// Internal: the background thread that drains every ring into pairing
// (lib/pairing/), whose finished records go to the open trace window
// (lib/drain/trace_window.hpp: the aggregator and the writer of the spool's
// format), and switches windows at schedule boundaries.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "proftrace/config.hpp"
#include "proftrace/key_averages.hpp"
#include "collect/cuda/cuda_collection.hpp"
#include "reports/memory_timeline.hpp"
#include "spool/trace_file.hpp"
#include "formats/trace_formats.hpp"
#include "formats/trace_head.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

struct window_options {
  std::filesystem::path path;  // the streaming (spool) file
  trace_format format = trace_format::json;  // the spool's format
  // Raw JSON members written before "traceEvents", in order.
  std::vector<std::pair<std::string, std::string>> head_metadata;
  bool record_shapes = false;
  bool with_stack = false;
  bool with_modules = false;
  bool retain_events = false;
  std::int64_t first_step = -1;  // the schedule's step when the window opens (-1: no steps)
  std::vector<gpu_device_properties> devices;  // "deviceProperties", and the kernels' occupancy
  bool cuda = false;  // CUPTI collects: remember each scope's row and parent for GPU attribution
  bool profile_memory = false;  // memory events are resolved in time order across threads
};

// A closed trace window: its file, its aggregates and what it lost.
struct finished_trace {
  std::filesystem::path path;
  trace_format format = trace_format::json;  // the spool's
  std::shared_ptr<trace_file> spool;  // still open: exports read through it
  bool spool_is_export = false;       // the spool was renamed to an export's path: never removed
  std::vector<event_average> averages;  // keyed by (name, input shapes)
  loss_counts losses;
  std::uint64_t instant_events = 0;  // written, as the table's rows count scopes
  std::uint64_t counter_events = 0;
  std::vector<std::pair<std::string, std::string>> tail_metadata;  // added while or after recording
  std::string write_error;  // non-empty when the spool could not be written completely
  std::int64_t start_unix_ns = 0;
  std::int64_t stop_unix_ns = 0;
  bool with_stack = false;
  bool retained_events = false;
  std::uint64_t invalid_flop_estimates = 0;   // negative dimensions or counts, impossible shapes, overflow: counted, not added (a zero estimate is valid)
  std::uint64_t unscoped_flop_estimates = 0;  // recorded with no scope open on the thread
  std::uint64_t unknown_frees = 0;            // frees of addresses never seen allocated (no event was lost)
  std::uint64_t invalid_memory_devices = 0;   // memory events naming a device outside -1..253: not written
  std::uint64_t unfreed_reallocations = 0;    // allocations at an address still live (no event was lost)
  std::uint64_t truncated_scopes = 0;         // scopes whose end was lost: written up to the loss, marked
  std::uint64_t moved_scopes = 0;             // scopes that ended on another thread: written as async ranges
  std::uint64_t closed_at_thread_exit = 0;    // scopes open when their thread exited: written ending there
  std::uint64_t ended_after_their_session = 0;  // ends of scopes written closed at an earlier trace's end
  std::uint64_t truncated_names = 0;          // runtime names and string args cut at the maximum length
  std::uint64_t dropped_args = 0;             // PROF_ARG with no scope open, or too many on one scope
  gpu_loss_counts gpu_losses;
  std::vector<function_event> events;  // only with retain_events
  std::vector<memory_record> memory;   // every allocation, free and reserve report, with running totals
  // With write_error: the events recorded that the spool does not hold
  // (JSON: elements of traceEvents; .pftrace: TracePackets).
  std::uint64_t events_not_written = 0;
  std::uint64_t names_over_limit = 0;  // C API events and args recorded as "[names over limit]" (c_names.hpp)

  // What closes the spool's format: late metadata, proftrace's counters and traceName.
  std::string tail(const std::string& trace_name) const;
  // proftrace's counters as the trace reports them, in order.
  std::vector<std::pair<const char*, std::uint64_t>> counter_list() const;
  // The trace's "proftrace" key: the overflow policy, the counters and, when
  // the spool is incomplete, why and how much it lacks (a JSON object's
  // text; both formats write it).
  std::string counters_json() const;
  // The key under which an incomplete trace counts what it lacks.
  const char* not_written_key() const noexcept { return row_of(format).not_written_key; }
};

class flusher {
 public:
  static flusher& instance();

  // Starts the background thread (once) with this wake period.
  void ensure_running(std::chrono::milliseconds period);
  bool running() const noexcept;
  void wake() noexcept;

  // Opens the `next` window (if given) at `at_ticks` and drains every ring:
  // events up to `at_ticks` go to the current window, later ones to `next`.
  // Scopes open at `at_ticks` are clipped there and carried into `next`.
  // Closes and returns the current window (null if none). Throws
  // std::runtime_error, switching nothing, when next's file cannot be made.
  // `discard_api_steps`: drop step annotations opened by profile::step()
  // because PROF_STEP annotates steps in this session.
  // `gpu`: the GPU activities collected for the closing window, written
  // into it and attributed to the scopes that launched them.
  std::shared_ptr<finished_trace> switch_window(std::uint64_t at_ticks, std::optional<window_options> next,
                                                bool discard_api_steps, gpu_batch gpu = {});

  // Raw JSON metadata for the open window; false if none is open.
  bool add_metadata(std::string key, std::string raw_json);

  // Drains now (used by tests and by stop paths).
  void flush_now();

  // pthread_atfork's three moments. prepare takes the flusher's and the
  // registry's locks so the child inherits none held; the child then forgets
  // the parent's thread, open window and other threads' rings (their events
  // belong to the parent's trace) and starts again with no flusher thread.
  void prepare_fork() noexcept;
  void parent_after_fork() noexcept;
  void child_after_fork() noexcept;

 private:
  flusher() = default;
  struct impl;
  static impl& state();
};

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
