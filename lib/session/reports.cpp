// The session's last finished trace, taken in as a trace closes, and what
// the reports (key_averages(), events(), memory_stats()) say of it.
#include <unistd.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "reports/memory_timeline.hpp"
#include "proftrace/execution_trace.hpp"
#include "session_impl.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace {

// acc_events (torch's profile(acc_events=True)): the reports of the trace
// that closes now hold every earlier cycle's events as well. Its file
// holds only its own cycle, as torch's exported trace does.
void accumulate_into(detail::finished_trace& done, const detail::finished_trace& earlier) {
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
  done.counts.instant_events += earlier.counts.instant_events;
  done.counts.counter_events += earlier.counts.counter_events;
  if (done.retained_events && earlier.retained_events)
    done.events.insert(done.events.begin(), earlier.events.begin(), earlier.events.end());
}

}  // namespace

void session::impl::finish(std::shared_ptr<detail::finished_trace> done) {
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
  reduce_across_ranks();
}

void session::impl::merge_memory_stats() {
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

// Why there is no finished trace to report (the reports' note).
std::string session::impl::no_trace_reason(bool running) const {
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

bool session::has_trace() const {
  std::lock_guard lock(detail::session_mutex);
  return impl_->opts.enabled && impl_->last != nullptr;
}

event_averages session::key_averages(bool group_by_input_shape, int group_by_stack_n) const {
  std::lock_guard lock(detail::session_mutex);
  event_averages out;
  out.grouped_by_input_shape = group_by_input_shape;
  out.profile_memory = impl_->opts.profile_memory && impl_->activities.contains(activity::memory);
  if (!has_trace()) {
    out.note = impl_->no_trace_reason(detail::active_session == this);
    return out;
  }
  const detail::finished_trace& last = *impl_->last;
  out.note = impl_->last_note;
  out.losses = last.losses;
  out.instant_events = last.counts.instant_events;
  out.counter_events = last.counts.counter_events;
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
  std::lock_guard lock(detail::session_mutex);
  if (!has_trace()) return {};
  if (!impl_->last->retained_events) throw std::logic_error("proftrace: events() needs profile_options::retain_events = true");
  return impl_->last->events;
}

std::vector<device_memory_stats> session::memory_stats() const {
  std::lock_guard lock(detail::session_mutex);
  std::vector<device_memory_stats> out;
  if (!has_trace()) return out;
  for (const auto& [device, d] : impl_->session_memory) out.push_back(d);
  return out;
}

std::filesystem::path session::trace_path() const {
  std::lock_guard lock(detail::session_mutex);
  return impl_->last ? impl_->last->path : std::filesystem::path{};
}

}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
