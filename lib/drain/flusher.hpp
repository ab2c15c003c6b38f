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
#include "records/finished_trace.hpp"
#include "records/gpu_batch.hpp"
#include "formats/trace_head.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

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

}  // namespace proftrace::detail
