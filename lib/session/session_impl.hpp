// Internal to lib/session/: a session's state and the work its files share.
// Each member function is defined in the file of its concept, named above it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "drain/flusher.hpp"
#include "proftrace/distributed.hpp"
#include "proftrace/profile.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

// Guards the running session; recursive because on_trace_ready may call
// back into the session that invoked it.
extern std::recursive_mutex session_mutex;
extern session* active_session;
// Set in a child made by fork(): no CUDA and no collective MPI calls here.
extern bool in_forked_child;

// metadata.cpp: the trace's "clockAlignment", measured `when`.
std::string clock_alignment_json(const std::optional<distributed_info>& dist, std::string_view when);

}  // namespace detail

struct session::impl {
  profile_options opts;
  activity_set activities;  // from start() on, what the session really has (activities())
  activity_set requested;   // the compiled-in subset of what it asked for
  activity_set fallback;    // CPU, where compiled in: recorded when CUDA was named and is missing
  schedule_fn sched;
  bool record_steps = false;
  std::int64_t step_num = 0;
  profiler_action current = profiler_action::none;
  std::uint64_t generation = 0;
  bool scoped_steps = false;  // PROF_STEP ran in this session
  // The last step a PROF_STEP thread drove (entered first) in generation driven_generation.
  std::int64_t driven_step = -1;
  std::uint64_t driven_generation = 0;
  bool api_step_open = false;
  std::thread::id api_step_thread;
  bool trace_open = false;
  activity_set collecting{};  // collectors whose start() succeeded (stopped at stop())
  std::vector<std::pair<std::string, std::string>> preset;
  std::shared_ptr<detail::finished_trace> last;
  std::string last_note;  // why `last` is partial, for the reports
  pid_t last_owner = 0;  // the process whose spool `last` is: a forked child never removes its parent's
  std::map<int, device_memory_stats> session_memory;  // merged over this profile's traces, every start() of it
  std::optional<distributed_info> dist;  // this process's rank, read at start()
  std::string clock_alignment;           // the traces' "clockAlignment", measured at start()
  bool traces_here = true;  // this rank writes traces (trace_ranks), decided at start()
  bool keep_last = false;  // on_trace_ready failed: the spool is the trace, kept and named
  bool running_handler = false;  // exit() from inside the handler must not run it again
  bool warned_handler = false;
  bool warned_start_trace = false;
  bool ended_at_exit = false;    // stopped by the atexit hook: later step() calls do nothing
  mutable bool warned_no_trace = false;
  std::optional<proftrace::rank_averages> job;  // rank_report.cpp: the last trace's report of the job
  std::string job_note;                         // why `job` is empty

  ~impl() { discard_last(); }

  // An execution trace observer is attached (registered or not yet: it may
  // register and start() while the session runs).
  bool observing() const { return opts.execution_trace_observer != nullptr; }

  // spool.cpp: each trace's spool, from its name to its removal.
  trace_format stream_format() const;
  bool profile_only() const;  // stream_format() is none: no trace, no spool
  std::string no_file_reason() const;  // why a profile-only session writes no trace
  detail::window_options window_for_next_trace();
  void discard_last();
  std::filesystem::path keep_last_spool();

  // metadata.cpp: what the trace says of itself in its head.
  void add_head_metadata(detail::window_options& w) const;
  void align_after_mpi_init();
  void align_at_stop(std::string_view when);

  // trace_handler.cpp: on_trace_ready.
  void check_handler_destination() const;
  void trace_ready(session& self);
  void handler_failed(const std::string& why);

  // collectors.cpp: the collectors this session runs.
  void start_collectors();
  void stop_collectors();
  std::uint32_t recording_bits() const;
  detail::gpu_batch take_gpu();
  void gate_cuda_profiler(bool start);

  // steps.cpp: the schedule's steps and the traces they open and close.
  void set_recording(bool on);
  void start_trace();
  void start_trace_or_warn(bool throws);
  void stop_trace();
  void restart_trace(bool throws);
  void transit(session& self, profiler_action previous, std::optional<profiler_action> next, bool throws = false);
  void open_api_step();
  void close_api_step();
  void advance(session& self);

  // reports.cpp: the finished trace and what the reports say of it.
  void finish(std::shared_ptr<detail::finished_trace> done);
  void merge_memory_stats();
  std::string no_trace_reason(bool running) const;

  // rank_report.cpp: the job's report over MPI (across_ranks).
  void reduce_across_ranks();

  // exports.cpp
  void warn_no_trace(const char* what, const std::filesystem::path& path, bool running) const;
};

}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
