#include "aggregator.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "formats/json_text.hpp"
#include "formats/stack_frames.hpp"
#if PROFTRACE_WITH_COUNTERS
#include "records/counter_keys.hpp"
#endif

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {


const char* aggregator::row_name(const open_scope& s) noexcept {
  // A thread's own step span is its own key ("thread step"), so that the
  // table counts ProfilerStep* once per step, as torch's.
  return is_profiler_step(s.step) ? step_row_key : s.where->name;
}

event_average& aggregator::keyed_row(std::string key, const char* name) {
  auto [it, fresh] = by_key_.try_emplace(std::move(key), rows_.size());
  if (fresh) new_row().key = name;
  return rows_[it->second];
}

event_average& aggregator::new_row() {
  first_begin_ns_.push_back(INT64_MAX);
  return rows_.emplace_back();
}

std::vector<event_average> aggregator::rows_by_first_begin() const {
  std::vector<std::size_t> order(rows_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return first_begin_ns_[a] < first_begin_ns_[b]; });
  std::vector<event_average> out;
  out.reserve(rows_.size());
  for (const std::size_t i : order) out.push_back(rows_[i]);
  return out;
}

// row_for() past its cache.
event_average& aggregator::find_row(const thread_state& ts, const open_scope& s) {
  const bool is_step = s.step != step_kind::none;
  if (keyed_by_site(ts, s)) {
    site_slot& slot = site_cache_[cache_index(s.where)];
    auto [it, fresh] = by_site_.try_emplace(s.where, rows_.size());
    if (fresh) {
      event_average& row = new_row();
      row.key = row_name(s);
      row.top_level = ts.stack.empty();
    }
    slot = {s.where, it->second};
    return rows_[it->second];
  }
  const std::size_t depth = ts.stack.size();
  // A runtime name is its row's key: the same text from any buffer or call site is one row.
  const char* name = s.dynamic_name.empty() ? row_name(s) : s.dynamic_name.c_str();
  std::vector<std::string> frames;
  if (opts_.with_stack)
    for (std::size_t i = depth; i-- > 0;)
      if (is_frame(ts, ts.stack[i])) frames.push_back(frame_of(ts.stack[i]));
  std::string shapes = shapes_json(s.shapes);
  // A runtime name's key is marked apart from a call site's of the same text.
  std::string key = s.dynamic_name.empty() ? row_key(name, shapes) : row_key("\x1d" + s.dynamic_name, shapes);
  for (auto& f : frames) {
    key += '\n';
    key += f;
  }
  const std::size_t before = rows_.size();
  event_average& row = keyed_row(std::move(key), name);
  if (rows_.size() != before) {
    if (!is_step) row.input_shapes = std::move(shapes);
    row.stack = std::move(frames);
    row.top_level = depth == 0;
  }
  return row;
}

void aggregator::note_launcher(const thread_state& ts, const open_scope& s, const event_average& row) {
  launchers_[s.external_id] = {static_cast<std::size_t>(&row - rows_.data()),
                               ts.stack.empty() ? 0 : ts.stack.back().external_id, s.where};
}

// A scope's counter deltas (args keyed by a counter's site) to its row:
// total as recorded, self less what its closed children counted. A scope
// with no value of a counter (an OpenMP region's, or one that began before
// the counter was read) hands its children's counts up to its parent, so
// they come out of that parent's self once, not never.
void aggregator::add_counters([[maybe_unused]] const thread_state& ts, [[maybe_unused]] const open_scope& s,
                              [[maybe_unused]] event_average& row) {
#if PROFTRACE_WITH_COUNTERS
  const std::size_t kinds = counter_kind_count();
  const std::size_t depth = ts.stack.size();
  auto& levels = counter_children_[ts.tid];
  if (levels.size() < depth + 1) levels.resize(depth + 1, std::vector<std::int64_t>(kinds, 0));
  std::vector<std::int64_t>& children = levels[depth];
  counted_.assign(kinds, false);
  for (const scope_arg& a : s.args) {
    const int kind = counter_kind_of_key(a.key);
    if (kind < 0 || a.type != arg_type::integer) continue;
    const auto k = static_cast<std::size_t>(kind);
    counter_total& c = row.counter_named(a.key);
    c.total += a.integer;
    c.self += a.integer - children[k];
    if (depth > 0) levels[depth - 1][k] += a.integer;
    counted_[k] = true;
  }
  if (depth > 0)
    for (std::size_t k = 0; k < kinds; ++k)
      if (!counted_[k]) levels[depth - 1][k] += children[k];
  std::fill(children.begin(), children.end(), 0);
#endif
}

void aggregator::retain(const thread_state& ts, const open_scope& s, std::int64_t end_ns, std::int64_t self) {
  const site& where = *s.where;
  const std::size_t depth = ts.stack.size();
  function_event& e = retained_.emplace_back();
  e.name = is_profiler_step(s.step) ? step_event_name(s.payload)
                                                                      : std::string(where.name);
  if (!s.dynamic_name.empty()) e.name = s.dynamic_name;
  e.input_shapes = shapes_json(s.shapes);
  e.thread = ts.tid;
  e.start_unix_ns = s.begin_ns;
  e.duration_ns = duration_ns(s.begin_ns, end_ns);
  e.self_duration_ns = self;
  e.external_id = s.external_id;
  e.depth = static_cast<int>(depth);
  e.parent_external_id = depth > 0 ? ts.stack[depth - 1].external_id : 0;
  e.category = category_name(where);
  e.flops = s.flops;
  e.bytes = s.comm_bytes;
  e.end_thread = ts.tid;
}

// An async range counts in its row's CPU total only.
void aggregator::add_async(const open_async& a, std::int64_t end_ns, std::int64_t end_tid) {
  const std::int64_t dur = duration_ns(a.begin_ns, end_ns);
  std::string key = "\x1e";
  key += a.name();
  event_average& row = keyed_row(std::move(key), a.name());
  began(row, a.begin_ns);
  row.top_level = true;
  row.count += 1;
  row.cpu_time_total_ns += dur;
  if (__builtin_add_overflow(row.flops, a.flops, &row.flops)) row.flops = INT64_MAX;  // a moved scope's estimates
  if (!opts_.retain_events) return;
  function_event& e = retained_.emplace_back();
  e.name = a.name();
  e.flops = a.flops;
  e.input_shapes = shapes_json(a.shapes);
  e.thread = a.tid;
  e.start_unix_ns = a.begin_ns;
  e.duration_ns = dur;
  e.external_id = a.external_id;
  e.category = "async";
  e.is_async = true;
  e.end_thread = end_tid;
}

// An allocation or free with no scope open is torch's top-level "[memory]" row.
void aggregator::add_memory(const memory_event& m, bool scoped) {
  const resolved_memory& r = *m.resolved;
  if (r.replaced_live)  // the earlier block's free, never reported: the timeline destroys it here
    memory_.push_back({m.ns, -r.replaced_bytes, r.total_allocated - r.bytes, r.total_reserved, r.step, m.device,
                       r.replaced_category, memory_action::destroy});
  memory_.push_back(record_of(m.ns, r, m.device, m.kind));
  if (m.kind == event_kind::reserved || scoped) return;
  std::int64_t bytes[2] = {0, 0};
  bytes[m.device < 0 ? 0 : 1] = m.resolved->attributed_bytes();
  add_unscoped_memory(bytes, 1);
  began(rows_[by_key_.at(memory_row_key)], m.ns);
}

void aggregator::add_unscoped_memory(const std::int64_t (&bytes)[2], std::int64_t events) {
  detail::add_unscoped_memory(keyed_row(memory_row_key, memory_row_key), bytes, events);
}

// Calls fn(id, launcher, self) for the scope `external_id` names, then for
// each scope around it: self is true for the first only.
template <class Fn>
void aggregator::for_each_launcher(std::uint64_t external_id, Fn&& fn) const {
  if (!is_cuda_external_id(external_id)) return;
  bool self = true;
  for (auto it = launchers_.find(external_id); it != launchers_.end(); it = launchers_.find(it->second.parent)) {
    fn(it->first, it->second, self);
    self = false;
  }
}

std::vector<gpu_span> aggregator::add_gpu(const std::vector<gpu_activity>& activities) {
  std::map<std::tuple<std::uint64_t, std::uint32_t, std::uint32_t>, gpu_span> spans;  // (scope, device, stream)
  for (const gpu_activity& a : activities) {
    const bool device_op = a.kind == gpu_activity_kind::kernel || a.kind == gpu_activity_kind::memcpy ||
                           a.kind == gpu_activity_kind::memset;
    if (!device_op) continue;
    const std::int64_t dur = duration_ns(a.start_ns, a.end_ns);
    for_each_launcher(a.external_id, [&](std::uint64_t id, const launcher& l, bool self) {
      event_average& row = rows_[l.row];
      row.cuda_time_total_ns += dur;
      if (self) row.self_cuda_time_total_ns += dur;
      if (l.where->cat != category::user_annotation) return;
      auto [it, fresh] = spans.try_emplace({id, a.device, a.stream}, gpu_span{l.where, id, a.device, a.stream, a.start_ns, a.end_ns});
      if (!fresh) {
        it->second.begin_ns = std::min(it->second.begin_ns, a.start_ns);
        it->second.end_ns = std::max(it->second.end_ns, a.end_ns);
      }
    });
  }
  std::vector<gpu_span> out;
  for (const auto& [key, s] : spans) out.push_back(s);
  return out;
}

void aggregator::add_gpu_memory(const gpu_activity& a, const memory_event& m) {
  bool scoped = false;
  const std::int64_t bytes = m.resolved->attributed_bytes();
  for_each_launcher(a.external_id, [&](std::uint64_t, const launcher& l, bool self) {
    event_average& row = rows_[l.row];
    (m.device < 0 ? row.cpu_memory_usage : row.cuda_memory_usage) += bytes;
    if (self) (m.device < 0 ? row.self_cpu_memory_usage : row.self_cuda_memory_usage) += bytes;
    scoped = true;
  });
  add_memory(m, scoped);
}

}  // namespace proftrace::detail
