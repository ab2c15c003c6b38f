#include "kineto_json_writer.hpp"

#include <charconv>
#include <cstring>

#include "formats/kineto_json/gpu_trace_writer.hpp"
#include "formats/json_text.hpp"
#include "formats/stack_frames.hpp"
#include "records/finished_trace.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {
constexpr std::string_view instant_head = "\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\"";
}

kineto_json_writer::kineto_json_writer(const trace_head& head) : head_(head) { process_metadata(); }

std::string kineto_json_writer::head() const {
  std::string h = "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": " + device_properties_json(head_.devices) + ",\n";
  for (auto& [k, v] : head_.metadata) {
    h += "  ";
    append_json_string(h, k);
    h += ": " + v + ",\n";
  }
  h += "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ";
  append_int(h, head_.base_ns);
  h += ",\n  \"traceEvents\": [\n";
  return h;
}

std::string kineto_json_writer::tail(const finished_trace& f, const std::string& trace_name) {
  std::string t = "\n  ],\n";
  for (auto& [k, v] : f.tail_metadata) {
    t += "  ";
    append_json_string(t, k);
    t += ": " + v + ",\n";
  }
  t += "  \"proftrace\": " + f.counters_json();
  t += ",\n  \"traceName\": ";
  append_json_string(t, trace_name);
  t += "\n}\n";
  return t;
}

void kineto_json_writer::begin_event() {
  if (!first_event_) buffer() += ",\n";
  first_event_ = false;
}

void kineto_json_writer::process_metadata() {
  const auto meta = [&](const char* what, const auto& write_args) {
    begin_event();
    open_metadata_event(buffer(), what, head_.pid, 0, head_.start_ns - head_.base_ns);
    write_args();
    buffer() += "}}";
  };
  meta("process_name", [&] {
    buffer() += "\"name\": ";
    append_json_string(buffer(), head_.process_name);
  });
  meta("process_labels", [&] { buffer() += "\"labels\": \"CPU\""; });
  meta("process_sort_index", [&] {
    buffer() += "\"sort_index\": ";
    append_int(buffer(), head_.pid);
  });
}

void kineto_json_writer::thread(std::int64_t tid, const std::string& name) {
  const std::int64_t ts = head_.start_ns - head_.base_ns;
  begin_event();
  open_metadata_event(buffer(), "thread_name", head_.pid, tid, ts);
  buffer() += "\"name\": ";
  append_json_string(buffer(), name.empty() ? "thread " + std::to_string(tid) : name);
  buffer() += "}}";
  begin_event();
  open_metadata_event(buffer(), "thread_sort_index", head_.pid, tid, ts);
  buffer() += "\"sort_index\": ";
  append_int(buffer(), tid);
  buffer() += "}}";
}

// `{"ph": "X", "cat": ..., "name": ..., "pid": N, "tid": ` for a site,
// escaped once per trace instead of once per event.
const std::string& kineto_json_writer::complete_prefix(const site& where) {
  if (&where == last_site_) return *last_prefix_;
  auto [it, fresh] = prefixes_.try_emplace(&where);
  last_site_ = &where;
  last_prefix_ = &it->second;
  if (fresh) {
    std::string& p = it->second;
    p = "{\"ph\": \"X\", \"cat\": \"";
    p += category_name(where);
    p += "\", \"name\": ";
    append_json_string(p, where.name);
    p += ", \"pid\": ";
    append_int(p, head_.pid);
    p += ", \"tid\": ";
  }
  return it->second;
}

const kineto_json_writer::short_prefix& kineto_json_writer::new_prefix(const std::pair<const site*, std::int64_t>& k) {
  auto [it, fresh] = thread_prefixes_.try_emplace(k);
  recent_prefixes_.put(k, recent_slot_hash(k.first, k.second), it->second);
  if (fresh) {
    std::string text = complete_prefix(*k.first);
    append_int(text, k.second);
    text += ", \"ts\": ";
    short_prefix& p = it->second;
    if (text.size() <= sizeof p.bytes) {
      std::memcpy(p.bytes, text.data(), text.size());
      p.size = text.size();
    }
  }
  return it->second;
}

kineto_json_writer::ts_text kineto_json_writer::ts_text::for_high(std::int64_t ns) noexcept {
  ts_text t;
  const std::uint64_t high = static_cast<std::uint64_t>(ns) / 100'000'000;
  t.high_base = high * 100'000'000;
  t.high_size = static_cast<std::size_t>(std::to_chars(t.high_text, t.high_text + 8, high).ptr - t.high_text);
  return t;
}

bool kineto_json_writer::short_scope(const thread_state& ts, const open_scope& s, std::int64_t end_ns) {
  const short_prefix& prefix = complete_prefix(*s.where, ts.tid);
  if (prefix.size == 0) return false;
  if (PROFTRACE_UNLIKELY(stage_ + stage_size - stage_end_ < static_cast<std::ptrdiff_t>(max_short_event))) sync();
  char* p = put_short(stage_end_, first_event_, prefix, ts_, head_.base_ns, s.begin_ns, end_ns, s.external_id);
  first_event_ = false;
  const bool closed = plain_slice(ts, s, head_);  // (never a step here)
  std::memcpy(p, "}}", 2);
  stage_end_ = p + (closed ? 2 : 0);
  if (!closed) {
    scope_args(ts, s);
    buffer() += "}}";
  }
  return true;
}

void kineto_json_writer::leaves(thread_state& ts, std::span<const closed_leaf> run) {
  const bool plain = !head_.with_stack && !head_.with_modules;  // plain_slice() for a leaf
  std::size_t i = 0;
  while (i < run.size()) {  // by consecutive leaves of one site: one prefix
    const site* where = run[i].where;
    const short_prefix& prefix = complete_prefix(*where, ts.tid);
    if (PROFTRACE_UNLIKELY(!plain || prefix.size == 0 || first_event_)) {
      scope(ts, as_leaf(ts, run[i]), run[i].end_ns);
      ++i;
      continue;
    }
    const std::size_t first = i;
    while (++i < run.size() && run[i].where == where) {}
    short_leaves(prefix, run.subspan(first, i - first));
  }
}

void kineto_json_writer::short_leaves(const short_prefix& prefix_in, std::span<const closed_leaf> run) {
  const short_prefix prefix = prefix_in;
  ts_text ts = ts_;
  const std::int64_t base_ns = head_.base_ns;
  char* p = stage_end_;
  const char* const room_end = stage_ + stage_size - max_short_event;
  for (const closed_leaf& l : run) {
    if (PROFTRACE_UNLIKELY(p > room_end)) {
      stage_end_ = p;
      sync();
      p = stage_end_;
    }
    p = put_short(p, false, prefix, ts, base_ns, l.begin_ns, l.end_ns, l.external_id);
    std::memcpy(p, "}}", 2);
    p += 2;
  }
  stage_end_ = p;
  ts_ = ts;
}

void kineto_json_writer::scope(const thread_state& ts, const open_scope& s, std::int64_t end_ns) {
  const site& where = *s.where;
  if (s.step == step_kind::none && s.dynamic_name.empty() && short_scope(ts, s, end_ns)) return;
  begin_event();
  if (s.step == step_kind::thread_step) {
    // Another thread's span of step N: named so that no reader takes it
    // for a step (HTA and TensorBoard match "ProfilerStep#"), its number in args.
    buffer() += "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"thread step\", \"pid\": ";
    append_int(buffer(), head_.pid);
    buffer() += ", \"tid\": ";
  } else if (s.step != step_kind::none) {
    buffer() += "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#";
    append_int(buffer(), s.payload);
    buffer() += "\", \"pid\": ";
    append_int(buffer(), head_.pid);
    buffer() += ", \"tid\": ";
  } else if (!s.dynamic_name.empty()) {
    buffer() += "{\"ph\": \"X\", \"cat\": \"";
    buffer() += category_name(where);
    buffer() += "\", \"name\": ";
    append_json_string(buffer(), s.dynamic_name);
    buffer() += ", \"pid\": ";
    append_int(buffer(), head_.pid);
    buffer() += ", \"tid\": ";
  } else {
    buffer() += complete_prefix(where);
  }
  append_int(buffer(), ts.tid);
  buffer() += ", \"ts\": ";
  append_us3(buffer(), s.begin_ns - head_.base_ns);
  buffer() += ", \"dur\": ";
  append_us3(buffer(), end_ns > s.begin_ns ? end_ns - s.begin_ns : 0);
  buffer() += ", \"args\": {\"External id\": ";
  append_int(buffer(), s.external_id);
  scope_args(ts, s);
  buffer() += "}}";
}

void kineto_json_writer::shapes_and_flops(std::span<const std::int64_t> shapes, std::int64_t flops) {
  if (!shapes.empty()) {
    buffer() += ", \"Input Dims\": ";
    append_shapes_json(buffer(), shapes);
  }
  if (flops > 0) {
    buffer() += ", \"flops\": ";
    append_int(buffer(), flops);
  }
}

// PROF_ARG values, in record order.
void kineto_json_writer::user_args(const std::vector<scope_arg>& args) {
  for (const scope_arg& a : args) {
    buffer() += ", ";
    append_json_string(buffer(), a.key);
    buffer() += ": ";
    if (a.type == arg_type::integer) append_int(buffer(), a.integer);
    else if (a.type == arg_type::unsigned_integer) append_int(buffer(), static_cast<std::uint64_t>(a.integer));
    else if (a.type == arg_type::floating) append_double(buffer(), a.floating);
    else append_json_string(buffer(), a.text);
  }
}

void kineto_json_writer::scope_args(const thread_state& ts, const open_scope& s) {
  if (s.truncated) buffer() += ", \"truncated\": true";
  if (s.step == step_kind::thread_step) {
    buffer() += ", \"step\": ";
    append_int(buffer(), s.payload);
  }
  shapes_and_flops(s.shapes, s.flops);
  if (s.comm_bytes >= 0) {
    buffer() += ", \"bytes\": ";
    append_int(buffer(), s.comm_bytes);
    if (s.comm_peer >= 0) {
      buffer() += ", \"peer\": ";
      append_int(buffer(), s.comm_peer);
    }
  }
  user_args(s.args);
  if (head_.with_stack) {
    buffer() += ", \"Call stack\": ";
    append_json_string(buffer(), call_stack(ts, s));
  }
  if (head_.with_modules) {
    if (const std::string path = module_path(ts); !path.empty()) {
      buffer() += ", \"Module Hierarchy\": ";
      append_json_string(buffer(), path);
    }
  }
}

// An async range: a "b"/"e" pair with one id (its own track in Perfetto
// and chrome://tracing).
void kineto_json_writer::async(const open_async& a, std::uint64_t id, std::int64_t end_ns, std::int64_t end_tid) {
  const auto open = [&](std::string_view ph_and_cat, std::int64_t tid, std::int64_t ns) {
    open_event(ph_and_cat, a.name(), tid, ns);
    buffer() += ", \"id\": ";
    append_int(buffer(), id);
  };
  open("\"ph\": \"b\", \"cat\": \"async\"", a.tid, a.begin_ns);
  buffer() += ", \"args\": {\"External id\": ";
  append_int(buffer(), a.external_id);
  buffer() += ", \"begin thread\": ";
  append_int(buffer(), a.tid);
  buffer() += ", \"end thread\": ";
  append_int(buffer(), end_tid);
  if (a.truncated) buffer() += ", \"truncated\": true";
  shapes_and_flops(a.shapes, a.flops);
  user_args(a.args);
  buffer() += "}}";
  open("\"ph\": \"e\", \"cat\": \"async\"", end_tid, end_ns);
  buffer() += "}";
}

// The fields every point or async event starts with, the object left open:
// {"ph": ..., "cat": ..., "name": ..., "pid": ..., "tid": ..., "ts": ...
void kineto_json_writer::open_event(std::string_view ph_and_cat, std::string_view name, std::int64_t tid,
                                    std::int64_t ns) {
  begin_event();
  buffer() += "{";
  buffer() += ph_and_cat;
  buffer() += ", \"name\": ";
  append_json_string(buffer(), name);
  buffer() += ", \"pid\": ";
  append_int(buffer(), head_.pid);
  buffer() += ", \"tid\": ";
  append_int(buffer(), tid);
  buffer() += ", \"ts\": ";
  append_us3(buffer(), ns - head_.base_ns);
}

// Kineto's "[memory]" instant event.
void kineto_json_writer::memory(const memory_event& m) {
  if (m.kind == event_kind::reserved) return;
  const resolved_memory& r = *m.resolved;
  open_event(instant_head, "[memory]", m.tid, m.ns);
  buffer() += ", \"args\": {\"Device Type\": ";
  buffer() += m.device < 0 ? "0" : "1";
  buffer() += ", \"Device Id\": ";
  append_int(buffer(), m.device);
  buffer() += ", \"Addr\": ";
  append_int(buffer(), m.address);
  buffer() += ", \"Bytes\": ";
  append_int(buffer(), r.bytes);
  buffer() += ", \"Total Allocated\": ";
  append_int(buffer(), r.total_allocated);
  buffer() += ", \"Total Reserved\": ";
  append_int(buffer(), r.total_reserved);
  buffer() += "}}";
}

void kineto_json_writer::instant(std::int64_t tid, const site& where, std::int64_t ns) {
  open_event(instant_head, where.name, tid, ns);
  buffer() += ", \"args\": {}}";
}

void kineto_json_writer::counter(std::int64_t tid, const site& where, std::int64_t ns, double value) {
  open_event("\"ph\": \"C\", \"cat\": \"counter\"", where.name, tid, ns);
  buffer() += ", \"args\": {";
  append_json_string(buffer(), where.name);
  buffer() += ": ";
  append_double(buffer(), value);
  buffer() += "}}";
}

// GPU work in Kineto's layout, and each user scope projected onto the
// streams its GPU work ran on (gpu_user_annotation).
void kineto_json_writer::gpu(const std::vector<gpu_activity>& activities, const std::vector<gpu_span>& spans) {
  gpu_trace_writer(head_.pid, head_.base_ns, head_.devices).write(activities, buffer(), first_event_);
  for (const gpu_span& s : spans) {
    begin_event();
    buffer() += "{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": ";
    append_json_string(buffer(), s.where->name);
    buffer() += ", \"pid\": ";
    append_int(buffer(), s.device);
    buffer() += ", \"tid\": ";
    append_int(buffer(), s.stream);
    buffer() += ", \"ts\": ";
    append_us3(buffer(), s.begin_ns - head_.base_ns);
    buffer() += ", \"dur\": ";
    append_us3(buffer(), s.end_ns - s.begin_ns);
    buffer() += ", \"args\": {\"External id\": ";
    append_int(buffer(), s.external_id);
    buffer() += "}}";
  }
}

}  // namespace proftrace::detail
