#include "trace_window.hpp"

#include <unistd.h>

#include <fstream>

#include "formats/json_text.hpp"
#include "formats/trace_formats.hpp"
#include "recording/interned_names.hpp"
#include "recording/registry.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {
std::string process_name() {
  std::ifstream comm("/proc/self/comm");
  std::string name;
  std::getline(comm, name);
  return name.empty() ? std::string("process") : name;
}

trace_head head_of(window_options& o, std::int64_t start_ns) {
  trace_head h;
  h.pid = static_cast<std::int64_t>(::getpid());
  h.process_name = process_name();
  h.start_ns = start_ns;
  h.base_ns = trace_base_ns(start_ns);
  h.devices = o.devices;
  h.metadata = std::move(o.head_metadata);
  h.with_stack = o.with_stack;
  h.with_modules = o.with_modules;
  return h;
}

}  // namespace

trace_window::trace_window(window_options options, std::uint64_t start_ticks, std::uint64_t id)
    : start_ticks(start_ticks),
      id(id),
      opts_(std::move(options)),
      cal_(calibrate_clock()),
      head_(head_of(opts_, cal_.to_unix_ns(start_ticks))),
      aggregator_({.with_stack = opts_.with_stack, .retain_events = opts_.retain_events, .cuda = opts_.cuda}),
      writer_(std::in_place_type<kineto_json_writer>, head_),  // the default format's, replaced below
      names_over_limit_at_open_(names_over_limit()) {
  make_writer(opts_.format);
  if (row_of(opts_.format).profile_only) return;  // no spool
  std::string head;
  each_writer([&](auto& w) { head = w.head(); });
  file_ = std::make_shared<trace_file>(opts_.path, head, result_tail(), row_of(opts_.format).rewrites_tail);
}

std::string& trace_window::buffer() {
  std::string* b = nullptr;
  each_writer([&](auto& w) { b = &w.buffer(); });
  return *b;
}

void trace_window::thread_seen(thread_state& ts) {
  ts.window_seen = id;
  const std::string name = registry::instance().name_of(static_cast<thread_record*>(const_cast<void*>(ts.owner)));
  each_writer([&](auto& w) { w.thread(ts.tid, name); });
}

void trace_window::async(const open_async& a, std::uint64_t async_id, std::int64_t end_ns, std::int64_t end_tid) {
  aggregator_.add_async(a, end_ns, end_tid);
  each_writer([&](auto& w) { w.async(a, async_id, end_ns, end_tid); });
}

void trace_window::withdrawn(const thread_state& ts, const open_scope& s, std::int64_t ns) {
  each_writer([&](auto& w) { w.withdrawn(ts.tid, s, ns); });
}

void trace_window::memory(const thread_state&, const memory_event& m, bool scoped) {
  aggregator_.add_memory(m, scoped);
  each_writer([&](auto& w) { w.memory(m); });
}

void trace_window::instant(const thread_state& ts, const site& where, std::int64_t ns) {
  each_writer([&](auto& w) { w.instant(ts.tid, where, ns); });
}

void trace_window::counter(const thread_state& ts, const site& where, std::int64_t ns, double value) {
  each_writer([&](auto& w) { w.counter(ts.tid, where, ns, value); });
}

// GPU work in the writer's layout, its time added to the scope that
// launched it (self and total CUDA time) and to every enclosing scope
// (total); CUDA allocations as memory events on the thread that called the
// allocator, their bytes counted on the scopes open there.
void trace_window::write_gpu(const gpu_batch& gpu, const std::vector<gpu_memory_event>& allocations) {
  gpu_losses_.add(gpu.losses);
  if (!gpu.activities.empty()) {
    const std::vector<gpu_span> spans = aggregator_.add_gpu(gpu.activities);
    each_writer([&](auto& w) { w.gpu(gpu.activities, spans); });
  }
  if (allocations.empty()) return;
  std::unordered_map<std::uint32_t, std::uint32_t> caller;  // correlation -> host thread
  for (const gpu_activity& a : gpu.activities)
    if (a.kind == gpu_activity_kind::runtime || a.kind == gpu_activity_kind::driver) caller.emplace(a.correlation, a.thread);
  for (const gpu_memory_event& g : allocations) {
    if (!g.m.known) {
      ++counts.unknown_frees;
      continue;
    }
    const auto thread = caller.find(g.activity->correlation);
    const memory_event m{thread != caller.end() ? std::int64_t{thread->second} : head_.pid, to_ns(g.e.ticks),
                         payload_device(g.e.payload), g.activity->address, static_cast<event_kind>(g.e.kind), &g.m};
    aggregator_.add_gpu_memory(*g.activity, m);
    each_writer([&](auto& w) { w.memory(m); });
  }
}

finished_trace trace_window::counters() const {
  finished_trace f;
  f.path = opts_.path;
  f.format = opts_.format;
  f.losses = losses;
  f.counts = counts;
  f.tail_metadata = tail_metadata;
  f.start_unix_ns = head_.start_ns;
  f.with_stack = opts_.with_stack;
  f.overflow = current_overflow_policy();
  f.gpu_losses = gpu_losses_;
  f.retained_events = opts_.retain_events;
  f.names_over_limit = names_over_limit() - names_over_limit_at_open_;
  return f;
}

std::string trace_window::result_tail() const { return counters().tail(opts_.path.string()); }

void trace_window::commit() {
  if (!file_) return;
  std::string& text = buffer();
  if (!file_->commit(text, result_tail()) && !warned_) {
    warned_ = true;
    pending_warning = file_->error() +
                      "; the trace file stops here and is kept as it is (proftrace validate --repair recovers it), "
                      "its export is marked incomplete, the summary still counts every event";
  }
  text.clear();
}

std::shared_ptr<finished_trace> trace_window::finish(std::int64_t stop_ns, std::vector<std::string>& warnings) {
  commit();
  if (file_) file_->release_reserve();
  if (!pending_warning.empty()) warnings.push_back(std::move(pending_warning));
  auto f = std::make_shared<finished_trace>(counters());
  if (f->names_over_limit > 0)
    warnings.push_back("proftrace: " + std::to_string(f->names_over_limit) + " C API events and args were recorded as \"" +
                       over_limit_name + "\": the process had interned " + std::to_string(max_interned_names) +
                       " distinct names (or " + std::to_string(max_interned_name_bytes >> 20) +
                       " MiB of them), the most it keeps (the trace's names_over_limit)");
  f->averages = aggregator_.rows_by_first_begin();
  f->events = aggregator_.take_retained();
  f->memory = std::move(aggregator_.memory());
  f->stop_unix_ns = stop_ns;
  if (!file_) {
    f->path.clear();
    return f;
  }
  f->write_error = file_->error();
  f->events_not_written = file_->events_not_written();
  if (file_->removed())
    warnings.push_back("proftrace: the trace file '" + file_->path().string() +
                       "' was removed while recording; the trace is complete in the still open file and exports "
                       "as usual");
  f->spool = std::move(file_);
  return f;
}

}  // namespace proftrace::detail

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {
template <class... Writers>
std::string tail_of(const std::variant<Writers...>*, trace_format f, const finished_trace& t, const std::string& name) {
  std::string out;
  ((Writers::format == f ? void(out = Writers::tail(t, name)) : void()), ...);
  return out;
}
}  // namespace

const char* finished_trace::not_written_key() const noexcept { return row_of(format).not_written_key; }

std::string finished_trace::tail(const std::string& trace_name) const {
  return tail_of(static_cast<const trace_writers*>(nullptr), format, *this, trace_name);
}

std::string finished_trace::counters_json() const {
  std::string t = "{\"overflow_policy\": ";
  append_json_string(t, to_string(overflow));
  for (const auto& [key, value] : counter_list()) {
    t += ", \"";
    t += key;
    t += "\": ";
    append_int(t, value);
  }
  if (!write_error.empty()) {  // the spool stops where a write failed: what follows was not kept
    t += ", \"incomplete\": ";
    append_json_string(t, write_error);
    t += ", \"";
    t += not_written_key();
    t += "\": ";
    append_int(t, events_not_written);
  }
  return t + "}";
}

std::vector<std::pair<const char*, std::uint64_t>> finished_trace::counter_list() const {
  return {{"dropped_events", losses.dropped},
          {"overwritten_events", losses.overwritten},
          {"unattached_events", losses.unattached},
          {"late_events", losses.late},
          {"unpaired_events", losses.unpaired},
          {"lost_events_total", losses.total()},
          {"invalid_flop_estimates", counts.invalid_flop_estimates},
          {"unscoped_flop_estimates", counts.unscoped_flop_estimates},
          {"unknown_frees", counts.unknown_frees},
          {"invalid_memory_devices", counts.invalid_memory_devices},
          {"unfreed_reallocations", counts.unfreed_reallocations},
          {"truncated_scopes", counts.truncated_scopes},
          {"scopes_ended_on_another_thread", counts.moved_scopes},
          {"scopes_closed_at_thread_exit", counts.closed_at_thread_exit},
          {"scopes_ended_after_their_session", counts.ended_after_their_session},
          {"instant_events", counts.instant_events},
          {"counter_events", counts.counter_events},
          {"truncated_names", counts.truncated_names},
          {"dropped_args", counts.dropped_args},
          {"cuda_dropped_records", gpu_losses.dropped_records},
          {"cuda_zero_timestamp_kernels", gpu_losses.zero_timestamp_kernels},
          {"cuda_refused_buffers", gpu_losses.refused_buffers},
          {"names_over_limit", names_over_limit}};
}

}  // namespace proftrace::detail
