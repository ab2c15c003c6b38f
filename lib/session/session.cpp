#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/json/parse.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "drain/flusher.hpp"
#include "formats/json_text.hpp"
#include "formats/stack_frames.hpp"
#include "reports/memory_timeline.hpp"
#include "proftrace/cuda.hpp"
#include "proftrace/distributed.hpp"
#include "proftrace/detail/recorder.hpp"
#include "proftrace/execution_trace.hpp"
#include "proftrace/profile.hpp"
#include "proftrace/trace_handler.hpp"
#include "process_hooks.hpp"
#include "collect/collector_hooks.hpp"
#include "recording/registry.hpp"
#include "c_api/c_config.hpp"
#include "tensorboard_handler.hpp"
#include "formats/trace_formats.hpp"
#include "spool/export_temporary.hpp"
#include "spool/trace_file.hpp"
#include "helpers/warn.hpp"
#include "collect/mpi/bridge.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace {

// Guards the running session; recursive because on_trace_ready may call
// back into the session that invoked it.
std::recursive_mutex session_mutex;
session* active_session = nullptr;
std::uint64_t session_generation = 0;
std::uint64_t spool_sequence = 0;

// This run's part of every spool name: its start time and a random number,
// so that a new run with the same pid (containers start every run as pid 1)
// never meets the files a crashed run left behind.
// A plain array, never destroyed: exit() on another thread runs static
// destructors while this thread may still be starting a trace.
const char* run_token() {
  static const auto token = [] {
    std::array<char, 40> text{};
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
    std::snprintf(text.data(), text.size(), "%llx-%08x", static_cast<unsigned long long>(now.count()),
                  static_cast<unsigned>(std::random_device{}()));
    return text;
  }();
  return token.data();
}

// Option keys the trace itself writes: metadata under these names would
// give readers a second, conflicting member.
constexpr std::string_view reserved_metadata_keys[] = {"schemaVersion", "deviceProperties", "displayTimeUnit",
                                                       "baseTimeNanoseconds", "traceEvents", "proftrace",
                                                       "traceName", "distributedInfo", "clockAlignment"};
// Set in a child made by fork(): no CUDA and no collective MPI calls here.
bool in_forked_child = false;

struct thread_steps {
  std::uint64_t generation = 0;
  std::int64_t step = 0;
};
thread_local thread_steps this_thread_steps;

void check_json(std::string_view key, std::string_view value) {
  for (std::string_view reserved : reserved_metadata_keys)
    if (key == reserved)
      throw std::invalid_argument("proftrace: metadata key '" + std::string(key) + "' is reserved: the trace writes it");
  boost::system::error_code ec;
  boost::json::parse(value, ec);
  if (ec) throw std::invalid_argument("proftrace: metadata '" + std::string(key) + "' is not valid JSON: " + ec.message());
}

std::string quoted(std::string_view s) {
  std::string out;
  detail::append_json_string(out, s);
  return out;
}

std::filesystem::path default_spool_dir() {
  if (const char* env = std::getenv("PROFTRACE_SPOOL_DIR"); env && *env) return env;
  std::error_code ec;
  auto tmp = std::filesystem::temp_directory_path(ec);
  return ec ? std::filesystem::path("/tmp") : tmp;
}

std::string distributed_json(const distributed_info& d) {
  // HTA reads the rank with the regex "rank":\s+(\d+): keep the space.
  std::string j = "{\"backend\": ";
  detail::append_json_string(j, d.backend);
  j += ", \"rank\": " + std::to_string(d.rank) + ", \"world_size\": " + std::to_string(d.world_size) + ", \"host\": ";
  detail::append_json_string(j, d.host);
  j += ", \"source\": ";
  detail::append_json_string(j, d.source);
  return j + "}";
}

// True where the process has an MPI library that says it is initialised
// (found with dlsym, as proftrace itself links no MPI).
bool mpi_initialised() noexcept {
  // MPI_Initialized's C signature is the standard's, whatever the MPI.
  using query = int (*)(int*);
  const auto initialized = reinterpret_cast<query>(::dlsym(RTLD_DEFAULT, "PMPI_Initialized"));
  const auto finalized = reinterpret_cast<query>(::dlsym(RTLD_DEFAULT, "PMPI_Finalized"));
  int yes = 0, done = 0;
  return initialized && finalized && initialized(&yes) == 0 && finalized(&done) == 0 && yes && !done;
}

// MPI is in the process but proftrace::mpi is not linked: say once what is lost.
void warn_mpi_without_bridge() {
  static bool warned = false;
  if (warned || !mpi_initialised()) return;
  warned = true;
  detail::warn("MPI is initialised but this program does not link proftrace::mpi (pkg-config proftrace-mpi): "
               "the rank comes from the launcher's environment and no clock offset against other ranks is measured");
}

// How this rank's timestamps relate to the other ranks'. With proftrace::mpi
// linked and MPI initialised (a collective: every rank's start() and stop()
// call it) the offset against rank 0 measured by ping-pong; otherwise each
// host's Unix time as it is.
std::string clock_alignment_json(const std::optional<distributed_info>& dist, std::string_view when) {
  // The exchange is collective: a job whose ranks do not all start and stop
  // sessions together turns it off on every rank, or it would wait forever.
  if (const char* off = std::getenv("PROFTRACE_NO_CLOCK_ALIGNMENT"); off && *off && std::string_view(off) != "0")
    return "{\"method\": \"unix_time\", \"note\": \"PROFTRACE_NO_CLOCK_ALIGNMENT is set: no offset against other "
           "ranks was measured\"}";
  const detail::mpi_bridge* mpi = detail::installed_mpi_bridge();
  if (!mpi) warn_mpi_without_bridge();
  if (mpi && dist && dist->source == "MPI_Comm_rank" && dist->world_size > 1 && !in_forked_child) {
    if (const auto o = mpi->measure_clock_offset(detail::trace_clock_ns, 16)) {
      // at_ns: when, on this rank's trace clock, so that the offsets at
      // start and at stop give the drift between (proftrace merge).
      return "{\"method\": \"mpi_ping_pong\", \"reference_rank\": 0, \"measured\": \"" + std::string(when) +
             "\", \"offset_ns\": " + std::to_string(o->offset_ns) + ", \"round_trip_ns\": " +
             std::to_string(o->round_trip_ns) + ", \"rounds\": " + std::to_string(o->rounds) +
             ", \"at_ns\": " + std::to_string(detail::trace_clock_ns()) + "}";
    }
  }
  return "{\"method\": \"unix_time\", \"note\": \"timestamps are this host's Unix time; no offset against other "
         "ranks was measured\"}";
}

}  // namespace

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

  ~impl() { discard_last(); }

  void discard_last() {
    if (!last) return;
    std::error_code ec;
    // A spool that could not be written completely is kept (its warning
    // named it): `proftrace validate --repair` recovers what it holds.
    if (last_owner == ::getpid() && last->write_error.empty() && !last->spool_is_export && !keep_last)
      std::filesystem::remove(last->path, ec);
    last.reset();
    keep_last = false;
  }
  bool keep_last = false;  // on_trace_ready failed: the spool is the trace, kept and named

  // The trace on_trace_ready could not take: its spool, complete, renamed
  // from .part, is kept. Returns where.
  std::filesystem::path keep_last_spool() {
    if (!last || last_owner != ::getpid()) return {};
    std::filesystem::path kept = last->path;
    if (kept.extension() == ".part") kept.replace_extension();
    std::error_code ec;
    if (kept != last->path) std::filesystem::rename(last->path, kept, ec);
    if (!ec) last->path = kept;
    keep_last = true;
    return last->path;
  }

  // A tensorboard_trace_handler's directory that cannot be made or written
  // says so at start(), not after the whole run. A directory made only to
  // find out is removed again: the handler makes it with its first trace.
  void check_handler_destination() const {
    const auto* handler = opts.on_trace_ready.target<detail::tensorboard_handler>();
    if (!handler) return;
    std::error_code ec;
    std::filesystem::path first_made;  // the outermost directory the probe creates
    for (std::filesystem::path p = handler->dir; !p.empty() && !std::filesystem::exists(p, ec); p = p.parent_path()) {
      first_made = p;
      if (p == p.parent_path()) break;
    }
    if (!first_made.empty()) std::filesystem::create_directories(handler->dir, ec);
    const bool writable = !ec && ::access(handler->dir.c_str(), W_OK) == 0;
    if (!first_made.empty() && !ec) std::filesystem::remove_all(first_made, ec);
    if (writable) return;
    detail::warn("the trace handler's directory '" + handler->dir.string() + "' cannot be written (" +
                 (ec ? ec.message() : std::string(std::strerror(errno))) +
                 "): recording goes on, and each trace is kept in the spool directory instead, named in a warning");
  }

  // on_trace_ready, run by step() or stop() (or a PROF_STEP): a failure is
  // one warning per session, never an exception out of them.
  void trace_ready(session& self) {
    if (!opts.on_trace_ready) return;
    running_handler = true;
    try {
      opts.on_trace_ready(self);
    } catch (const std::exception& e) {
      handler_failed(e.what());
    } catch (...) {
      handler_failed("an exception that is not a std::exception");
    }
    running_handler = false;
  }
  // One warning per session; every trace the handler could not take is kept.
  void handler_failed(const std::string& why) {
    const std::filesystem::path kept = keep_last_spool();
    if (std::exchange(warned_handler, true)) return;
    detail::warn("on_trace_ready failed: " + why +
                 (kept.empty() ? std::string(" (later failures of this session are not reported)")
                               : "; the trace is kept at '" + kept.string() +
                                     "' (later failures are not reported; their traces are kept beside it)"));
  }
  bool running_handler = false;  // exit() from inside the handler must not run it again
  bool warned_handler = false;
  bool warned_start_trace = false;
  bool ended_at_exit = false;    // stopped by the atexit hook: later step() calls do nothing

  // The spool's format: the option's, else the handler's.
  trace_format stream_format() const {
    if (opts.stream_format != trace_format::automatic) return opts.stream_format;
    const auto* handler = opts.on_trace_ready.target<detail::tensorboard_handler>();
    return handler ? handler->format : trace_format::json;
  }

  detail::window_options window_for_next_trace() {
    detail::window_options w;
    w.format = stream_format();
    const std::filesystem::path dir = opts.spool_dir.empty() ? default_spool_dir() : opts.spool_dir;
    w.path = dir / ("proftrace-" + std::to_string(::getpid()) + "-" + run_token() + "-" +
                    std::to_string(++spool_sequence) +
                    detail::trace_file_suffix(w.format, detail::compression::none) + ".part");
    if (dist) w.head_metadata.emplace_back("distributedInfo", distributed_json(*dist));
    w.head_metadata.emplace_back("clockAlignment", clock_alignment);
    if (opts.profile_memory) w.head_metadata.emplace_back("profile_memory", "1");
    if (opts.with_stack) w.head_metadata.emplace_back("with_stack", "1");
    if (opts.record_shapes) w.head_metadata.emplace_back("record_shapes", "1");
    if (opts.with_modules) w.head_metadata.emplace_back("with_modules", "1");
    if (opts.with_flops) w.head_metadata.emplace_back("with_flops", "1");
    for (auto& kv : preset) w.head_metadata.push_back(kv);
    w.record_shapes = opts.record_shapes;
    w.with_stack = opts.with_stack;
    w.with_modules = opts.with_modules;
    w.retain_events = opts.retain_events || observing();
    w.first_step = record_steps ? step_num : -1;
    for (const detail::collector_hooks* c : detail::build_collectors())
      if (c->open_window && activities.contains(c->kind)) c->open_window(opts, w);
    return w;
  }

  std::uint32_t recording_bits() const {
    std::uint32_t bits = detail::state_session;
    if (opts.record_shapes) bits |= detail::state_record_shapes;
    for (const detail::collector_hooks* c : detail::build_collectors())
      if (c->state_bits && activities.contains(c->kind)) bits |= c->state_bits(opts);
    return bits;
  }

  void set_recording(bool on) {
    detail::session_state.store(on ? recording_bits() : detail::state_session, std::memory_order_release);
  }

  // An execution trace observer is attached (registered or not yet: it may
  // register and start() while the session runs).
  bool observing() const { return opts.execution_trace_observer != nullptr; }

  // Why there is no finished trace to report (the reports' note).
  std::string no_trace_reason(bool running) const {
    if (!opts.enabled) return "the profiler is disabled (enabled = false): nothing was recorded";
    if (running) return "no trace has finished yet: the profiler is still running (stop() it first)";
    if (generation == 0) return "the profiler was never started: nothing was recorded";
    std::string why = "no trace finished: the run stopped at step " + std::to_string(step_num) +
                      ", before its schedule recorded a trace";
    // Where the schedule would have begun to record, for the user to compare.
    constexpr std::int64_t horizon = 1'000'000;
    for (std::int64_t step = step_num + 1; step <= step_num + horizon; ++step) {
      const profiler_action a = sched(step);
      if (a == profiler_action::record || a == profiler_action::record_and_save)
        return why + " (its first recording step is " + std::to_string(step) + ")";
    }
    return why + " (its schedule records no later step)";
  }

  // Says once per session, for an export that has no trace to write.
  void warn_no_trace(const char* what, const std::filesystem::path& path, bool running) const {
    if (std::exchange(warned_no_trace, true)) return;
    detail::warn(std::string(what) + ": nothing written to '" + path.string() + "': " + no_trace_reason(running));
  }
  mutable bool warned_no_trace = false;

  void finish(std::shared_ptr<detail::finished_trace> done) {
    if (!done) return;
    // acc_events: the earlier cycles' figures, added below once the
    // execution trace observer has seen this cycle's events alone.
    const std::shared_ptr<const detail::finished_trace> earlier = opts.acc_events ? last : nullptr;
    discard_last();
    last_note.clear();
    last = std::move(done);
    last_owner = ::getpid();
    // Start order, and the longest first among equal starts, so that a scope
    // precedes the scopes it encloses (they complete, and arrive, first).
    std::stable_sort(last->events.begin(), last->events.end(), [](const function_event& a, const function_event& b) {
      if (a.start_unix_ns != b.start_unix_ns) return a.start_unix_ns < b.start_unix_ns;
      return a.duration_ns > b.duration_ns;
    });
    if (observing()) opts.execution_trace_observer->on_trace(last->events, last->start_unix_ns, last->stop_unix_ns);
    if (!opts.retain_events) {
      last->events.clear();
      last->events.shrink_to_fit();
      last->retained_events = false;
    }
    if (earlier) accumulate_into(*last, *earlier);
    merge_memory_stats();
  }

  // acc_events (torch's profile(acc_events=True)): the reports of the trace
  // that closes now hold every earlier cycle's events as well. Its file
  // holds only its own cycle, as torch's exported trace does.
  static void accumulate_into(detail::finished_trace& done, const detail::finished_trace& earlier) {
    std::map<std::tuple<std::string, std::string, std::vector<std::string>>, std::size_t> index;
    for (std::size_t i = 0; i < done.averages.size(); ++i)
      index.try_emplace({done.averages[i].key, done.averages[i].input_shapes, done.averages[i].stack}, i);
    std::vector<event_average> rows = earlier.averages;  // earlier keys first: their first appearance
    std::vector<bool> taken(done.averages.size(), false);
    for (auto& r : rows) {
      const auto it = index.find({r.key, r.input_shapes, r.stack});
      if (it == index.end()) continue;
      r.merge(done.averages[it->second]);
      taken[it->second] = true;
    }
    for (std::size_t i = 0; i < done.averages.size(); ++i)
      if (!taken[i]) rows.push_back(std::move(done.averages[i]));
    done.averages = std::move(rows);
    done.losses.dropped += earlier.losses.dropped;
    done.losses.overwritten += earlier.losses.overwritten;
    done.losses.unattached += earlier.losses.unattached;
    done.losses.late += earlier.losses.late;
    done.losses.unpaired += earlier.losses.unpaired;
    done.instant_events += earlier.instant_events;
    done.counter_events += earlier.counter_events;
    if (done.retained_events && earlier.retained_events)
      done.events.insert(done.events.begin(), earlier.events.begin(), earlier.events.end());
  }

  void merge_memory_stats() {
    for (auto& [device, d] : session_memory) d.trace = {};
    for (const device_memory_stats& t : detail::memory_stats_of(last->memory)) {
      device_memory_stats& d = session_memory[t.device];
      d.device = t.device;
      d.current_allocated = t.current_allocated;
      d.current_reserved = t.current_reserved;
      d.trace = t.trace;
      d.session.merge(t.trace);
      for (const step_memory_peaks& step : t.steps) {
        auto at = std::lower_bound(d.steps.begin(), d.steps.end(), step.step,
                                   [](const step_memory_peaks& s, std::int64_t n) { return s.step < n; });
        if (at == d.steps.end() || at->step != step.step) at = d.steps.insert(at, {step.step, {}});
        at->peaks.merge(step.peaks);
      }
    }
  }

  // The GPU work of the trace that closes now (none without CUDA).
  detail::gpu_batch take_gpu() {
    detail::gpu_batch all;
    for (const detail::collector_hooks* c : detail::build_collectors()) {
      if (!c->take || !collecting.contains(c->kind)) continue;
      detail::gpu_batch b = c->take();
      all.losses.add(b.losses);
      all.activities.insert(all.activities.end(), std::make_move_iterator(b.activities.begin()),
                            std::make_move_iterator(b.activities.end()));
    }
    return all;
  }

  // cudaProfilerStart/Stop around each trace (cuda_profiler_gating).
  void gate_cuda_profiler(bool start) {
    if (!opts.cuda_profiler_gating) return;
#if PROFTRACE_WITH_CUDA
    try {
      start ? cuda::profiler_start() : cuda::profiler_stop();
    } catch (const std::exception& e) {
      detail::warn(std::string(e.what()) + " (cuda_profiler_gating)");
    }
#else
    (void)start;
#endif
  }

  void start_trace() {
    take_gpu();  // GPU work from before this trace (a wait or warmup phase) belongs to none
    // Throws, recording nothing, when the spool cannot be created.
    detail::flusher::instance().switch_window(detail::now_ticks(), window_for_next_trace(), scoped_steps);
    trace_open = true;
    set_recording(true);
    gate_cuda_profiler(true);
  }

  // start_trace from step(), stop() or a PROF_STEP: a spool that cannot be
  // made (its directory removed, a full disk) loses that trace, with one
  // warning per session; the schedule goes on.
  void start_trace_or_warn(bool throws) {
    try {
      start_trace();
    } catch (const std::exception& e) {
      if (throws) throw;
      if (!std::exchange(warned_start_trace, true))
        detail::warn(std::string("a trace could not be started, so it is not recorded: ") + e.what() +
                     " (later failures of this session are not reported)");
    }
  }

  void stop_trace() {
    if (!trace_open) return;
    gate_cuda_profiler(false);
    set_recording(false);
    const std::uint64_t t = detail::now_ticks();
    trace_open = false;
    finish(detail::flusher::instance().switch_window(t, std::nullopt, scoped_steps, take_gpu()));
  }

  // stop_trace immediately followed by start_trace: one switch, so recording
  // never pauses and a scope open across it appears in both traces.
  void restart_trace(bool throws) {
    if (!trace_open) return start_trace_or_warn(throws);
    try {
      const std::uint64_t t = detail::now_ticks();
      finish(detail::flusher::instance().switch_window(t, window_for_next_trace(), scoped_steps, take_gpu()));
    } catch (...) {
      stop_trace();  // the next trace's file could not be made: end this one cleanly
      start_trace_or_warn(throws);  // and report it as a start that failed
    }
  }

  // `throws`: from start(), whose caller learns that the first trace's spool
  // cannot be made; from step() and stop(), problems are warnings.
  void transit(session& self, profiler_action previous, std::optional<profiler_action> next, bool throws = false) {
    const detail::in_profiler_guard own_allocations;  // and on_trace_ready's: not the program's memory
    const auto ops = transition(previous, next);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      switch (ops[i]) {
        case transition_op::warn_warmup_then_none: detail::warn("Incorrect schedule: WARMUP followed by NONE"); break;
        case transition_op::warn_record_then_none: detail::warn("Incorrect schedule: RECORD followed by NONE"); break;
        case transition_op::warn_record_then_warmup: detail::warn("Incorrect schedule: RECORD followed by WARMUP"); break;
        case transition_op::prepare_trace: break;  // the CPU collector needs no preparation
        case transition_op::start_trace: start_trace_or_warn(throws); break;
        case transition_op::stop_trace: {
          const bool restarts = std::find(ops.begin() + static_cast<std::ptrdiff_t>(i), ops.end(),
                                          transition_op::start_trace) != ops.end();
          if (!restarts) {
            stop_trace();
            break;
          }
          restart_trace(throws);
          // trace_ready still runs (below); the later start_trace is done.
          for (std::size_t j = i + 1; j < ops.size(); ++j)
            if (ops[j] == transition_op::trace_ready) trace_ready(self);
          return;
        }
        case transition_op::trace_ready: trace_ready(self); break;
      }
    }
  }

  void stop_collectors() {
    for (const detail::collector_hooks* c : detail::build_collectors())
      if (c->stop && collecting.contains(c->kind)) c->stop();
    collecting = {};
  }

  // Starts the collectors asked for; drops from `activities` those that
  // cannot collect now. CUDA named in `activities` and missing warns once
  // per process; default activities take CUDA only where it is really
  // there, silently, as torch, and the CPU profile is recorded instead.
  void start_collectors() {
    activities = requested;
    collecting = {};
    for (const detail::collector_hooks* c : detail::build_collectors()) {
      if (!activities.contains(c->kind)) continue;
      if (!c->start || c->start(opts, opts.activities.contains(c->kind), in_forked_child))
        collecting = collecting | activity_set{c->kind};
      else
        activities = activity_set::from_bits(activities.bits() & ~activity_set{c->kind}.bits());
    }
    if (requested.contains(activity::cuda) && !collecting.contains(activity::cuda)) activities = activities | fallback;
  }

  void open_api_step() {
    if (!record_steps || scoped_steps || !detail::recording()) return;
    detail::record_begin(&detail::api_step_site, static_cast<std::uint64_t>(step_num));
    api_step_open = true;
    api_step_thread = std::this_thread::get_id();
  }

  void close_api_step() {
    if (!api_step_open) return;
    api_step_open = false;
    if (api_step_thread != std::this_thread::get_id()) return;  // the flusher clips it
    const std::uint64_t t = detail::now_ticks();
    if (auto* r = detail::thread_ring())
      r->push(t, reinterpret_cast<std::uintptr_t>(&detail::api_step_site), scoped_steps ? detail::cancel_end : 0,
              detail::event_kind::end);
  }

  // A session that started before MPI_Init (PROFTRACE_CONFIG) takes its
  // rank from MPI and measures its clock offset at the first step or stop
  // after it, or in MPI_Init itself where proftrace::mpi_calls is linked:
  // points every rank reaches together, as start() is. The trace already
  // open gets it in its tail (its head was written before).
  void align_after_mpi_init() {
    if (!detail::installed_mpi_bridge() || (dist && dist->source == "MPI_Comm_rank")) return;
    auto now = distributed();
    if (!now || now->source != "MPI_Comm_rank") return;  // MPI not initialised yet
    dist = std::move(now);
    clock_alignment = clock_alignment_json(dist, "after_mpi_init");
    if (trace_open && clock_alignment.find("offset_ns") != std::string::npos)
      detail::flusher::instance().add_metadata("clockAlignmentAfterMpiInit", clock_alignment);
  }

  void advance(session& self) {
    align_after_mpi_init();
    const profiler_action previous = current;
    ++step_num;
    current = sched(step_num);
    transit(self, previous, current);
  }
};

session::session(profile_options options, activity_set compiled) : impl_(std::make_unique<impl>()) {
  impl& s = *impl_;
  s.opts = std::move(options);
  if (s.opts.activities.empty() || !PROFTRACE_ENABLED) {
    s.activities = compiled;
  } else {
    s.activities = s.opts.activities & compiled;
    for (activity a : {activity::cpu, activity::cuda, activity::memory, activity::flops, activity::nvtx,
                       activity::counters, activity::openmp})
      if (s.opts.activities.contains(a) && !compiled.contains(a))
        detail::warn("activity " + std::string(to_string(a)) + " is not compiled into this build; ignored");
  }
  // A build with PROFTRACE_ENABLED=0 compiles no collector in: its sessions
  // run and write valid traces with nothing in them, so a program need not
  // change to build without profiling.
  if (s.activities.empty() && PROFTRACE_ENABLED) throw std::invalid_argument("No valid profiler activities found");
  s.requested = s.activities;
  s.fallback = compiled & activity_set{activity::cpu};
#if !PROFTRACE_WITH_CUDA
  if (s.opts.cuda_profiler_gating) detail::warn("cuda_profiler_gating needs a build with CUDA; ignored");
#endif
#if !PROFTRACE_WITH_COUNTERS
  if (!s.opts.counters.empty()) detail::warn("counters need a build with PROFTRACE_WITH_COUNTERS (Linux); ignored");
#endif
  if (s.opts.flush_period <= std::chrono::milliseconds::zero())
    throw std::invalid_argument("proftrace: flush_period must be positive");
  if (s.opts.ring_events < 64 || (s.opts.ring_events & (s.opts.ring_events - 1)) != 0)
    throw std::invalid_argument("proftrace: ring_events must be a power of two >= 64");
  s.record_steps = static_cast<bool>(s.opts.schedule);
  s.sched = s.opts.schedule ? s.opts.schedule : schedule_fn(default_schedule);
  s.current = s.sched(0);
}

session::~session() {
  try {
    stop();
  } catch (const std::exception& e) {
    detail::warn(std::string("stopping the profiler at destruction failed: ") + e.what());
  } catch (...) {
  }
}

void session::start() {
  // A session PROFTRACE_CONFIG started gives way to the program's own (lib/c_api/c_api.cpp).
  if (impl_->opts.enabled) detail::yield_environment_session(this);
  std::lock_guard lock(session_mutex);
  if (!impl_->opts.enabled) return;
  if (active_session == this)
    throw std::logic_error("proftrace: the profiler is not reentrant: this profiler is already running");
  if (active_session) throw std::logic_error("proftrace: another profiler is already running; stop it before starting a new one");
  impl& s = *impl_;
  s.check_handler_destination();
  detail::calibrate_clock();  // chooses the time source before anything is recorded
  detail::set_overflow_policy(s.opts.overflow.value_or(static_cast<overflow_policy>(PROFTRACE_OVERFLOW_POLICY)));
  detail::registry::instance().set_ring_events(s.opts.ring_events);
  detail::flusher::instance().ensure_running(s.opts.flush_period);
  detail::session_access::install_process_hooks();
  s.generation = ++session_generation;
  s.scoped_steps = false;
  s.start_collectors();
  s.dist = distributed();
  s.clock_alignment = clock_alignment_json(s.dist, "at_start");
  active_session = this;
  detail::session_state.store(detail::state_session, std::memory_order_release);
  try {
    if (s.observing()) s.opts.execution_trace_observer->on_session_start();
    s.ended_at_exit = false;
    s.transit(*this, profiler_action::none, s.current, /*throws=*/true);
  } catch (...) {
    if (s.observing()) s.opts.execution_trace_observer->on_session_abandoned();
    s.set_recording(false);
    s.trace_open = false;
    s.stop_collectors();
    detail::session_state.store(0, std::memory_order_release);
    active_session = nullptr;
    throw;
  }
  s.open_api_step();
}

void session::stop() {
  std::lock_guard lock(session_mutex);
  if (active_session != this) return;
  impl& s = *impl_;
  s.close_api_step();
  // Collective on every rank, like the one at start(): the drift since then,
  // in the tail of the trace still open. Not when exit() or a signal ends
  // the session: the other ranks are not stopping, and waiting for them
  // would hang the job. The profiler's own allocations.
  const detail::in_profiler_guard own_work;
  if (!s.ended_at_exit) s.align_after_mpi_init();
  if (std::string at_stop = s.ended_at_exit ? std::string() : clock_alignment_json(s.dist, "at_stop");
      s.trace_open && at_stop.find("offset_ns") != std::string::npos)
    detail::flusher::instance().add_metadata("clockAlignmentAtStop", std::move(at_stop));
  {
    struct reset_on_exit {
      impl& s;
      ~reset_on_exit() {
        detail::session_state.store(0, std::memory_order_release);
        active_session = nullptr;
        s.stop_collectors();
      }
    } reset{s};
    // Torch closes a trace still recording at the end; the report says it
    // stopped short of the schedule's last active step.
    const bool cut_short = s.record_steps && s.trace_open && s.current == profiler_action::record;
    // Stopped in warmup, torch finishes a trace of nothing: the report says so.
    const bool in_warmup = s.record_steps && s.current == profiler_action::warmup;
    const auto* before = s.last.get();  // the note goes on the trace this stop finishes, if it finishes one
    const std::int64_t at_step = s.step_num;
    s.transit(*this, s.current, std::nullopt);
    if (cut_short && s.last)
      s.last_note = "partial trace: stop() ended it at step " + std::to_string(at_step) +
                    ", before its schedule's last active step";
    if (in_warmup && s.last && s.last.get() != before)
      s.last_note = "empty trace: stop() ended it at step " + std::to_string(at_step) +
                    ", during its schedule's warmup (a schedule records from its first active step)";
  }
  // The observer writes its graph over the same window; a path that became
  // unwritable is a warning here, as any failure inside stop().
  if (s.observing()) {
    try {
      s.opts.execution_trace_observer->on_session_stop();
    } catch (const std::exception& e) {
      detail::warn(std::string(e.what()) + "; the session's trace is not affected");
    }
  }
}

void session::step() {
  std::lock_guard lock(session_mutex);
  if (!impl_->opts.enabled) return;
  if (active_session != this) {
    // exit() on another thread stopped it (the atexit hook): the loop that
    // still calls step() until the process ends is not an error.
    if (impl_->ended_at_exit) return;
    throw std::logic_error("proftrace: step() called on a profiler that is not running");
  }
  impl& s = *impl_;
  s.close_api_step();
  s.advance(*this);
  s.open_api_step();
}

void session::flush() { detail::flusher::instance().flush_now(); }

bool session::running() const {
  std::lock_guard lock(session_mutex);
  return active_session == this;
}
std::int64_t session::step_num() const {
  std::lock_guard lock(session_mutex);
  return impl_->step_num;
}
profiler_action session::current_action() const {
  std::lock_guard lock(session_mutex);
  return impl_->current;
}
activity_set session::activities() const { return impl_->activities; }

bool session::has_trace() const {
  std::lock_guard lock(session_mutex);
  return impl_->opts.enabled && impl_->last != nullptr;
}

event_averages session::key_averages(bool group_by_input_shape, int group_by_stack_n) const {
  std::lock_guard lock(session_mutex);
  event_averages out;
  out.grouped_by_input_shape = group_by_input_shape;
  out.profile_memory = impl_->opts.profile_memory && impl_->activities.contains(activity::memory);
  if (!has_trace()) {
    out.note = impl_->no_trace_reason(active_session == this);
    return out;
  }
  const detail::finished_trace& last = *impl_->last;
  out.note = impl_->last_note;
  out.losses = last.losses;
  out.instant_events = last.instant_events;
  out.counter_events = last.counter_events;
  const auto stack_n = static_cast<std::size_t>(std::max(group_by_stack_n, 0));
  std::unordered_map<std::string, std::size_t> index;
  for (const auto& r : last.averages) {
    std::string key = r.key;
    key += '\x1f';
    if (group_by_input_shape) key += r.input_shapes;
    for (std::size_t i = 0; i < std::min(stack_n, r.stack.size()); ++i) key += '\n' + r.stack[i];
    auto [it, fresh] = index.try_emplace(std::move(key), out.rows.size());
    if (fresh) {
      event_average row = r;
      if (!group_by_input_shape) row.input_shapes.clear();
      row.stack.resize(std::min(stack_n, r.stack.size()));
      out.rows.push_back(std::move(row));
      continue;
    }
    out.rows[it->second].merge(r);
  }
  return out;
}

std::string session::table(const table_options& options) const { return key_averages().table(options); }

event_average session::total_average() const { return key_averages().total_average(); }

double session::self_cpu_time_total() const { return key_averages().self_cpu_time_total(); }

std::vector<function_event> session::events() const {
  std::lock_guard lock(session_mutex);
  if (!has_trace()) return {};
  if (!impl_->last->retained_events) throw std::logic_error("proftrace: events() needs profile_options::retain_events = true");
  return impl_->last->events;
}

void session::export_stacks(const std::filesystem::path& path, std::string_view metric) const {
  std::string text;
  {
    std::lock_guard lock(session_mutex);
    const auto& last = impl_->last;
    if (!(last ? last->with_stack : impl_->opts.with_stack))
      throw std::logic_error("proftrace: export_stacks() requires with_stack=true");
    event_averages all;
    if (has_trace()) all.rows = last->averages;  // finest grouping: every distinct stack
    // A frame is its scope's name, as a line's last frame (the row's own
    // key) and as `proftrace stacks` writes the same trace: one scope, one
    // frame, caller or not. (A row's stack holds "file(line): name".)
    for (event_average& r : all.rows)
      for (std::string& frame : r.stack)
        frame = std::string(detail::frame_name(frame));
    text = all.collapsed_stacks(metric);  // checks the metric, trace or not
    if (!has_trace()) return impl_->warn_no_trace("export_stacks()", path, active_session == this);
  }
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw std::runtime_error("proftrace: cannot write stacks '" + path.string() + "': " + std::strerror(errno));
  out << text;
  out.flush();
  if (!out) throw std::runtime_error("proftrace: cannot write stacks '" + path.string() + "'");
}

void session::export_chrome_trace(const std::filesystem::path& path) const {
  std::lock_guard lock(session_mutex);
  if (!has_trace()) return impl_->warn_no_trace("export_chrome_trace()", path, active_session == this);
  // A spool that could not be written completely exports what it holds,
  // its "proftrace" counters marking the trace incomplete.
  const auto& last = impl_->last;
  if (!detail::names_a_trace_suffix(path))
    detail::warn("proftrace: export_chrome_trace('" + path.string() + "'): '" + path.extension().string() +
                 "' names no trace format (" + detail::format_values(".", ", ") +
                 "): written as uncompressed Kineto JSON");
  const detail::format_row& to = *detail::trace_name_of(path).format;
  const detail::format_row& from = detail::row_of(last->format);
  if (&to == &from) {
    // The first plain export on the spool's file system takes the spool itself.
    const bool ours = impl_->last_owner == ::getpid() && !last->spool_is_export && last->write_error.empty();
    if (ours && last->spool->move_to(last->tail(path.string()), path)) {
      last->path = path;
      last->spool_is_export = true;
      return;
    }
    last->spool->export_to(last->tail(path.string()), path);
    return;
  }
  // The other format: the spool's own as it would export, converted. That
  // copy is a temporary of `path` (export_temporary.hpp): a kill leaves it
  // for the next export to `path` to remove.
  std::optional<detail::export_temporary> own;
  try {
    own.emplace(path, detail::export_temporary_options{.suffix = std::string(from.suffix), .or_temp_dir = true});
  } catch (const std::system_error& e) {
    throw std::runtime_error("proftrace: cannot write trace '" + path.string() + "': " + e.code().message());
  }
  try {
    last->spool->export_to(last->tail(path.string()), own->path(), &*own);
    detail::convert_trace(from, to, own->path(), path);
  } catch (const std::runtime_error& e) {
    // The converters' messages name the file; the library's all start with "proftrace: ".
    if (std::string_view(e.what()).starts_with("proftrace: ")) throw;
    throw std::runtime_error(std::string("proftrace: ") + e.what());
  }
}

void session::export_memory_timeline(const std::filesystem::path& path, std::string_view device) const {
  std::string text;
  {
    std::lock_guard lock(session_mutex);
    const auto& last = impl_->last;
    if (!impl_->opts.profile_memory)
      throw std::logic_error("proftrace: export_memory_timeline() requires profile_memory=true");
    int id = -1;
    if (!device.empty()) id = detail::parse_memory_device(device);
    if (!has_trace()) return impl_->warn_no_trace("export_memory_timeline()", path, active_session == this);
    if (device.empty() && std::any_of(last->memory.begin(), last->memory.end(), [](const auto& r) { return r.device == 0; }))
      id = 0;
    const std::string name = path.filename().string();
    if (name.ends_with(".html")) {
      memory_peaks peaks;
      for (const auto& d : detail::memory_stats_of(last->memory))
        if (d.device == id) peaks = d.trace;
      text = detail::timeline_html(detail::coalesce(last->memory, id), id, peaks);
    } else if (name.ends_with("raw.json.gz")) {
      text = detail::raw_timeline_json(last->memory, id);
    } else {
      text = detail::timeline_json(detail::coalesce(last->memory, id));
    }
  }
  detail::write_compressed(path, text);
}

std::vector<device_memory_stats> session::memory_stats() const {
  std::lock_guard lock(session_mutex);
  std::vector<device_memory_stats> out;
  if (!has_trace()) return out;
  for (const auto& [device, d] : impl_->session_memory) out.push_back(d);
  return out;
}

std::filesystem::path session::trace_path() const {
  std::lock_guard lock(session_mutex);
  return impl_->last ? impl_->last->path : std::filesystem::path{};
}

void session::add_metadata(std::string_view key, std::string_view value) { add_metadata_json(key, quoted(value)); }

void session::add_metadata_json(std::string_view key, std::string_view json_value) {
  check_json(key, json_value);
  std::lock_guard lock(session_mutex);
  impl& s = *impl_;
  if (s.trace_open && detail::flusher::instance().add_metadata(std::string(key), std::string(json_value))) return;
  if (s.last) {
    s.last->tail_metadata.emplace_back(key, json_value);
    return;
  }
  s.preset.emplace_back(key, json_value);
}

void session::preset_metadata_json(std::string_view key, std::string_view json_value) {
  check_json(key, json_value);
  std::lock_guard lock(session_mutex);
  impl_->preset.emplace_back(key, json_value);
}

namespace detail {

namespace {
std::atomic<bool> exit_hook_ran{false};
void finish_at_exit() {
  exit_hook_ran.store(true);
  session_access::finish_running("the program exited");
}
}  // namespace

void session_access::install_process_hooks() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::atexit(finish_at_exit);
    ::pthread_atfork(prepare_fork, parent_after_fork, child_after_fork);
  });
  // A session started by an atexit handler that runs after ours (registered
  // before it): the C library runs what exit processing registers, so it is
  // finished by one more call.
  if (exit_hook_ran.exchange(false)) std::atexit(finish_at_exit);
}

void session_access::finish_running(std::string_view why) noexcept {
  try {
    std::lock_guard lock(session_mutex);
    session* s = active_session;
    if (!s) return;
    session::impl& im = *s->impl_;
    if (im.running_handler) return;  // exit() from on_trace_ready: that handler has the trace
    im.ended_at_exit = true;
    s->stop();
    if (!im.last || im.last_owner != ::getpid()) return;
    if (im.opts.on_trace_ready) {  // it has had the trace
      im.discard_last();
      return;
    }
    // Nobody is left to export it: the spool, complete now, is the trace.
    std::filesystem::path kept = im.last->path;
    if (kept.extension() == ".part") kept.replace_extension();
    std::error_code ec;
    std::filesystem::rename(im.last->path, kept, ec);
    if (ec) kept = im.last->path;
    im.last.reset();  // no longer ours to remove
    warn(std::string(why) + " with the profiler running: its trace was stopped and kept at '" + kept.string() + "'");
  } catch (const std::exception& e) {
    warn(std::string(why) + " with the profiler running; stopping it failed: " + e.what());
  } catch (...) {
  }
}

void session_access::prepare_fork() noexcept {
  session_mutex.lock();
  flusher::instance().prepare_fork();
}

void session_access::parent_after_fork() noexcept {
  flusher::instance().parent_after_fork();
  session_mutex.unlock();
}

void session_access::child_after_fork() noexcept {
  // A recursive mutex remembers its owner's thread id, which the forking
  // thread no longer has here: unlocking would fail. Start it afresh.
  ::new (static_cast<void*>(&session_mutex)) std::recursive_mutex();
  flusher::instance().child_after_fork();
  in_forked_child = true;
  session* s = active_session;
  active_session = nullptr;
  session_state.store(0, std::memory_order_release);
  if (s) {
    session::impl& im = *s->impl_;
    im.trace_open = false;  // the parent's trace: the parent closes it
    im.api_step_open = false;
    im.collecting = {};  // the parent's: the parent stops them
    if (im.opts.in_forked_child == fork_child::fresh_session) {
      try {
        s->start();
      } catch (const std::exception& e) {
        warn(std::string("the forked child's fresh session could not start: ") + e.what());
      }
    }
  }
}

void on_mpi_initialised() noexcept { session_access::mpi_started(); }

void on_mpi_finalizing() noexcept { session_access::mpi_ending(); }

void session_access::mpi_started() noexcept {
  try {
    std::lock_guard lock(session_mutex);
    if (active_session && !active_session->impl_->ended_at_exit) active_session->impl_->align_after_mpi_init();
  } catch (...) {
    warn("measuring the clock offset after MPI_Init failed");
  }
}

void session_access::mpi_ending() noexcept {
  try {
    std::lock_guard lock(session_mutex);
    if (!active_session) return;
    session::impl& s = *active_session->impl_;
    if (s.ended_at_exit || !s.trace_open) return;
    if (std::string at_stop = clock_alignment_json(s.dist, "at_mpi_finalize"); at_stop.find("offset_ns") != std::string::npos)
      flusher::instance().add_metadata("clockAlignmentAtStop", std::move(at_stop));
  } catch (...) {
    warn("measuring the clock offset before MPI_Finalize failed");
  }
}

std::int64_t enter_step(bool& drives) noexcept {
  std::lock_guard lock(session_mutex);
  session* s = active_session;
  if (!s) return -1;
  session::impl& im = *s->impl_;
  im.scoped_steps = true;
  thread_steps& mine = this_thread_steps;
  if (mine.generation != im.generation) mine = {im.generation, im.step_num};
  else ++mine.step;
  // The first thread to reach a step drives it: its span is ProfilerStep#N.
  if (im.driven_generation != im.generation || mine.step > im.driven_step) {
    im.driven_generation = im.generation;
    im.driven_step = mine.step;
    drives = true;
  }
  try {
    while (im.step_num < mine.step) im.advance(*s);
  } catch (const std::exception& e) {
    warn(std::string("PROF_STEP: advancing the profiler schedule failed: ") + e.what());
  } catch (...) {
    warn("PROF_STEP: advancing the profiler schedule failed");
  }
  return recording() ? mine.step : -1;
}

}  // namespace detail

namespace detail {
void tensorboard_handler::operator()(session& p) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) throw std::runtime_error("Can't create directory: " + dir.string());
  }
  if (worker_name.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    worker_name = std::string(host) + "_" + std::to_string(::getpid());
    // One file per rank, sorted by rank: rank3_host_pid.
    if (const auto d = distributed()) worker_name = "rank" + std::to_string(d->rank) + "_" + worker_name;
  }
  const auto now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const std::string file = worker_name + "." + std::to_string(now_ns) + trace_file_suffix(format, compressed);
  p.export_chrome_trace(dir / file);
}
}  // namespace detail

trace_ready_fn tensorboard_trace_handler(std::filesystem::path dir, std::string worker_name, bool use_gzip,
                                         trace_format format) {
  return detail::tensorboard_handler{std::move(dir), std::move(worker_name), detail::row_of(format).format,
                                     use_gzip ? detail::compression::gzip : detail::compression::none};
}

}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
