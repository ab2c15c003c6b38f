#include "perfetto_writer.hpp"

#include <algorithm>

#include "formats/kineto_json/gpu_trace_writer.hpp"
#include "formats/json_text.hpp"
#include "formats/stack_frames.hpp"
#include "records/finished_trace.hpp"
#include "perfetto_reader.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {
constexpr std::uint32_t events_sequence = 1;
constexpr std::uint32_t tail_sequence = 2;
constexpr std::uint32_t first_thread_sequence = 3;
constexpr std::uint64_t steps_track_key = 1;  // a thread's profile::step() annotations (they need not nest)
constexpr std::uint64_t cuda_api_track_key = 2;

}  // namespace

perfetto_writer::perfetto_writer(const trace_head& head)
    : head_(head), main_(stage_, events_sequence), next_sequence_(first_thread_sequence) {
  process_track_ = main_.builder.process_track(head_.pid, head_.process_name, {.sort_index = head_.pid, .labels = "CPU"});  // as the JSON writer's
  // What the JSON trace holds in its top-level keys, so that a converted or
  // merged trace keeps its rank and clock alignment.
  std::vector<std::pair<std::string, std::string>> metadata = head_.metadata;
  if (!head_.devices.empty()) metadata.emplace_back("deviceProperties", device_properties_json(head_.devices));
  metadata.emplace_back("baseTimeNanoseconds", std::to_string(head_.base_ns));
  main_.builder.trace_metadata(metadata);
}

std::string perfetto_writer::tail(const finished_trace& f, const std::string& trace_name) {
  std::string out;
  perfetto_builder b(out, tail_sequence);
  // The JSON trace's closing keys, so that a converted trace ends as a JSON
  // one does; the instant below shows the same counters in Perfetto UI.
  std::vector<std::pair<std::string, std::string>> metadata = f.tail_metadata;
  metadata.emplace_back("proftrace", f.counters_json());
  std::string name_json;
  append_json_string(name_json, trace_name);
  metadata.emplace_back("traceName", std::move(name_json));
  b.trace_metadata(metadata);
  std::vector<annotation> args;
  const std::string_view policy = to_string(f.overflow);
  args.push_back({.name = "traceName", .value = std::string_view(trace_name)});
  args.push_back({.name = "overflow_policy", .value = std::string_view(policy)});
  const auto counters = f.counter_list();
  for (const auto& [key, value] : counters) args.push_back({.name = key, .value = value});
  if (!f.write_error.empty()) {
    args.push_back({.name = "incomplete", .value = std::string_view(f.write_error)});
    args.push_back({.name = f.not_written_key(), .value = f.events_not_written});
  }
  b.instant(b.named_track("proftrace", 0, 0), std::max(f.stop_unix_ns, f.start_unix_ns), "proftrace", "proftrace", args);
  return b.out();
}

perfetto_writer::thread_entry& perfetto_writer::new_thread(std::int64_t tid) {
  auto [it, fresh] = threads_.try_emplace(tid);
  if (fresh)
    it->second.track = main_.builder.thread_track(head_.pid, tid, "thread " + std::to_string(tid), {.sort_index = tid});
  last_tid_ = tid;
  last_thread_ = &it->second;
  return it->second;
}

void perfetto_writer::thread(std::int64_t tid, const std::string& name) {
  auto [it, fresh] = threads_.try_emplace(tid);
  if (fresh)
    it->second.track = main_.builder.thread_track(head_.pid, tid, name.empty() ? "thread " + std::to_string(tid) : name,
                                                  {.sort_index = tid});
}

perfetto_writer::packet_sequence& perfetto_writer::new_sequence(thread_entry& t) {
  const perfetto_builder::thread_defaults defaults{.default_track = t.track, .origin_unix_ns = head_.start_ns};
  t.events = std::make_unique<packet_sequence>(stage_, next_sequence_++, defaults);
  t.events->track = t.track;
  return *t.events;
}

void perfetto_writer::thread_done(std::int64_t tid) {
  const auto it = threads_.find(tid);
  if (it != threads_.end()) it->second.events.reset();
}

const perfetto_writer::site_ids& perfetto_writer::packet_sequence::new_site(const site& where) {
  auto [it, fresh] = sites.try_emplace(&where);
  if (fresh) it->second = {builder.intern_name(where.name), builder.intern_category(category_name(where))};
  return recent.put(&where, recent_slot_hash(&where), it->second);
}

// The args a scope shows; `text` keeps the strings they point into.
std::size_t perfetto_writer::shapes_and_flops(std::span<const std::int64_t> shapes, std::int64_t flops,
                                              annotation (&out)[max_annotations], std::size_t n) {
  if (!shapes.empty()) {
    shapes_text_.clear();
    append_shapes_json(shapes_text_, shapes);
    out[n++] = {.name = "Input Dims", .value = json_value{shapes_text_}};
  }
  if (flops > 0) out[n++] = {.name = "flops", .value = flops};
  return n;
}

// PROF_ARG values, in record order (at most max_scope_args).
std::size_t perfetto_writer::user_args(const std::vector<scope_arg>& args, annotation (&out)[max_annotations],
                                       std::size_t n) {
  for (const scope_arg& a : args) {
    if (a.type == arg_type::integer) out[n++] = {.name = a.key, .value = a.integer};
    else if (a.type == arg_type::unsigned_integer) out[n++] = {.name = a.key, .value = static_cast<std::uint64_t>(a.integer)};
    else if (a.type == arg_type::floating) out[n++] = {.name = a.key, .value = a.floating};
    else out[n++] = {.name = a.key, .value = std::string_view(a.text)};
  }
  return n;
}

std::size_t perfetto_writer::scope_args(const packet_sequence& q, const thread_state& ts, const open_scope& s,
                                        annotation (&out)[max_annotations], std::string (&text)[2]) {
  std::size_t n = 0;
  out[n++] = {.name = {}, .name_iid = q.external_id_iid, .value = s.external_id};
  if (s.truncated) out[n++] = {.name = "truncated", .value = true};
  if (s.step == step_kind::thread_step) out[n++] = {.name = "step", .value = s.payload};
  n = shapes_and_flops(s.shapes, s.flops, out, n);
  if (s.comm_bytes >= 0) out[n++] = {.name = "bytes", .value = s.comm_bytes};
  if (s.comm_bytes >= 0 && s.comm_peer >= 0) out[n++] = {.name = "peer", .value = std::int64_t{s.comm_peer}};
  n = user_args(s.args, out, n);
  if (head_.with_stack) {
    text[0] = call_stack(ts, s);
    out[n++] = {.name = "Call stack", .value = std::string_view(text[0])};
  }
  if (head_.with_modules && !(text[1] = module_path(ts)).empty())
    out[n++] = {.name = "Module Hierarchy", .value = std::string_view(text[1])};
  return n;
}

void perfetto_writer::begin(packet_sequence& q, std::uint64_t track, const thread_state& ts, const open_scope& s,
                            bool with_args) {
  const bool step = is_profiler_step(s.step);
  const auto write = [&](annotations args) {
    if (step) {
      const std::string name = "ProfilerStep#" + std::to_string(s.payload);
      q.builder.slice_begin(track, s.begin_ns, perfetto_builder::one_off_name{name}, "user_annotation", args);
      return;
    }
    if (!s.dynamic_name.empty()) {
      q.builder.slice_begin(track, s.begin_ns, s.dynamic_name, category_name(*s.where), args);
      return;
    }
    const site_ids& ids = q.ids_of(*s.where);
    q.builder.slice_begin(track, s.begin_ns, ids.name, ids.category, args);
  };
  if (!with_args) return write({});
  if (only_external_id(s, head_) && !step) {
    const site_ids& ids = q.ids_of(*s.where);
    return q.builder.slice_begin(track, s.begin_ns, ids.name, ids.category, q.external_id_iid, s.external_id);
  }
  annotation args[max_annotations];
  std::string text[2];
  write(annotations(args, scope_args(q, ts, s, args, text)));
}

void perfetto_writer::announce_open(packet_sequence& q, thread_state& ts) {
  std::size_t first = ts.stack.size();
  while (first > 0 && !ts.stack[first - 1].announced) --first;
  for (std::size_t i = first; i < ts.stack.size(); ++i) {
    open_scope& outer = ts.stack[i];
    outer.announced = true;  // a step's span too, on a track of its own: its children take the inline path
    if (outer.step == step_kind::none && outer.dynamic_name.empty()) {  // the common one: its name's ids, no arg
      const site_ids& ids = q.ids_of(*outer.where);
      q.builder.slice_begin(q.track, outer.begin_ns, ids.name, ids.category, 0, 0);
    } else if (outer.step != step_kind::api_step) {
      begin(q, q.track, ts, outer, false);
    }
  }
}

void perfetto_writer::written_scope(thread_state& ts, const open_scope& s, std::int64_t end_ns) {
  if (s.step == step_kind::api_step) {  // on a track of its own: profile::step()'s spans need not nest with scopes
    const std::uint64_t steps = main_.builder.named_track("ProfilerStep", thread_track(ts.tid), steps_track_key);
    begin(main_, steps, ts, s, true);
    main_.builder.slice_end(steps, end_ns);
    return;
  }
  packet_sequence& q = sequence_of(ts.tid);
  const std::uint64_t track = q.track;
  announce_open(q, ts);
  if (!s.announced) {
    if (plain_slice(ts, s, head_)) {  // the common scope: two short packets
      const site_ids& ids = q.ids_of(*s.where);
      return q.builder.slice_pair(track, s.begin_ns, end_ns, ids.name, ids.category, q.external_id_iid, s.external_id);
    }
    begin(q, track, ts, s, true);
    q.builder.slice_end(track, end_ns);
    return;
  }
  if (only_external_id(s, head_)) return q.builder.slice_end(track, end_ns, q.external_id_iid, s.external_id);
  annotation args[max_annotations];
  std::string text[2];
  q.builder.slice_end(track, end_ns, annotations(args, scope_args(q, ts, s, args, text)));
}

// An async range (or a scope that ended on another thread): a slice on a
// track of its own, named after it, under the process.
void perfetto_writer::async(const open_async& a, std::uint64_t id, std::int64_t end_ns, std::int64_t end_tid) {
  const std::uint64_t track = main_.builder.named_track(a.name(), process_track_, id);
  annotation args[max_annotations] = {{.name = {}, .name_iid = main_.external_id_iid, .value = a.external_id},
                                      {.name = "begin thread", .value = a.tid},
                                      {.name = "end thread", .value = end_tid},
                                      {.name = "truncated", .value = true}};
  std::size_t n = a.truncated ? 4 : 3;
  n = user_args(a.args, args, shapes_and_flops(a.shapes, a.flops, args, n));
  main_.builder.slice_begin(track, a.begin_ns, a.name(), "async", annotations(args, n));
  main_.builder.slice_end(track, std::max(end_ns, a.begin_ns));
}

void perfetto_writer::withdrawn(std::int64_t tid, const open_scope& s, std::int64_t ns) {
  if (s.step == step_kind::api_step) return;  // its begin was never on the thread's track
  // Its begin's time: an END closes the innermost slice open on the track,
  // which is not this one when scopes its thread opened after it are still
  // open (an announced BEGIN carries no args); the readers find its BEGIN
  // by that time and skip the slice.
  const annotation moved[] = {{.name = withdrawn_slice_arg, .value = s.begin_ns}};
  packet_sequence& q = sequence_of(tid);
  q.builder.slice_end(q.track, ns, moved);
}

void perfetto_writer::memory(const memory_event& m) {
  if (m.kind == event_kind::reserved) return;
  const resolved_memory& r = *m.resolved;
  const annotation args[] = {{.name = "Device Type", .value = std::int64_t{m.device < 0 ? 0 : 1}},
                             {.name = "Device Id", .value = std::int64_t{m.device}},
                             {.name = "Addr", .value = m.address},
                             {.name = "Bytes", .value = r.bytes},
                             {.name = "Total Allocated", .value = r.total_allocated},
                             {.name = "Total Reserved", .value = r.total_reserved}};
  packet_sequence& q = sequence_of(m.tid);
  q.builder.instant(q.track, m.ns, "[memory]", "cpu_instant_event", args);
  const std::string name = m.device < 0 ? std::string("Total Allocated (CPU)")
                                        : "Total Allocated (cuda:" + std::to_string(m.device) + ")";
  main_.builder.counter(main_.builder.counter_track(name, process_track_), m.ns, static_cast<double>(r.total_allocated));
}

void perfetto_writer::instant(std::int64_t tid, const site& where, std::int64_t ns) {
  packet_sequence& q = sequence_of(tid);
  q.builder.instant(q.track, ns, q.ids_of(where).name, q.builder.intern_category("cpu_instant_event"));
}

void perfetto_writer::counter(std::int64_t, const site& where, std::int64_t ns, double value) {
  main_.builder.counter(main_.builder.counter_track(where.name, process_track_), ns, value);
}

std::uint64_t perfetto_writer::stream_track(std::uint32_t device, std::uint32_t stream) {
  const std::uint64_t gpu = main_.builder.named_track("GPU " + std::to_string(device), 0, device);
  return main_.builder.named_track("stream " + std::to_string(stream), gpu, stream);
}

// A device op on its stream's track, ending the flow its launch began; a
// host-side CUDA call on a track under its thread's, beginning that flow.
void perfetto_writer::gpu_activity_slice(const gpu_activity& a) {
  const std::uint64_t flow[] = {a.correlation};
  const annotation args[] = {{.name = {}, .name_iid = main_.external_id_iid, .value = a.external_id},
                             {.name = "correlation", .value = std::uint64_t{a.correlation}},
                             {.name = "device", .value = std::uint64_t{a.device}},
                             {.name = "stream", .value = std::uint64_t{a.stream}},
                             {.name = "bytes", .value = a.bytes}};
  const bool device_op = a.kind == gpu_activity_kind::kernel || a.kind == gpu_activity_kind::memcpy ||
                         a.kind == gpu_activity_kind::memset;
  const std::int64_t end = std::max(a.end_ns, a.start_ns);
  if (device_op) {
    const std::uint64_t track = stream_track(a.device, a.stream);
    main_.builder.slice_begin(track, a.start_ns, a.name, gpu_category_name(a.kind), annotations(args, 5));
    main_.builder.slice_end(track, end, {}, flow);
    return;
  }
  const std::uint64_t track = main_.builder.named_track("CUDA API", thread_track(a.thread), cuda_api_track_key);
  const bool launches = a.kind == gpu_activity_kind::runtime || a.kind == gpu_activity_kind::driver;
  main_.builder.slice_begin(track, a.start_ns, a.name, gpu_category_name(a.kind), annotations(args, 2),
                       launches && a.correlation != 0 ? std::span<const std::uint64_t>(flow) : std::span<const std::uint64_t>{});
  main_.builder.slice_end(track, end);
}

void perfetto_writer::gpu(const std::vector<gpu_activity>& activities, const std::vector<gpu_span>& spans) {
  for (const gpu_activity& a : activities)
    if (a.kind != gpu_activity_kind::memory) gpu_activity_slice(a);
  // A scope's projection onto a stream, on a track beside the stream's,
  // outer spans first and each closed before the next that does not nest in it.
  std::vector<gpu_span> sorted = spans;
  std::sort(sorted.begin(), sorted.end(), [](const gpu_span& x, const gpu_span& y) {
    return std::tie(x.device, x.stream, x.begin_ns, y.end_ns) < std::tie(y.device, y.stream, y.begin_ns, x.end_ns);
  });
  std::vector<const gpu_span*> open;
  const auto close_until = [&](const gpu_span* next) {
    while (!open.empty() && (!next || open.back()->device != next->device || open.back()->stream != next->stream ||
                             open.back()->end_ns <= next->begin_ns)) {
      const gpu_span& s = *open.back();
      main_.builder.slice_end(main_.builder.named_track("annotations", stream_track(s.device, s.stream), 0), s.end_ns);
      open.pop_back();
    }
  };
  for (const gpu_span& s : sorted) {
    close_until(&s);
    const annotation args[] = {{.name = {}, .name_iid = main_.external_id_iid, .value = s.external_id}};
    main_.builder.slice_begin(main_.builder.named_track("annotations", stream_track(s.device, s.stream), 0), s.begin_ns,
                         s.where->name, "gpu_user_annotation", args);
    open.push_back(&s);
  }
  close_until(nullptr);
}

}  // namespace proftrace::detail
