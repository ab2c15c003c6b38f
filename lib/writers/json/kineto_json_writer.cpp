#include "writers/json/kineto_json_writer.hpp"

#include <charconv>
#include <cstring>

#include "cuda/gpu_trace_writer.hpp"
#include "flusher.hpp"
#include "json_text.hpp"
#include "proftrace/detail/recorder.hpp"
#include "registry.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

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
  t += "  \"proftrace\": {\"overflow_policy\": ";
  append_json_string(t, to_string(current_overflow_policy()));
  for (const auto& [key, value] : f.counter_list()) {
    t += ", \"";
    t += key;
    t += "\": ";
    append_int(t, value);
  }
  if (!f.write_error.empty()) {  // the spool stops where a write failed: what follows was not kept
    t += ", \"incomplete\": ";
    append_json_string(t, f.write_error);
  }
  t += "},\n  \"traceName\": ";
  append_json_string(t, trace_name);
  t += "\n}\n";
  return t;
}

void kineto_json_writer::begin_event() {
  if (!first_event_) buffer_ += ",\n";
  first_event_ = false;
}

void kineto_json_writer::process_metadata() {
  const auto meta = [&](const char* what, const auto& write_args) {
    begin_event();
    open_metadata_event(buffer_, what, head_.pid, 0, head_.start_ns - head_.base_ns);
    write_args();
    buffer_ += "}}";
  };
  meta("process_name", [&] {
    buffer_ += "\"name\": ";
    append_json_string(buffer_, head_.process_name);
  });
  meta("process_labels", [&] { buffer_ += "\"labels\": \"CPU\""; });
  meta("process_sort_index", [&] {
    buffer_ += "\"sort_index\": ";
    append_int(buffer_, head_.pid);
  });
}

void kineto_json_writer::thread(std::int64_t tid, const std::string& name) {
  const std::int64_t ts = head_.start_ns - head_.base_ns;
  begin_event();
  open_metadata_event(buffer_, "thread_name", head_.pid, tid, ts);
  buffer_ += "\"name\": ";
  append_json_string(buffer_, name.empty() ? "thread " + std::to_string(tid) : name);
  buffer_ += "}}";
  begin_event();
  open_metadata_event(buffer_, "thread_sort_index", head_.pid, tid, ts);
  buffer_ += "\"sort_index\": ";
  append_int(buffer_, tid);
  buffer_ += "}}";
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

const std::string& kineto_json_writer::complete_prefix(const site& where, std::int64_t tid) {
  const std::pair<const site*, std::int64_t> k{&where, tid};
  if (k == last_thread_key_) return *last_thread_prefix_;
  auto [it, fresh] = thread_prefixes_.try_emplace(k);
  last_thread_key_ = k;
  last_thread_prefix_ = &it->second;
  if (fresh) {
    it->second = complete_prefix(where);
    append_int(it->second, tid);
    it->second += ", \"ts\": ";
  }
  return it->second;
}

// put_us3() for a timestamp: the digits above its last eight copied from
// the last one's when they are the same, the last eight ("ddddd.ddd")
// formatted without a division loop.
char* kineto_json_writer::put_ts(char* p, std::int64_t ns) noexcept {
  if (ns < 100'000'000 || ns >= 10'000'000'000'000'000) return put_us3(p, ns);
  const auto u = static_cast<std::uint64_t>(ns);
  const std::uint64_t high = u / 100'000'000;
  if (high != ts_high_) {
    ts_high_ = high;
    ts_high_size_ = static_cast<std::size_t>(std::to_chars(ts_high_text_, ts_high_text_ + 8, high).ptr - ts_high_text_);
  }
  std::memcpy(p, ts_high_text_, 8);  // fixed size: one move; high < 10^8 has at most eight digits
  p += ts_high_size_;
  const std::uint64_t low = eight_digits(static_cast<std::uint32_t>(u % 100'000'000));
  std::memcpy(p, &low, 8);  // "iiiiifff": the point goes after the fifth
  const std::uint64_t frac = (low >> 40) << 8 | '.';
  std::memcpy(p + 5, &frac, 8);
  return p + 9;
}

// The common scope's fixed part in one append: its site and thread's
// prefix, then ts, dur and External id formatted into a stack buffer.
bool kineto_json_writer::short_scope(const thread_state& ts, const open_scope& s, std::int64_t end_ns) {
  const std::string& prefix = complete_prefix(*s.where, ts.tid);
  char buf[320];
  if (prefix.size() > sizeof buf - 160) return false;
  char* p = buf;
  if (!first_event_) {
    *p++ = ',';
    *p++ = '\n';
  }
  first_event_ = false;
  const auto put = [&p](std::string_view text) {
    std::memcpy(p, text.data(), text.size());
    p += text.size();
  };
  put(prefix);
  p = put_ts(p, s.begin_ns - head_.base_ns);
  put(", \"dur\": ");
  p = put_us3(p, end_ns > s.begin_ns ? end_ns - s.begin_ns : 0);
  put(", \"args\": {\"External id\": ");
  p = std::to_chars(p, p + 24, s.external_id).ptr;
  const bool closed = only_external_id(s, head_);
  if (closed) put("}}");
  buffer_.append(buf, p);
  if (!closed) {
    scope_args(ts, s);
    buffer_ += "}}";
  }
  return true;
}

void kineto_json_writer::scope(const thread_state& ts, const open_scope& s, std::int64_t end_ns) {
  const site& where = *s.where;
  if (where.cat != category::step && s.dynamic_name.empty() && short_scope(ts, s, end_ns)) return;
  begin_event();
  if (&where == &thread_step_site) {
    // Another thread's span of step N: named so that no reader takes it
    // for a step (HTA and TensorBoard match "ProfilerStep#"), its number in args.
    buffer_ += "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"thread step\", \"pid\": ";
    append_int(buffer_, head_.pid);
    buffer_ += ", \"tid\": ";
  } else if (where.cat == category::step) {
    buffer_ += "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#";
    append_int(buffer_, s.payload);
    buffer_ += "\", \"pid\": ";
    append_int(buffer_, head_.pid);
    buffer_ += ", \"tid\": ";
  } else if (!s.dynamic_name.empty()) {
    buffer_ += "{\"ph\": \"X\", \"cat\": \"";
    buffer_ += category_name(where);
    buffer_ += "\", \"name\": ";
    append_json_string(buffer_, s.dynamic_name);
    buffer_ += ", \"pid\": ";
    append_int(buffer_, head_.pid);
    buffer_ += ", \"tid\": ";
  } else {
    buffer_ += complete_prefix(where);
  }
  append_int(buffer_, ts.tid);
  buffer_ += ", \"ts\": ";
  append_us3(buffer_, s.begin_ns - head_.base_ns);
  buffer_ += ", \"dur\": ";
  append_us3(buffer_, end_ns > s.begin_ns ? end_ns - s.begin_ns : 0);
  buffer_ += ", \"args\": {\"External id\": ";
  append_int(buffer_, s.external_id);
  scope_args(ts, s);
  buffer_ += "}}";
}

void kineto_json_writer::scope_args(const thread_state& ts, const open_scope& s) {
  if (s.truncated) buffer_ += ", \"truncated\": true";
  if (s.where == &thread_step_site) {
    buffer_ += ", \"step\": ";
    append_int(buffer_, s.payload);
  }
  if (!s.shapes.empty()) {
    buffer_ += ", \"Input Dims\": ";
    buffer_ += s.shapes;
  }
  if (s.flops > 0) {
    buffer_ += ", \"flops\": ";
    append_int(buffer_, s.flops);
  }
  if (s.comm_bytes >= 0) {
    buffer_ += ", \"bytes\": ";
    append_int(buffer_, s.comm_bytes);
    if (s.comm_peer >= 0) {
      buffer_ += ", \"peer\": ";
      append_int(buffer_, s.comm_peer);
    }
  }
  for (const scope_arg& a : s.args) {
    buffer_ += ", ";
    append_json_string(buffer_, a.key);
    buffer_ += ": ";
    if (a.type == arg_type::integer) append_int(buffer_, a.integer);
    else if (a.type == arg_type::floating) append_double(buffer_, a.floating);
    else append_json_string(buffer_, a.text);
  }
  if (head_.with_stack) {
    buffer_ += ", \"Call stack\": ";
    append_json_string(buffer_, call_stack(ts, s));
  }
  if (head_.with_modules) {
    if (const std::string path = module_path(ts); !path.empty()) {
      buffer_ += ", \"Module Hierarchy\": ";
      append_json_string(buffer_, path);
    }
  }
}

// An async range: a "b"/"e" pair with one id (its own track in Perfetto
// and chrome://tracing).
void kineto_json_writer::async(const open_async& a, std::uint64_t id, std::int64_t end_ns, std::int64_t end_tid) {
  const auto open = [&](std::string_view ph_and_cat, std::int64_t tid, std::int64_t ns) {
    open_event(ph_and_cat, a.where->name, tid, ns);
    buffer_ += ", \"id\": ";
    append_int(buffer_, id);
  };
  open("\"ph\": \"b\", \"cat\": \"async\"", a.tid, a.begin_ns);
  buffer_ += ", \"args\": {\"External id\": ";
  append_int(buffer_, a.external_id);
  buffer_ += ", \"begin thread\": ";
  append_int(buffer_, a.tid);
  buffer_ += ", \"end thread\": ";
  append_int(buffer_, end_tid);
  buffer_ += "}}";
  open("\"ph\": \"e\", \"cat\": \"async\"", end_tid, end_ns);
  buffer_ += "}";
}

// The fields every point or async event starts with, the object left open:
// {"ph": ..., "cat": ..., "name": ..., "pid": ..., "tid": ..., "ts": ...
void kineto_json_writer::open_event(std::string_view ph_and_cat, std::string_view name, std::int64_t tid,
                                    std::int64_t ns) {
  begin_event();
  buffer_ += "{";
  buffer_ += ph_and_cat;
  buffer_ += ", \"name\": ";
  append_json_string(buffer_, name);
  buffer_ += ", \"pid\": ";
  append_int(buffer_, head_.pid);
  buffer_ += ", \"tid\": ";
  append_int(buffer_, tid);
  buffer_ += ", \"ts\": ";
  append_us3(buffer_, ns - head_.base_ns);
}

// Kineto's "[memory]" instant event.
void kineto_json_writer::memory(const memory_event& m) {
  if (m.kind == event_kind::reserved) return;
  const resolved_memory& r = *m.resolved;
  open_event(instant_head, "[memory]", m.tid, m.ns);
  buffer_ += ", \"args\": {\"Device Type\": ";
  buffer_ += m.device < 0 ? "0" : "1";
  buffer_ += ", \"Device Id\": ";
  append_int(buffer_, m.device);
  buffer_ += ", \"Addr\": ";
  append_int(buffer_, m.address);
  buffer_ += ", \"Bytes\": ";
  append_int(buffer_, r.bytes);
  buffer_ += ", \"Total Allocated\": ";
  append_int(buffer_, r.total_allocated);
  buffer_ += ", \"Total Reserved\": ";
  append_int(buffer_, r.total_reserved);
  buffer_ += "}}";
}

void kineto_json_writer::instant(std::int64_t tid, const site& where, std::int64_t ns) {
  open_event(instant_head, where.name, tid, ns);
  buffer_ += ", \"args\": {}}";
}

void kineto_json_writer::counter(std::int64_t tid, const site& where, std::int64_t ns, double value) {
  open_event("\"ph\": \"C\", \"cat\": \"counter\"", where.name, tid, ns);
  buffer_ += ", \"args\": {";
  append_json_string(buffer_, where.name);
  buffer_ += ": ";
  append_double(buffer_, value);
  buffer_ += "}}";
}

// GPU work in Kineto's layout, and each user scope projected onto the
// streams its GPU work ran on (gpu_user_annotation).
void kineto_json_writer::gpu(const std::vector<gpu_activity>& activities, const std::vector<gpu_span>& spans) {
  gpu_trace_writer(head_.pid, head_.base_ns, head_.devices).write(activities, buffer_, first_event_);
  for (const gpu_span& s : spans) {
    begin_event();
    buffer_ += "{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": ";
    append_json_string(buffer_, s.where->name);
    buffer_ += ", \"pid\": ";
    append_int(buffer_, s.device);
    buffer_ += ", \"tid\": ";
    append_int(buffer_, s.stream);
    buffer_ += ", \"ts\": ";
    append_us3(buffer_, s.begin_ns - head_.base_ns);
    buffer_ += ", \"dur\": ";
    append_us3(buffer_, s.end_ns - s.begin_ns);
    buffer_ += ", \"args\": {\"External id\": ";
    append_int(buffer_, s.external_id);
    buffer_ += "}}";
  }
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
