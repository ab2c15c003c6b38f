#include "flusher.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "cuda/gpu_trace_writer.hpp"
#include "json_text.hpp"
#include "proftrace/async_range.hpp"
#include "proftrace/detail/clock.hpp"
#include "proftrace/detail/recorder.hpp"
#include "registry.hpp"
#include "trace_file.hpp"
#include "warn.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

namespace {

constexpr std::size_t consume_chunk = 4096;

std::string process_name() {
  std::ifstream comm("/proc/self/comm");
  std::string name;
  std::getline(comm, name);
  return name.empty() ? std::string("process") : name;
}

std::string shapes_json(const event* ext, std::uint32_t n_ext) {
  const auto* w = reinterpret_cast<const std::uint64_t*>(ext);
  const std::size_t n_words = std::size_t{n_ext} * words_per_event;
  // Extension slots carry the kind word too; only words 0..2 of each slot are data.
  std::vector<std::int64_t> words;
  for (std::size_t i = 0; i < n_words; ++i)
    if (i % words_per_event != 3) words.push_back(static_cast<std::int64_t>(w[i]));
  std::string out = "[";
  std::size_t pos = 0;
  const std::int64_t count = words.empty() ? 0 : words[pos++];
  for (std::int64_t s = 0; s < count && pos < words.size(); ++s) {
    if (s) out += ", ";
    out += '[';
    const std::int64_t ndim = words[pos++];
    for (std::int64_t d = 0; d < ndim && pos < words.size(); ++d) {
      if (d) out += ", ";
      append_int(out, words[pos++]);
    }
    out += ']';
  }
  out += ']';
  return out;
}

}  // namespace

struct open_scope {
  const site* where = nullptr;
  std::int64_t begin_ns = 0;
  std::int64_t child_ns = 0;
  std::uint64_t external_id = 0;
  std::uint64_t payload = 0;  // the step number of a step annotation
  std::int64_t flops = 0;     // estimates recorded while it was the innermost scope
  std::int64_t mem_self[2] = {0, 0};   // bytes allocated minus freed while innermost: [host, device]
  std::int64_t mem_child[2] = {0, 0};  // the same, summed over closed children
  std::int64_t comm_bytes = -1;        // a communication call's bytes and peer (-1: none)
  std::int32_t comm_peer = -1;
  std::string shapes;
  std::uint64_t index = 0;  // the begin's index in its ring, which its end names
  // Once a gap (lost events) followed the begin, its end may have been lost
  // there: it is "frozen" at the last event seen before that gap, where it
  // closes, marked truncated, if its end never comes. Children that end
  // after that point count toward it only if its end does come.
  bool frozen = false;
  bool truncated = false;
  std::uint64_t frozen_ticks = 0;
  std::int64_t late_child_ns = 0;
  std::int64_t late_mem_child[2] = {0, 0};
};

// An allocation, free or reserve report as resolved in time order across
// threads: what it changed, the totals after it, and the step it fell in.
struct resolved_memory {
  std::int64_t bytes = 0;
  std::int64_t total_allocated = 0;
  std::int64_t total_reserved = 0;
  std::int64_t step = -1;
  memory_category category = memory_category::unknown;
  bool known = true;  // false: a free of an address never seen allocated
};

// A CUDA allocation or free (CUPTI's MEMORY2) as an event among the host's,
// so that it resolves with them in time order, and what it resolved to.
struct gpu_memory_event {
  const gpu_activity* activity;
  event e;
  resolved_memory m;
};

memory_record record_of(std::int64_t ns, const resolved_memory& m, int device, event_kind kind) {
  return {ns, m.bytes, m.total_allocated, m.total_reserved, m.step, device, m.category,
          kind == event_kind::alloc  ? memory_action::create
          : kind == event_kind::free ? memory_action::destroy
                                     : memory_action::reserve};
}

// An async range whose begin was seen and whose end was not yet.
struct open_async {
  const site* where = nullptr;
  std::int64_t begin_ns = 0;
  std::int64_t tid = 0;  // the thread that began it
  std::uint64_t external_id = 0;
};
// An async range's end that reached the flusher before its begin (the
// beginning thread's ring was drained first).
struct early_async_end {
  std::int64_t end_ns = 0;
  std::int64_t tid = 0;
};

struct thread_state {
  std::int64_t tid = 0;
  std::uint64_t uid = 0;         // its ring's uid: an end naming another uid began on another thread
  std::uint64_t next_index = 0;  // the index of the next record its ring hands out
  std::uint64_t last_ticks = 0;  // the time of the last record taken from its ring
  std::size_t frozen = 0;        // the stack's entries below this are frozen (entries above may be too)
  std::uint64_t marked_drops = 0;  // drops its ring's gap records reported
  std::vector<open_scope> stack;
  std::vector<event> batch;    // what the current drain took from the ring
  std::vector<event> pending;  // during a switch: events after the switch point
  std::deque<resolved_memory> resolved;  // one per memory event of batch and pending, in thread order
  bool exited = false;         // the thread had exited before its ring was last taken
  std::uint64_t dropped_seen = 0;
  std::uint64_t overwritten_seen = 0;
  std::uint64_t window_seen = 0;  // id of the last window that named this thread
};

class window {
 public:
  window(window_options options, std::uint64_t start_ticks, std::uint64_t id)
      : opts(std::move(options)), start_ticks(start_ticks), id(id) {
    cal = calibrate_clock();
    start_ns = cal.to_unix_ns(start_ticks);
    base_ns = trace_base_ns(start_ns);
    pid = static_cast<std::int64_t>(::getpid());
    std::string head = "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": " + device_properties_json(opts.devices) + ",\n";
    for (auto& [k, v] : opts.head_metadata) {
      head += "  ";
      append_json_string(head, k);
      head += ": " + v + ",\n";
    }
    head += "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ";
    append_int(head, base_ns);
    head += ",\n  \"traceEvents\": [\n";
    file = std::make_shared<trace_file>(opts.path, head, result_tail());
    write_process_metadata();
  }

  std::int64_t to_ns(std::uint64_t ticks) const noexcept { return cal.to_unix_ns(ticks); }

  void begin_event() {
    if (!first_event) buffer += ",\n";
    first_event = false;
  }

  void write_process_metadata() {
    const std::string name = process_name();
    const auto meta = [&](const char* what, const auto& write_args) {
      begin_event();
      open_metadata_event(buffer, what, pid, 0, start_ns - base_ns);
      write_args();
      buffer += "}}";
    };
    meta("process_name", [&] { buffer += "\"name\": "; append_json_string(buffer, name); });
    meta("process_labels", [&] { buffer += "\"labels\": \"CPU\""; });
    meta("process_sort_index", [&] { buffer += "\"sort_index\": "; append_int(buffer, pid); });
  }

  void name_thread(thread_state& ts, const std::string& name) {
    if (ts.window_seen == id) return;
    ts.window_seen = id;
    begin_event();
    open_metadata_event(buffer, "thread_name", pid, ts.tid, start_ns - base_ns);
    buffer += "\"name\": ";
    append_json_string(buffer, name.empty() ? "thread " + std::to_string(ts.tid) : name);
    buffer += "}}";
    begin_event();
    open_metadata_event(buffer, "thread_sort_index", pid, ts.tid, start_ns - base_ns);
    buffer += "\"sort_index\": ";
    append_int(buffer, ts.tid);
    buffer += "}}";
  }

  // `{"ph": "X", "cat": ..., "name": ..., "pid": N, "tid": ` for a site,
  // escaped once per trace instead of once per event.
  const std::string& complete_prefix(const site& where) {
    auto [it, fresh] = prefixes.try_emplace(&where);
    if (fresh) {
      std::string& p = it->second;
      p = "{\"ph\": \"X\", \"cat\": \"";
      p += where.cat == category::cpu_op ? "cpu_op" : "user_annotation";
      p += "\", \"name\": ";
      append_json_string(p, where.name);
      p += ", \"pid\": ";
      append_int(p, pid);
      p += ", \"tid\": ";
    }
    return it->second;
  }

  // The aggregate row of a completed scope: one per (name, input shapes),
  // and per enclosing stack when with_stack is on.
  event_average& row_for(const open_scope& s, const thread_state& ts, std::size_t depth) {
    const bool is_step = s.where->cat == category::step;
    // A thread's own step span is its own key ("thread step"), so that the
    // table counts ProfilerStep* once per step, as torch's.
    const char* name = is_step && s.where != &thread_step_site ? "ProfilerStep*" : s.where->name;
    std::vector<std::string> frames;
    if (opts.with_stack) {
      for (std::size_t i = depth; i-- > 0;) {
        const site& f = *ts.stack[i].where;
        std::string frame = f.cat == category::step ? std::string("ProfilerStep*") : std::string(f.file);
        if (f.cat != category::step) {
          frame += '(';
          append_int(frame, f.line);
          frame += "): ";
          frame += f.name;
        }
        frames.push_back(std::move(frame));
      }
    }
    if ((s.shapes.empty() || is_step) && frames.empty()) {
      auto [it, fresh] = by_site.try_emplace(s.where, rows.size());
      if (fresh) {
        rows.emplace_back();
        rows.back().key = name;
        rows.back().top_level = depth == 0;
      }
      return rows[it->second];
    }
    std::string key = name;
    key += '\x1f';
    key += s.shapes;
    for (auto& f : frames) {
      key += '\n';
      key += f;
    }
    auto [it, fresh] = by_key.try_emplace(std::move(key), rows.size());
    if (fresh) {
      rows.emplace_back();
      rows.back().key = name;
      rows.back().input_shapes = is_step ? std::string() : s.shapes;
      rows.back().stack = std::move(frames);
      rows.back().top_level = depth == 0;
    }
    return rows[it->second];
  }

  void write_complete(const thread_state& ts, const open_scope& s, std::int64_t end_ns, std::size_t depth) {
    const site& where = *s.where;
    const std::int64_t dur = end_ns > s.begin_ns ? end_ns - s.begin_ns : 0;
    const std::int64_t self = dur > s.child_ns ? dur - s.child_ns : 0;
    event_average& row = row_for(s, ts, depth);
    if (opts.cuda)
      launchers[s.external_id] = {static_cast<std::size_t>(&row - rows.data()),
                                  depth > 0 ? ts.stack[depth - 1].external_id : 0, s.where};
    row.count += 1;
    row.cpu_time_total_ns += dur;
    row.self_cpu_time_total_ns += self;
    row.flops += s.flops;
    row.cpu_memory_usage += s.mem_self[0] + s.mem_child[0];
    row.self_cpu_memory_usage += s.mem_self[0];
    row.cuda_memory_usage += s.mem_self[1] + s.mem_child[1];
    row.self_cuda_memory_usage += s.mem_self[1];
    if (opts.retain_events) {
      function_event& e = retained.emplace_back();
      e.name = where.cat == category::step && &where != &thread_step_site ? "ProfilerStep#" + std::to_string(s.payload)
                                                                          : std::string(where.name);
      e.input_shapes = s.shapes;
      e.thread = ts.tid;
      e.start_unix_ns = s.begin_ns;
      e.duration_ns = dur;
      e.self_duration_ns = self;
      e.external_id = s.external_id;
      e.depth = static_cast<int>(depth);
      e.parent_external_id = depth > 0 ? ts.stack[depth - 1].external_id : 0;
      e.category = where.cat == category::cpu_op ? "cpu_op" : "user_annotation";
      e.flops = s.flops;
      e.bytes = s.comm_bytes;
      e.end_thread = ts.tid;
    }

    begin_event();
    if (&where == &thread_step_site) {
      // Another thread's span of step N: named so that no reader takes it
      // for a step (HTA and TensorBoard match "ProfilerStep#"), its number in args.
      buffer += "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"thread step\", \"pid\": ";
      append_int(buffer, pid);
      buffer += ", \"tid\": ";
    } else if (where.cat == category::step) {
      buffer += "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#";
      append_int(buffer, s.payload);
      buffer += "\", \"pid\": ";
      append_int(buffer, pid);
      buffer += ", \"tid\": ";
    } else {
      buffer += complete_prefix(where);
    }
    append_int(buffer, ts.tid);
    buffer += ", \"ts\": ";
    append_us3(buffer, s.begin_ns - base_ns);
    buffer += ", \"dur\": ";
    append_us3(buffer, dur);
    buffer += ", \"args\": {\"External id\": ";
    append_int(buffer, s.external_id);
    if (s.truncated) buffer += ", \"truncated\": true";
    if (&where == &thread_step_site) {
      buffer += ", \"step\": ";
      append_int(buffer, s.payload);
    }
    if (!s.shapes.empty()) {
      buffer += ", \"Input Dims\": ";
      buffer += s.shapes;
    }
    if (s.flops > 0) {
      buffer += ", \"flops\": ";
      append_int(buffer, s.flops);
    }
    if (s.comm_bytes >= 0) {
      buffer += ", \"bytes\": ";
      append_int(buffer, s.comm_bytes);
      if (s.comm_peer >= 0) {
        buffer += ", \"peer\": ";
        append_int(buffer, s.comm_peer);
      }
    }
    if (opts.with_stack) {
      std::string frames;
      const auto frame = [&](const open_scope& f) {
        if (!frames.empty()) frames += ';';
        if (f.where->cat == category::step) {
          // Every step frame is "ProfilerStep*", as in the table's stacks:
          // identical call paths stay one group across steps.
          frames += "ProfilerStep*";
          return;
        }
        frames += f.where->file;
        frames += '(';
        append_int(frames, f.where->line);
        frames += "): ";
        frames += f.where->name;
      };
      frame(s);
      for (std::size_t i = depth; i-- > 0;) frame(ts.stack[i]);
      buffer += ", \"Call stack\": ";
      append_json_string(buffer, frames);
    }
    if (opts.with_modules) {
      std::string path;
      for (std::size_t i = 0; i < depth; ++i)
        if (ts.stack[i].where->cat == category::module) {
          if (!path.empty()) path += '.';
          path += ts.stack[i].where->name;
        }
      if (!path.empty()) {
        buffer += ", \"Module Hierarchy\": ";
        append_json_string(buffer, path);
      }
    }
    buffer += "}}";
  }

  // An async range: a "b"/"e" pair with one id (its own track in Perfetto
  // and chrome://tracing), counted in its row's CPU total only.
  void write_async(const open_async& a, std::uint64_t id, std::int64_t end_ns, std::int64_t end_tid) {
    const std::int64_t dur = end_ns > a.begin_ns ? end_ns - a.begin_ns : 0;
    std::string key = "\x1e";
    key += a.where->name;
    auto [it, fresh] = by_key.try_emplace(std::move(key), rows.size());
    if (fresh) {
      rows.emplace_back();
      rows.back().key = a.where->name;
      rows.back().top_level = true;
    }
    event_average& row = rows[it->second];
    row.count += 1;
    row.cpu_time_total_ns += dur;
    if (opts.retain_events) {
      function_event& e = retained.emplace_back();
      e.name = a.where->name;
      e.thread = a.tid;
      e.start_unix_ns = a.begin_ns;
      e.duration_ns = dur;
      e.external_id = a.external_id;
      e.category = "async";
      e.is_async = true;
      e.end_thread = end_tid;
    }
    const auto open = [&](std::string_view ph_and_cat, std::int64_t tid, std::int64_t ns) {
      open_event(ph_and_cat, a.where->name, tid, ns);
      buffer += ", \"id\": ";
      append_int(buffer, id);
    };
    open("\"ph\": \"b\", \"cat\": \"async\"", a.tid, a.begin_ns);
    buffer += ", \"args\": {\"External id\": ";
    append_int(buffer, a.external_id);
    buffer += ", \"begin thread\": ";
    append_int(buffer, a.tid);
    buffer += ", \"end thread\": ";
    append_int(buffer, end_tid);
    buffer += "}}";
    open("\"ph\": \"e\", \"cat\": \"async\"", end_tid, end_ns);
    buffer += "}";
  }

  // The fields every point or async event starts with, the object left open:
  // {"ph": ..., "cat": ..., "name": ..., "pid": ..., "tid": ..., "ts": ...
  void open_event(std::string_view ph_and_cat, std::string_view name, std::int64_t tid, std::int64_t ns) {
    begin_event();
    buffer += "{";
    buffer += ph_and_cat;
    buffer += ", \"name\": ";
    append_json_string(buffer, name);
    buffer += ", \"pid\": ";
    append_int(buffer, pid);
    buffer += ", \"tid\": ";
    append_int(buffer, tid);
    buffer += ", \"ts\": ";
    append_us3(buffer, ns - base_ns);
  }

  // An instant or counter event up to the opening of its args.
  void open_point_event(std::string_view ph_and_cat, std::string_view name, std::int64_t tid, std::int64_t ns) {
    open_event(ph_and_cat, name, tid, ns);
    buffer += ", \"args\": {";
  }

  static constexpr std::string_view instant_head = "\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\"";

  // Kineto's "[memory]" instant event.
  void write_memory(std::int64_t tid, std::int64_t ns, int device, std::uint64_t address, const resolved_memory& m) {
    open_point_event(instant_head, "[memory]", tid, ns);
    buffer += "\"Device Type\": ";
    buffer += device < 0 ? "0" : "1";
    buffer += ", \"Device Id\": ";
    append_int(buffer, device);
    buffer += ", \"Addr\": ";
    append_int(buffer, address);
    buffer += ", \"Bytes\": ";
    append_int(buffer, m.bytes);
    buffer += ", \"Total Allocated\": ";
    append_int(buffer, m.total_allocated);
    buffer += ", \"Total Reserved\": ";
    append_int(buffer, m.total_reserved);
    buffer += "}}";
  }

  // An allocation or free with no scope open: torch's top-level "[memory]" row.
  void unscoped_memory(int device, std::int64_t bytes) {
    auto [it, fresh] = by_key.try_emplace("[memory]", rows.size());
    if (fresh) {
      rows.emplace_back();
      rows.back().key = "[memory]";
      rows.back().top_level = true;
    }
    event_average& r = rows[it->second];
    r.count += 1;
    (device < 0 ? r.cpu_memory_usage : r.cuda_memory_usage) += bytes;
    (device < 0 ? r.self_cpu_memory_usage : r.self_cuda_memory_usage) += bytes;
  }

  void write_instant(const thread_state& ts, const site& where, std::int64_t ns) {
    ++instant_events;
    open_point_event(instant_head, where.name, ts.tid, ns);
    buffer += "}}";
  }

  void write_counter(const thread_state& ts, const site& where, std::int64_t ns, double value) {
    ++counter_events;
    open_point_event("\"ph\": \"C\", \"cat\": \"counter\"", where.name, ts.tid, ns);
    append_json_string(buffer, where.name);
    buffer += ": ";
    append_double(buffer, value);
    buffer += "}}";
  }

  // What the trace's tail reports; snapshot() adds the aggregates.
  finished_trace counters() const {
    finished_trace f;
    f.path = opts.path;
    f.losses = losses;
    f.instant_events = instant_events;
    f.counter_events = counter_events;
    f.tail_metadata = tail_metadata;
    f.start_unix_ns = start_ns;
    f.with_stack = opts.with_stack;
    f.invalid_flop_estimates = invalid_flop_estimates;
    f.unscoped_flop_estimates = unscoped_flop_estimates;
    f.unknown_frees = unknown_frees;
    f.truncated_scopes = truncated_scopes;
    f.moved_scopes = moved_scopes;
    f.gpu_losses = gpu_losses;
    f.retained_events = opts.retain_events;
    return f;
  }

  // GPU work: written in Kineto's layout, its time added to the scope that
  // launched it (self and total CUDA time) and to every enclosing scope
  // (total), and each user scope projected onto the streams its GPU work
  // ran on (gpu_user_annotation).
  void write_gpu(const gpu_batch& gpu) {
    gpu_losses.add(gpu.losses);
    if (gpu.activities.empty()) return;
    gpu_trace_writer(pid, base_ns, opts.devices).write(gpu.activities, buffer, first_event);

    struct span {
      const site* where;
      std::int64_t begin, end;
    };
    std::map<std::tuple<std::uint64_t, std::uint32_t, std::uint32_t>, span> spans;  // (scope, device, stream)
    for (const gpu_activity& a : gpu.activities) {
      const bool device_op = a.kind == gpu_activity_kind::kernel || a.kind == gpu_activity_kind::memcpy ||
                             a.kind == gpu_activity_kind::memset;
      if (!device_op) continue;
      const std::int64_t dur = a.end_ns > a.start_ns ? a.end_ns - a.start_ns : 0;
      for_each_launcher(a.external_id, [&](std::uint64_t id, const launcher& l, bool self) {
        event_average& row = rows[l.row];
        row.cuda_time_total_ns += dur;
        if (self) row.self_cuda_time_total_ns += dur;
        if (l.where->cat != category::user_annotation) return;
        auto [it, fresh] = spans.try_emplace({id, a.device, a.stream}, span{l.where, a.start_ns, a.end_ns});
        if (!fresh) {
          it->second.begin = std::min(it->second.begin, a.start_ns);
          it->second.end = std::max(it->second.end, a.end_ns);
        }
      });
    }
    for (const auto& [key, s] : spans) {
      begin_event();
      buffer += "{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": ";
      append_json_string(buffer, s.where->name);
      buffer += ", \"pid\": ";
      append_int(buffer, std::get<1>(key));
      buffer += ", \"tid\": ";
      append_int(buffer, std::get<2>(key));
      buffer += ", \"ts\": ";
      append_us3(buffer, s.begin - base_ns);
      buffer += ", \"dur\": ";
      append_us3(buffer, s.end - s.begin);
      buffer += ", \"args\": {\"External id\": ";
      append_int(buffer, std::get<0>(key));
      buffer += "}}";
    }
  }

  // CUDA allocations resolved with the host's memory events: each becomes a
  // memory record and a "[memory]" event on the thread that called the
  // allocator, its bytes counted on the scope open there (self) and on the
  // scopes around it.
  void write_gpu_memory(const std::vector<gpu_memory_event>& events, const gpu_batch& gpu) {
    if (events.empty()) return;
    std::unordered_map<std::uint32_t, std::uint32_t> caller;  // correlation -> host thread
    for (const gpu_activity& a : gpu.activities)
      if (a.kind == gpu_activity_kind::runtime || a.kind == gpu_activity_kind::driver)
        caller.emplace(a.correlation, a.thread);
    for (const gpu_memory_event& g : events) {
      if (!g.m.known) {
        ++unknown_frees;
        continue;
      }
      const int device = payload_device(g.e.payload);
      const std::int64_t ns = to_ns(g.e.ticks);
      memory_records.push_back(record_of(ns, g.m, device, static_cast<event_kind>(g.e.kind)));
      bool scoped = false;
      for_each_launcher(g.activity->external_id, [&](std::uint64_t, const launcher& l, bool self) {
        event_average& row = rows[l.row];
        (device < 0 ? row.cpu_memory_usage : row.cuda_memory_usage) += g.m.bytes;
        if (self) (device < 0 ? row.self_cpu_memory_usage : row.self_cuda_memory_usage) += g.m.bytes;
        scoped = true;
      });
      if (!scoped) unscoped_memory(device, g.m.bytes);
      const auto thread = caller.find(g.activity->correlation);
      write_memory(thread != caller.end() ? thread->second : pid, ns, device, g.activity->address, g.m);
    }
  }

  finished_trace snapshot() const {
    finished_trace f = counters();
    f.averages = rows;
    return f;
  }

  std::string result_tail() const { return counters().tail(opts.path.string()); }

  void commit() {
    if (!file) return;
    if (!file->commit(buffer, result_tail()) && !warned) {
      warned = true;
      pending_warning = file->error() +
                        "; the trace file stops here and is kept as it is (proftrace validate --repair recovers it), "
                        "its export is marked incomplete, the summary still counts every event";
    }
    buffer.clear();
  }

  window_options opts;
  clock_calibration cal;
  std::uint64_t start_ticks;
  std::uint64_t id;
  std::int64_t start_ns = 0;  // Unix ns when the window opened
  std::int64_t base_ns = 0;   // "baseTimeNanoseconds": trace_base_ns(), shared by every process
  std::int64_t pid = 0;
  std::shared_ptr<trace_file> file;
  std::string buffer;
  bool first_event = true;
  bool warned = false;
  std::string pending_warning;  // emitted once the flusher lock is released
  std::vector<event_average> rows;
  std::unordered_map<const site*, std::size_t> by_site;
  std::unordered_map<const site*, std::string> prefixes;
  std::vector<function_event> retained;
  std::vector<memory_record> memory_records;
  // With CUDA: every closed scope by external id, with its row, the
  // enclosing scope's id (0 at the top) and its site.
  struct launcher {
    std::size_t row;
    std::uint64_t parent;
    const site* where;
  };
  std::unordered_map<std::uint64_t, launcher> launchers;
  // Calls fn(id, launcher, self) for the scope `external_id` names, then for
  // each scope around it: self is true for the first only.
  template <class Fn>
  void for_each_launcher(std::uint64_t external_id, Fn&& fn) const {
    if (!is_cuda_external_id(external_id)) return;
    bool self = true;
    for (auto it = launchers.find(external_id); it != launchers.end(); it = launchers.find(it->second.parent)) {
      fn(it->first, it->second, self);
      self = false;
    }
  }
  std::uint64_t invalid_flop_estimates = 0;
  std::uint64_t unscoped_flop_estimates = 0;  // no scope was open to carry them
  std::uint64_t unknown_frees = 0;            // frees of addresses never seen allocated
  std::uint64_t truncated_scopes = 0;         // written with "truncated": their end was lost
  std::uint64_t moved_scopes = 0;             // scopes that ended on another thread: written as async ranges
  std::uint64_t instant_events = 0;
  std::uint64_t counter_events = 0;
  gpu_loss_counts gpu_losses;
  std::unordered_map<std::string, std::size_t> by_key;
  loss_counts losses;
  std::vector<std::pair<std::string, std::string>> tail_metadata;
  std::uint64_t next_external_id = 1;
};

std::string finished_trace::tail(const std::string& trace_name) const {
  std::string t = "\n  ],\n";
  for (auto& [k, v] : tail_metadata) {
    t += "  ";
    append_json_string(t, k);
    t += ": " + v + ",\n";
  }
  t += "  \"proftrace\": {\"overflow_policy\": ";
  append_json_string(t, to_string(current_overflow_policy()));
  const auto count = [&](const char* key, std::uint64_t v) {
    t += ", \"";
    t += key;
    t += "\": ";
    append_int(t, v);
  };
  count("dropped_events", losses.dropped);
  count("overwritten_events", losses.overwritten);
  count("unattached_events", losses.unattached);
  count("late_events", losses.late);
  count("unpaired_events", losses.unpaired);
  count("lost_events_total", losses.total());
  count("invalid_flop_estimates", invalid_flop_estimates);
  count("unscoped_flop_estimates", unscoped_flop_estimates);
  count("unknown_frees", unknown_frees);
  count("truncated_scopes", truncated_scopes);
  count("scopes_ended_on_another_thread", moved_scopes);
  count("instant_events", instant_events);
  count("counter_events", counter_events);
  count("cuda_dropped_records", gpu_losses.dropped_records);
  count("cuda_zero_timestamp_kernels", gpu_losses.zero_timestamp_kernels);
  count("cuda_refused_buffers", gpu_losses.refused_buffers);
  if (!write_error.empty()) {  // the spool stops where a write failed: what follows was not kept
    t += ", \"incomplete\": ";
    append_json_string(t, write_error);
  }
  t += "},\n  \"traceName\": ";
  append_json_string(t, trace_name);
  t += "\n}\n";
  return t;
}

struct flusher::impl {
  std::mutex mutex;  // held by whoever consumes the rings
  // Program threads waiting for `mutex`. Under overload the flusher's loop
  // never sleeps, and std::mutex is not fair: without this, step() or stop()
  // could wait for the lock as long as the producers outrun the flusher.
  std::atomic<int> callers_waiting{0};
  std::condition_variable cv;
  std::atomic<bool> wake_requested{false};
  std::atomic<bool> alive{false};
  bool quit = false;
  std::chrono::milliseconds period{100};
  std::thread thread;
  std::unique_ptr<window> current;
  std::unordered_map<thread_record*, thread_state> threads;
  std::vector<event> chunk = std::vector<event>(consume_chunk);
  std::uint64_t unattached_seen = 0;
  std::uint64_t windows_made = 0;
  bool discard_api_steps = false;
  // Memory as of the last resolved event: live allocations by (device,
  // address), totals per device (-1: host), the schedule's step. Kept
  // across consecutive traces, reset when a trace opens after a gap.
  struct live_allocation {
    std::int64_t bytes = 0;
    memory_category category = memory_category::unknown;
  };
  struct device_totals {
    std::int64_t allocated = 0;
    std::int64_t reported_reserved = 0;  // PROF_MEMORY_RESERVED
    std::int64_t reserved() const noexcept { return std::max(allocated, reported_reserved); }
  };
  struct address_hash {
    std::size_t operator()(const std::pair<int, std::uint64_t>& k) const noexcept {
      return std::hash<std::uint64_t>{}(k.second ^ (static_cast<std::uint64_t>(k.first) << 48));
    }
  };
  std::unordered_map<std::pair<int, std::uint64_t>, live_allocation, address_hash> live;
  std::map<int, device_totals> totals;
  std::int64_t current_step = -1;
  // Memory and step events of the current drain, to resolve in time order.
  struct timed_event {
    std::uint64_t ticks;
    const event* e;
    resolved_memory* out;  // null for a step
  };
  std::vector<timed_event> timeline;
  // At a window switch: what the next window starts from.
  struct next_window_start {
    bool after_gap = false;
    std::int64_t first_step = -1;
  };
  std::optional<next_window_start> next_start;  // set while a switch opens a window
  bool next_profile_memory = false;              // ... and whether that window records memory
  std::vector<memory_record> preexisting_at_split;
  std::vector<gpu_memory_event> gpu_memory;  // the closing window's CUDA allocations
  // Async ranges by id, across threads: open ones, and ends seen first.
  std::unordered_map<std::uint64_t, open_async> open_asyncs;
  std::unordered_map<std::uint64_t, early_async_end> early_async_ends;
  // Scopes that end on another thread than their begin's, by begin index:
  // those whose begin's thread gave them up (now async ranges in
  // open_asyncs, under the id given here), and ends seen before their begin.
  std::unordered_map<std::uint64_t, std::uint64_t> moved_async_ids;
  std::unordered_map<std::uint64_t, early_async_end> early_moved_ends;
  // Threads by their ring's uid.
  std::unordered_map<std::uint64_t, thread_record*> by_uid;
  // Some event was lost since the live allocations were last reset: a free
  // of an unknown address may be one whose allocation was lost.
  bool memory_lost = false;

  // ---- event processing (mutex held) ----

  static bool is_memory(event_kind k) noexcept {
    return k == event_kind::alloc || k == event_kind::free || k == event_kind::reserved;
  }

  // Inlined into the drain loops: left to itself GCC keeps it out of line
  // and then stops inlining the scope stack's operations into it (callgrind:
  // 0.5 more units per drained scope of bench/README's measure).
  PROFTRACE_ALWAYS_INLINE void process(thread_state& ts, thread_record* rec, const event* e, window* w) {
    const auto kind = static_cast<event_kind>(e->kind);
    if (PROFTRACE_UNLIKELY(kind == event_kind::gap)) {
      on_gap(ts, *e);
      return;
    }
    const std::uint64_t index = ts.next_index;
    ts.next_index += record_length(*e);
    ts.last_ticks = e->ticks;
    if (kind == event_kind::extension) return;  // its head was lost
    if (is_memory(kind)) {
      resolved_memory m;
      if (ts.resolved.empty()) {
        resolve(*e, m);  // a streamed drain (no memory window): in this thread's order
      } else {
        m = ts.resolved.front();
        ts.resolved.pop_front();
      }
      if (w != nullptr && e->ticks >= w->start_ticks) record_memory(ts, rec, *e, m, *w);
      else if (w != nullptr) ++w->losses.late;
      return;
    }
    if (w == nullptr) return;                     // recorded outside any window
    if (e->ticks < w->start_ticks) {
      ++w->losses.late;
      return;
    }
    const site* where = reinterpret_cast<const site*>(e->where);
    const std::int64_t ns = w->to_ns(e->ticks);
    if (ts.window_seen != w->id) w->name_thread(ts, registry::instance().name_of(rec));
    switch (kind) {
      case event_kind::begin:
      case event_kind::shapes:
      case event_kind::comm: {
        open_scope s;
        s.where = where;
        s.begin_ns = ns;
        s.payload = e->payload;
        // A step's payload is its number; a CUDA external id it pushed follows in an extension slot.
        const std::uint64_t pushed = where->cat != category::step ? e->payload : e->extra > 0 ? e[1].ticks : 0;
        s.external_id = is_cuda_external_id(pushed) ? pushed : w->next_external_id++;
        if (kind == event_kind::shapes && w->opts.record_shapes) s.shapes = shapes_json(e + 1, e->extra);
        if (kind == event_kind::comm && e->extra > 0) {
          s.comm_bytes = static_cast<std::int64_t>(e[1].ticks);
          s.comm_peer = static_cast<std::int32_t>(e[1].where) - 1;
        }
        s.index = index;
        if (PROFTRACE_UNLIKELY(!early_moved_ends.empty()) && begin_of_moved_scope(ts, s, w)) break;
        ts.stack.push_back(std::move(s));
        break;
      }
      case event_kind::end: end_scope(ts, *e, where, ns, w); break;
      case event_kind::async_begin: {
        const open_async a{where, ns, ts.tid, w->next_external_id++};
        if (const auto early = early_async_ends.find(e->payload); early != early_async_ends.end()) {
          w->write_async(a, e->payload, early->second.end_ns, early->second.tid);
          early_async_ends.erase(early);
        } else {
          open_asyncs[e->payload] = a;
        }
        break;
      }
      case event_kind::async_end: {
        const auto found = open_asyncs.find(e->payload);
        if (found == open_asyncs.end()) {
          early_async_ends[e->payload] = {ns, ts.tid};
          break;
        }
        w->write_async(found->second, e->payload, ns, ts.tid);
        open_asyncs.erase(found);
        break;
      }
      case event_kind::flops:
        if (e->where != 0) ++w->invalid_flop_estimates;
        else if (ts.stack.empty()) ++w->unscoped_flop_estimates;
        else ts.stack.back().flops += static_cast<std::int64_t>(e->payload);
        break;
      case event_kind::instant: w->write_instant(ts, *where, ns); break;
      case event_kind::counter: {
        double v;
        std::memcpy(&v, &e->payload, sizeof v);
        w->write_counter(ts, *where, ns, v);
        break;
      }
      default: break;
    }
  }

  // ---- pairing (mutex held): begins and ends into scopes ----
  //
  // An end names its begin by index, so pairing is exact: a lost event never
  // makes a later end close an earlier instance. Gap records say where
  // events were lost; a scope open across a gap may have lost its end
  // there. When something shows that such a scope is over (an end of a
  // scope around it, or the trace closing), it is written up to the last
  // event seen before the gap, with "truncated": true. A scope open with no
  // gap whose end does not come on its thread ended on another one: it
  // becomes an async range, closed by the end that thread recorded.

  // A gap: every scope open now is frozen at the last event seen before it.
  void on_gap(thread_state& ts, const event& e) {
    if (e.payload != 0) {
      ts.next_index = e.payload;  // handed out by consume(): the survivors start there
    } else {
      ts.next_index += 1;  // written by the producer: it took a slot
      ts.marked_drops += e.where;
    }
    freeze(ts);
  }

  void freeze(thread_state& ts) {
    for (std::size_t i = ts.frozen; i < ts.stack.size(); ++i) {
      open_scope& s = ts.stack[i];
      if (s.frozen) continue;
      s.frozen = true;
      s.frozen_ticks = ts.last_ticks;
    }
    ts.frozen = ts.stack.size();
    memory_lost = true;
  }

  void end_scope(thread_state& ts, const event& e, const site* where, std::int64_t ns, window* w) {
    const std::uint64_t begin = e.payload;
    if (!names_a_begin(begin)) {
      if (begin == no_begin) ++w->losses.unpaired;  // its begin was dropped (and counted there)
      else end_by_site(ts, where, ns, w, begin == cancel_end);
      return;
    }
    if (ring_uid_of(begin) != ts.uid) {
      end_moved(ts, begin, ns, w);
      return;
    }
    // Indices grow up the stack: the match is at or near the top.
    std::size_t k = ts.stack.size();
    while (k > 0 && ts.stack[k - 1].index > begin) --k;
    const bool found = k > 0 && ts.stack[k - 1].index == begin;
    // Whatever began after it and is still open ended unseen.
    std::vector<open_scope> kept = unwind_to(ts, k, w);
    if (found) close_top(ts, w, ns, false);
    else ++w->losses.unpaired;  // its begin was lost (and counted), or preceded this trace
    for (auto it = kept.rbegin(); it != kept.rend(); ++it) ts.stack.push_back(std::move(*it));
  }

  // Drops after the last record taken have no gap record yet (it comes
  // with the next record, if any): when a decision cannot wait for it (the
  // thread exited, the trace closes), they freeze what is open.
  void freeze_if_unmarked_drops(thread_state& ts, const ring& r) {
    if (r.dropped() > ts.marked_drops) freeze(ts);
  }

  // An end with no begin index: the innermost open scope of its site closes.
  // profile::step()'s annotations need not nest with user scopes (as torch's
  // record_function): they close in place and are stepped over.
  void end_by_site(thread_state& ts, const site* where, std::int64_t ns, window* w, bool cancelled) {
    std::size_t k = ts.stack.size();
    while (k > 0 && ts.stack[k - 1].where != where) --k;
    if (k == 0) {
      // Its begin preceded the window or was lost. A step annotation's
      // begin is also dropped on purpose when PROF_STEP annotates steps.
      if (where != &api_step_site) ++w->losses.unpaired;
      return;
    }
    std::vector<open_scope> kept;
    if (where == &api_step_site) {
      for (std::size_t i = ts.stack.size(); i-- > k;) kept.push_back(std::move(ts.stack[i]));
      ts.stack.resize(k);
      if (ts.frozen > k) ts.frozen = k;
    } else {
      kept = unwind_to(ts, k, w);
    }
    close_top(ts, w, ns, cancelled);
    for (auto it = kept.rbegin(); it != kept.rend(); ++it) ts.stack.push_back(std::move(*it));
  }

  // Takes every entry at `k` and above off the stack: their ends will not
  // come on this thread. Step annotations of profile::step() are stepped
  // over: returned, innermost first, for the caller to put back once it
  // closed what it closes.
  std::vector<open_scope> unwind_to(thread_state& ts, std::size_t k, window* w) {
    std::vector<open_scope> kept;
    while (ts.stack.size() > k) {
      if (ts.stack.back().where == &api_step_site) {
        kept.push_back(std::move(ts.stack.back()));
        ts.stack.pop_back();
        if (ts.frozen > ts.stack.size()) ts.frozen = ts.stack.size();
        continue;
      }
      give_up_top(ts, w);
    }
    return kept;
  }

  // The top entry's end will not come on this thread. After a gap it was
  // lost: written truncated. Without one, it ended (or will end) on another
  // thread: an async range from here to that end.
  void give_up_top(thread_state& ts, window* w) {
    open_scope& top = ts.stack.back();
    if (top.frozen || w == nullptr) {
      close_truncated_top(ts, w);
      return;
    }
    open_scope s = std::move(top);
    ts.stack.pop_back();
    if (ts.frozen > ts.stack.size()) ts.frozen = ts.stack.size();
    const open_async a{s.where, s.begin_ns, ts.tid, s.external_id};
    if (const auto early = early_moved_ends.find(s.index); early != early_moved_ends.end()) {
      write_moved(*w, a, early->second.end_ns, early->second.tid);
      early_moved_ends.erase(early);
      return;
    }
    const std::uint64_t id = next_async_id.fetch_add(1, std::memory_order_relaxed);
    open_asyncs[id] = a;
    moved_async_ids[s.index] = id;
  }

  void close_truncated_top(thread_state& ts, window* w) {
    if (w == nullptr) {
      ts.stack.pop_back();
      if (ts.frozen > ts.stack.size()) ts.frozen = ts.stack.size();
      return;
    }
    const open_scope& top = ts.stack.back();
    const std::int64_t at = top.frozen ? std::max(w->to_ns(top.frozen_ticks), top.begin_ns) : w->to_ns(ts.last_ticks);
    close_top(ts, w, std::max(at, top.begin_ns), false, true);
  }

  void write_moved(window& w, const open_async& a, std::int64_t end_ns, std::int64_t end_tid) {
    ++w.moved_scopes;
    w.write_async(a, next_async_id.fetch_add(1, std::memory_order_relaxed), end_ns, end_tid);
  }

  // An end recorded on this thread for a scope that began on another.
  void end_moved(thread_state& ts, std::uint64_t begin, std::int64_t ns, window* w) {
    if (const auto parked = moved_async_ids.find(begin); parked != moved_async_ids.end()) {
      if (const auto a = open_asyncs.find(parked->second); a != open_asyncs.end()) {
        ++w->moved_scopes;
        w->write_async(a->second, a->first, ns, ts.tid);
        open_asyncs.erase(a);
      }
      moved_async_ids.erase(parked);
      return;
    }
    if (const auto owner = by_uid.find(ring_uid_of(begin)); owner != by_uid.end()) {
      const auto found = threads.find(owner->second);
      if (found != threads.end()) {
        thread_state& o = found->second;
        const auto it = std::lower_bound(o.stack.begin(), o.stack.end(), begin,
                                         [](const open_scope& s, std::uint64_t i) { return s.index < i; });
        if (it != o.stack.end() && it->index == begin) {
          const open_async a{it->where, it->begin_ns, o.tid, it->external_id};
          const auto at = static_cast<std::size_t>(it - o.stack.begin());
          o.stack.erase(it);
          if (o.frozen > at) --o.frozen;
          write_moved(*w, a, ns, ts.tid);
          return;
        }
      }
    }
    early_moved_ends[begin] = {ns, ts.tid};  // its begin is still to come (or was lost)
  }

  // A begin whose end, recorded on another thread, came first.
  bool begin_of_moved_scope(thread_state& ts, const open_scope& s, window* w) {
    const auto early = early_moved_ends.find(s.index);
    if (early == early_moved_ends.end()) return false;
    write_moved(*w, open_async{s.where, s.begin_ns, ts.tid, s.external_id}, early->second.end_ns, early->second.tid);
    early_moved_ends.erase(early);
    return true;
  }

  // Attributes an allocation or free to the innermost open scope and writes
  // its "[memory]" event; remembers it for the memory timeline.
  void record_memory(thread_state& ts, thread_record* rec, const event& e, const resolved_memory& m, window& w) {
    const auto kind = static_cast<event_kind>(e.kind);
    const int device = payload_device(e.payload);
    const std::int64_t ns = w.to_ns(e.ticks);
    if (kind == event_kind::free && !m.known) {
      // After a loss, its allocation was most likely lost (and counted):
      // this free is counted once more as a lost pair, not as a user's error.
      if (memory_lost) ++w.losses.unpaired;
      else ++w.unknown_frees;
      return;
    }
    w.memory_records.push_back(record_of(ns, m, device, kind));
    if (kind == event_kind::reserved) return;
    if (ts.window_seen != w.id) w.name_thread(ts, registry::instance().name_of(rec));
    if (ts.stack.empty()) w.unscoped_memory(device, m.bytes);
    else ts.stack.back().mem_self[device < 0 ? 0 : 1] += m.bytes;
    w.write_memory(ts.tid, ns, device, e.where, m);
  }

  // Queues the CUDA allocations of a closing memory window for the drain at
  // the switch, clamped into the window (CUPTI's clock runs apart from ours
  // by calibration error only).
  void add_gpu_memory(const gpu_batch& gpu, std::uint64_t split_ticks) {
    gpu_memory.clear();
    if (!current || !current->opts.profile_memory) return;
    for (const gpu_activity& a : gpu.activities) {
      if (a.kind != gpu_activity_kind::memory) continue;
      const int device = is_host_memory_kind(a.memory_kind) ? -1 : static_cast<int>(a.device);
      const std::uint64_t ticks = std::clamp(current->cal.from_unix_ns(a.start_ns), current->start_ticks, split_ticks);
      const event_kind kind = a.is_free ? event_kind::free : event_kind::alloc;
      gpu_memory.push_back({&a,
                            event{ticks, a.address, memory_payload(a.is_free ? 0 : static_cast<std::int64_t>(a.bytes), device),
                                  static_cast<std::uint32_t>(kind), 0},
                            {}});
    }
    for (gpu_memory_event& g : gpu_memory) timeline.push_back({g.e.ticks, &g.e, &g.m});
  }

  // Applies the drain's memory events to the live allocations in time order
  // across threads (an address freed on another thread than the one that
  // allocated it is matched whichever ring is drained first) and tracks the
  // schedule's step from the step annotations. With a split, the state at
  // `split_ticks` is what the next window starts from.
  void resolve_memory(bool split, std::uint64_t split_ticks) {
    std::stable_sort(timeline.begin(), timeline.end(),
                     [](const timed_event& a, const timed_event& b) { return a.ticks < b.ticks; });
    bool crossed = !split;
    for (const timed_event& t : timeline) {
      if (!crossed && t.ticks > split_ticks) {
        cross_split();
        crossed = true;
      }
      if (t.out == nullptr) {
        current_step = std::max(current_step, static_cast<std::int64_t>(t.e->payload));
        continue;
      }
      resolve(*t.e, *t.out);
    }
    if (!crossed) cross_split();
    timeline.clear();
  }

  void resolve(const event& e, resolved_memory& m) {
    const auto kind = static_cast<event_kind>(e.kind);
    const int device = payload_device(e.payload);
    device_totals& dev = totals[device];
    m.step = current_step;
    if (kind == event_kind::reserved) {
      dev.reported_reserved = payload_bytes(e.payload);
      m.bytes = dev.reported_reserved;
    } else if (kind == event_kind::alloc) {
      m.bytes = payload_bytes(e.payload);
      m.category = static_cast<memory_category>(payload_category(e.payload));
      live_allocation& a = live[{device, e.where}];
      dev.allocated -= a.bytes;  // an address reported twice without a free: the later size stands
      a = {m.bytes, m.category};
      dev.allocated += m.bytes;
    } else {
      const auto found = live.find({device, e.where});
      if (found == live.end()) {
        m.known = false;
        return;
      }
      m.bytes = -found->second.bytes;
      m.category = found->second.category;
      dev.allocated += m.bytes;
      live.erase(found);
    }
    m.total_allocated = dev.allocated;
    m.total_reserved = dev.reserved();
  }

  // The switch point: a window after a gap starts from nothing (what was
  // allocated while nothing recorded is unknown); a window that follows
  // another starts with the allocations still live.
  void cross_split() {
    preexisting_at_split.clear();
    if (!next_start) return;
    if (next_start->after_gap) {
      live.clear();
      totals.clear();
      memory_lost = false;
      current_step = next_start->first_step;
      return;
    }
    current_step = std::max(current_step, next_start->first_step);
    for (const auto& [key, a] : live) {
      const device_totals& dev = totals[key.first];
      preexisting_at_split.push_back({-1, a.bytes, dev.allocated, dev.reserved(), current_step, key.first, a.category,
                                      memory_action::preexisting});
    }
    for (const auto& [device, dev] : totals)
      if (dev.reported_reserved > 0)
        preexisting_at_split.push_back({-1, dev.reported_reserved, dev.allocated, dev.reserved(), current_step, device,
                                        memory_category::unknown, memory_action::reserve});
  }

  // `truncated`: its end was lost; end_ns is the last moment it was seen open.
  void close_top(thread_state& ts, window* w, std::int64_t end_ns, bool cancelled, bool truncated = false) {
    open_scope s = std::move(ts.stack.back());
    ts.stack.pop_back();
    if (ts.frozen > ts.stack.size()) ts.frozen = ts.stack.size();
    const bool api_step = s.where == &api_step_site;
    if (cancelled || (api_step && discard_api_steps)) return;
    if (!truncated) {  // its end came: what ended inside it after its freeze was its child after all
      s.child_ns += s.late_child_ns;
      for (int i = 0; i < 2; ++i) s.mem_child[i] += s.late_mem_child[i];
    }
    s.truncated = truncated;
    if (truncated) ++w->truncated_scopes;
    const std::int64_t dur = end_ns > s.begin_ns ? end_ns - s.begin_ns : 0;
    if (!ts.stack.empty()) {
      open_scope& parent = ts.stack.back();
      const bool late = parent.frozen && end_ns > w->to_ns(parent.frozen_ticks);
      (late ? parent.late_child_ns : parent.child_ns) += dur;
      for (int i = 0; i < 2; ++i) (late ? parent.late_mem_child : parent.mem_child)[i] += s.mem_self[i] + s.mem_child[i];
    }
    w->write_complete(ts, s, end_ns, ts.stack.size());
  }

  thread_state& state_of(thread_record* rec) {
    auto [it, fresh] = threads.try_emplace(rec);
    if (fresh) {
      thread_state& ts = it->second;
      ts.tid = rec->tid;
      ts.uid = rec->events->uid();
      ts.next_index = ts.uid << ring_uid_shift;
      by_uid[ts.uid] = rec;
    }
    return it->second;
  }

  // Takes what `ts`'s ring holds into ts.batch, noting its memory and step
  // events for resolve_memory. Bounded, so a producer that never pauses
  // cannot keep the flusher here.
  void take(thread_state& ts, ring& r) {
    ts.batch.clear();
    for (std::size_t round = 0; round <= r.capacity() / chunk.size() + 1; ++round) {
      std::size_t first = 0;
      const std::size_t n = r.consume(chunk.data(), chunk.size(), &first);
      ts.batch.insert(ts.batch.end(), chunk.data() + first, chunk.data() + first + n);
      if (n == 0 && first == 0) break;
    }
    for (std::size_t i = 0; i < ts.batch.size(); i += record_length(ts.batch[i])) {
      const event& e = ts.batch[i];
      const auto kind = static_cast<event_kind>(e.kind);
      if (is_memory(kind)) {
        timeline.push_back({e.ticks, &e, &ts.resolved.emplace_back()});
      } else if (kind == event_kind::begin && reinterpret_cast<const site*>(e.where)->cat == category::step) {
        timeline.push_back({e.ticks, &e, nullptr});
      }
    }
  }

  static std::size_t record_length(const event& e) noexcept {
    return static_cast<event_kind>(e.kind) == event_kind::extension ? 1 : 1 + e.extra;
  }

  // Consumes every ring. Events after `split_ticks` are parked in `pending`
  // when `split` is set (and so is everything after them on that thread);
  // otherwise everything goes to the current window. Memory windows take
  // every ring first and resolve memory events in time order; the others
  // stream each ring's chunks straight through (no copy, no scan).
  // `yield`: the periodic drain, which stops between chunks when a program
  // thread waits for the lock (fork(), step(), stop()): the rest stays in
  // the rings for the next round, so none of them waits for a whole flush.
  void drain(bool split, std::uint64_t split_ticks, bool yield = false) {
    if ((current && current->opts.profile_memory) || next_profile_memory) drain_batched(split, split_ticks);
    else drain_streamed(split, split_ticks, yield);
    const std::uint64_t unattached = registry::instance().unattached_drops.load(std::memory_order_relaxed);
    if (unattached != unattached_seen) memory_lost = true;
    if (current) current->losses.unattached += unattached - unattached_seen;
    unattached_seen = unattached;
  }

  // Processes one record, or parks it (and the rest of its thread's) after a split.
  void route(thread_state& ts, thread_record* rec, const event* e, std::size_t len, bool split,
             std::uint64_t split_ticks, bool& parking) {
    parking = parking || (split && e->ticks > split_ticks);
    if (parking) ts.pending.insert(ts.pending.end(), e, e + len);
    else process(ts, rec, e, current.get());
  }

  void reap_if_done(thread_state& ts, thread_record* rec) {
    if (ts.exited && rec->events->empty() && ts.pending.empty()) {
      // What is still open will not end on this thread (a coroutine it
      // began, resumed elsewhere), or lost its end.
      freeze_if_unmarked_drops(ts, *rec->events);
      while (!ts.stack.empty()) give_up_top(ts, current.get());
      by_uid.erase(ts.uid);
      threads.erase(rec);
      registry::instance().reap(rec);
    }
  }

  bool caller_waits() const noexcept { return callers_waiting.load(std::memory_order_acquire) > 0; }

  void drain_streamed(bool split, std::uint64_t split_ticks, bool yield) {
    for (thread_record* rec : registry::instance().snapshot()) {
      if (yield && caller_waits()) return;
      thread_state& ts = state_of(rec);
      ts.exited = rec->exited.load(std::memory_order_acquire);
      ring& r = *rec->events;
      bool parking = false;
      for (std::size_t round = 0; round <= r.capacity() / chunk.size() + 1 && !(yield && caller_waits()); ++round) {
        std::size_t first = 0;
        const std::size_t n = r.consume(chunk.data(), chunk.size(), &first);
        const event* ev = chunk.data() + first;
        for (std::size_t i = 0; i < n; i += record_length(ev[i]))
          route(ts, rec, ev + i, record_length(ev[i]), split, split_ticks, parking);
        if (n == 0 && first == 0) break;
      }
      account_losses(ts, r);
      reap_if_done(ts, rec);
    }
  }

  void drain_batched(bool split, std::uint64_t split_ticks) {
    const std::vector<thread_record*> records = registry::instance().snapshot();
    for (thread_record* rec : records) {
      thread_state& ts = state_of(rec);
      ts.exited = rec->exited.load(std::memory_order_acquire);
      take(ts, *rec->events);
      account_losses(ts, *rec->events);
    }
    resolve_memory(split, split_ticks);
    for (thread_record* rec : records) {
      thread_state& ts = state_of(rec);
      bool parking = false;
      for (std::size_t i = 0; i < ts.batch.size(); i += record_length(ts.batch[i]))
        route(ts, rec, &ts.batch[i], record_length(ts.batch[i]), split, split_ticks, parking);
      ts.batch.clear();
      reap_if_done(ts, rec);
    }
  }

  void account_losses(thread_state& ts, ring& r) {
    const std::uint64_t d = r.dropped(), o = r.overwritten();
    if (d != ts.dropped_seen || o != ts.overwritten_seen) memory_lost = true;
    if (current) {
      current->losses.dropped += d - ts.dropped_seen;
      current->losses.overwritten += o - ts.overwritten_seen;
    }
    ts.dropped_seen = d;
    ts.overwritten_seen = o;
  }

  // User code (a warning handler) never runs under the flusher lock: it may
  // record events, and a full ring under `block` would wait for this lock.
  std::string take_warning() {
    std::string w;
    if (current) w.swap(current->pending_warning);
    return w;
  }

  // The lock, for a program thread: the flusher steps aside for it.
  std::unique_lock<std::mutex> lock_as_caller() {
    callers_waiting.fetch_add(1, std::memory_order_acq_rel);
    std::unique_lock lock(mutex);
    callers_waiting.fetch_sub(1, std::memory_order_acq_rel);
    return lock;
  }

  void run() {
    const in_profiler_guard own_thread;
    mark_flusher_thread();
    std::unique_lock lock(mutex);
    while (!quit) {
      if (callers_waiting.load(std::memory_order_acquire) > 0) {
        lock.unlock();
        while (callers_waiting.load(std::memory_order_acquire) > 0) std::this_thread::yield();
        lock.lock();
        continue;
      }
      cv.wait_for(lock, period, [&] { return quit || wake_requested.load(std::memory_order_relaxed); });
      wake_requested.store(false, std::memory_order_relaxed);
      drain(false, 0, /*yield=*/true);
      if (current && !caller_waits()) current->commit();  // or at the next round: the caller goes first
      if (std::string w = take_warning(); !w.empty()) {
        lock.unlock();
        warn(w);
        lock.lock();
      }
    }
    alive.store(false, std::memory_order_release);
  }

  void stop() {
    {
      std::lock_guard lock(mutex);
      quit = true;
    }
    cv.notify_one();
    if (thread.joinable()) thread.join();
  }
};

flusher& flusher::instance() {
  static flusher* f = new flusher;  // never destroyed: rings may outlive main
  return *f;
}

flusher::impl& flusher::state() {
  static impl* s = new impl;
  return *s;
}

void flusher::ensure_running(std::chrono::milliseconds period) {
  impl& s = state();
  std::lock_guard lock(s.mutex);
  s.period = period;
  if (s.alive.load(std::memory_order_acquire) || s.quit) return;
  s.alive.store(true, std::memory_order_release);
  // Signals go to the program's threads, never to the flusher: a handler
  // that finishes the trace must not interrupt the thread that writes it,
  // and a file-size limit's SIGXFSZ becomes a failed write (EFBIG).
  sigset_t all, previous;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  s.thread = std::thread([&s] { s.run(); });
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  static bool registered = false;
  if (!registered) {
    registered = true;
    std::atexit([] { flusher::instance().state().stop(); });
  }
}

bool flusher::running() const noexcept { return state().alive.load(std::memory_order_acquire); }

void flusher::wake() noexcept {
  impl& s = state();
  if (!s.wake_requested.exchange(true, std::memory_order_relaxed)) s.cv.notify_one();
}

std::shared_ptr<finished_trace> flusher::switch_window(std::uint64_t at_ticks, std::optional<window_options> next_options,
                                                       bool discard_api_steps, gpu_batch gpu) {
  impl& s = state();
  const in_profiler_guard guard;
  std::vector<std::string> warnings;
  std::unique_lock lock = s.lock_as_caller();
  std::unique_ptr<window> next;
  if (next_options) {
    s.next_start = impl::next_window_start{!s.current, next_options->first_step};
    s.next_profile_memory = next_options->profile_memory;
    next = std::make_unique<window>(std::move(*next_options), at_ticks, ++s.windows_made);
  }
  s.discard_api_steps = discard_api_steps;
  s.add_gpu_memory(gpu, at_ticks);
  s.drain(true, at_ticks);
  s.next_start.reset();
  s.next_profile_memory = false;

  std::shared_ptr<finished_trace> done;
  window* old = s.current.get();
  const std::int64_t old_at = old ? old->to_ns(at_ticks) : 0;
  const std::int64_t next_at = next ? next->to_ns(at_ticks) : 0;
  for (auto& [rec, ts] : s.threads) {
    // Clip the open scopes at the switch point, outermost last so that
    // children's time reaches their parents; carry them into `next`. A
    // scope frozen by a gap closes truncated and is not carried: its end
    // was most likely lost (if it comes, it is counted as unpaired).
    s.freeze_if_unmarked_drops(ts, *rec->events);
    std::vector<open_scope> carried = ts.stack;
    if (old) {
      while (!ts.stack.empty()) {
        if (ts.stack.back().frozen) s.close_truncated_top(ts, old);
        else s.close_top(ts, old, old_at, false);
      }
    }
    ts.stack.clear();
    ts.frozen = 0;
    if (next) {
      for (auto& c : carried) {
        const bool api_step = c.where == &api_step_site;
        if ((api_step && discard_api_steps) || c.frozen) continue;
        c.begin_ns = next_at;
        c.child_ns = 0;
        c.late_child_ns = 0;
        for (int i = 0; i < 2; ++i) c.late_mem_child[i] = 0;
        if (!is_cuda_external_id(c.external_id)) c.external_id = next->next_external_id++;
        ts.stack.push_back(std::move(c));
      }
    }
  }
  // Async ranges still open are clipped and carried like scopes; an end
  // whose begin never came lost it.
  for (auto& [id, a] : s.open_asyncs) {
    if (old) old->write_async(a, id, old_at, a.tid);
    if (next) {
      a.begin_ns = next_at;
      a.external_id = next->next_external_id++;
    }
  }
  if (!next) {
    s.open_asyncs.clear();
    s.moved_async_ids.clear();
  }
  if (old) old->losses.unpaired += s.early_async_ends.size() + s.early_moved_ends.size();
  s.early_async_ends.clear();
  s.early_moved_ends.clear();
  if (old) {
    old->write_gpu(gpu);
    old->write_gpu_memory(s.gpu_memory, gpu);
    old->commit();
    if (!old->pending_warning.empty()) warnings.push_back(std::move(old->pending_warning));
    auto f = std::make_shared<finished_trace>(old->snapshot());
    f->events = std::move(old->retained);
    f->memory = std::move(old->memory_records);
    f->write_error = old->file->error();
    f->stop_unix_ns = old_at;
    if (old->file->removed())
      warnings.push_back("proftrace: the trace file '" + old->file->path().string() +
                         "' was removed while recording; the trace is complete in the still open file and exports "
                         "as usual");
    f->spool = std::move(old->file);
    done = std::move(f);
  }
  s.current = std::move(next);
  s.gpu_memory.clear();
  if (s.current) s.current->memory_records = std::move(s.preexisting_at_split);
  s.preexisting_at_split.clear();
  for (auto& [rec, ts] : s.threads) {
    std::vector<event> pending = std::move(ts.pending);
    ts.pending.clear();
    for (std::size_t i = 0; i < pending.size(); i += s.record_length(pending[i]))
      s.process(ts, rec, &pending[i], s.current.get());
  }
  if (s.current) s.current->commit();
  if (std::string w = s.take_warning(); !w.empty()) warnings.push_back(std::move(w));
  lock.unlock();
  for (auto& w : warnings) warn(w);
  return done;
}

bool flusher::add_metadata(std::string key, std::string raw_json) {
  impl& s = state();
  const std::unique_lock lock = s.lock_as_caller();
  if (!s.current) return false;
  s.current->tail_metadata.emplace_back(std::move(key), std::move(raw_json));
  return true;
}

void flusher::flush_now() {
  impl& s = state();
  const in_profiler_guard guard;
  std::string warning;
  {
    const std::unique_lock lock = s.lock_as_caller();
    s.drain(false, 0);
    if (s.current) s.current->commit();
    warning = s.take_warning();
  }
  if (!warning.empty()) warn(warning);
}

void flusher::prepare_fork() noexcept {
  state().lock_as_caller().release();  // held across fork(); unlocked by the handlers below
  registry::instance().lock_for_fork();
}

void flusher::parent_after_fork() noexcept {
  registry::instance().unlock_after_fork();
  state().mutex.unlock();
}

void flusher::child_after_fork() noexcept {
  impl& s = state();
  // The parent's flusher thread does not exist here: forget it without
  // joining, and give the child a condition variable no one waits on.
  ::new (static_cast<void*>(&s.thread)) std::thread();
  ::new (static_cast<void*>(&s.cv)) std::condition_variable();
  s.alive.store(false, std::memory_order_relaxed);
  s.wake_requested.store(false, std::memory_order_relaxed);
  s.callers_waiting.store(0, std::memory_order_relaxed);  // those were the parent's threads
  s.quit = false;
  s.current.reset();  // the parent goes on writing it; this only closes our descriptor
  s.threads.clear();
  s.by_uid.clear();
  s.moved_async_ids.clear();
  s.early_moved_ends.clear();
  s.timeline.clear();
  s.next_start.reset();
  s.next_profile_memory = false;
  s.preexisting_at_split.clear();
  s.gpu_memory.clear();
  registry::instance().keep_only_this_thread_after_fork();
  registry::instance().unlock_after_fork();
  s.mutex.unlock();
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer still lists the parent's threads here; glibc would give
  // the child's first new threads their cached stacks, hence their pthread_t
  // ids, which TSan takes for duplicates ("dup thread with used id"). Stacks
  // a little larger than any cached one are fresh mappings with new ids, so
  // a fresh_session child runs under TSan (with die_after_fork=0).
  pthread_attr_t attr;
  std::size_t stack = 0;
  if (::pthread_getattr_default_np(&attr) == 0) {
    ::pthread_attr_getstacksize(&attr, &stack);
    if (stack == 0) stack = std::size_t{8} << 20;
    ::pthread_attr_setstacksize(&attr, stack + (std::size_t{1} << 20));
    ::pthread_setattr_default_np(&attr);
    ::pthread_attr_destroy(&attr);
  }
#endif
}

void wake_flusher() noexcept { flusher::instance().wake(); }
bool flusher_running() noexcept { return flusher::instance().running(); }

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
