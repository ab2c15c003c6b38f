#include "gpu_trace_writer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_set>
#include <utility>

#include "formats/json_text.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

// GPU processes sort after the host's (Kineto does the same).
constexpr std::int64_t gpu_sort_base = 0x1000000;

void append_fixed(std::string& out, double v, int decimals) {
  const double scale = std::pow(10.0, decimals);
  append_double(out, std::round(v * scale) / scale);
}

// `, "key": v`: one integer member of the object being written.
template <class Int>
void append_int_member(std::string& out, std::string_view key, Int v) {
  out += ", \"";
  out += key;
  out += "\": ";
  append_int(out, v);
}

void append_triple(std::string& out, const std::array<std::int32_t, 3>& v) {
  out += '[';
  for (int i = 0; i < 3; ++i) {
    if (i) out += ", ";
    append_int(out, v[static_cast<std::size_t>(i)]);
  }
  out += ']';
}


bool on_device(gpu_activity_kind k) {
  return k == gpu_activity_kind::kernel || k == gpu_activity_kind::memcpy || k == gpu_activity_kind::memset ||
         k == gpu_activity_kind::sync;
}

bool launches(gpu_activity_kind k) { return k == gpu_activity_kind::runtime || k == gpu_activity_kind::driver; }

}  // namespace

kernel_occupancy estimate_occupancy(const gpu_activity& k, const gpu_device_properties& d) {
  kernel_occupancy o;
  const std::int64_t threads = std::int64_t{k.block[0]} * k.block[1] * k.block[2];
  const std::int64_t blocks = std::int64_t{k.grid[0]} * k.grid[1] * k.grid[2];
  if (d.num_sms <= 0 || d.warp_size <= 0 || threads <= 0 || blocks <= 0) return o;
  o.blocks_per_sm = static_cast<double>(blocks) / d.num_sms;
  o.warps_per_sm = o.blocks_per_sm * static_cast<double>(threads) / d.warp_size;
  if (d.max_threads_per_multiprocessor <= 0) return o;

  // Resident blocks per SM, as the occupancy calculator bounds them.
  const std::int64_t warps_per_block = (threads + d.warp_size - 1) / d.warp_size;
  const std::int64_t max_warps = d.max_threads_per_multiprocessor / d.warp_size;
  std::int64_t resident = max_warps / warps_per_block;
  if (d.max_blocks_per_multiprocessor > 0) resident = std::min<std::int64_t>(resident, d.max_blocks_per_multiprocessor);
  if (k.registers_per_thread > 0 && d.regs_per_multiprocessor > 0)
    resident = std::min<std::int64_t>(resident, d.regs_per_multiprocessor /
                                                    (std::int64_t{k.registers_per_thread} * warps_per_block * d.warp_size));
  if (k.shared_memory > 0 && d.shared_mem_per_multiprocessor > 0)
    resident = std::min<std::int64_t>(resident, static_cast<std::int64_t>(d.shared_mem_per_multiprocessor) / k.shared_memory);
  const double achieved_blocks = std::min(o.blocks_per_sm, static_cast<double>(resident));
  o.occupancy_percent = max_warps > 0 ? achieved_blocks * static_cast<double>(warps_per_block) / max_warps * 100.0 : 0;
  o.known = true;
  return o;
}

std::string device_properties_json(const std::vector<gpu_device_properties>& devices) {
  std::vector<const gpu_device_properties*> sorted;
  for (const auto& d : devices) sorted.push_back(&d);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->id < b->id; });
  std::string out = "[";
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const gpu_device_properties& d = *sorted[i];
    out += i ? ",\n    {" : "\n    {";
    out += "\"id\": ";
    append_int(out, d.id);
    out += ", \"name\": ";
    append_json_string(out, d.name);
    // Kineto's deviceProperties keys, in its order.
    const std::pair<const char*, std::int64_t> numbers[] = {
        {"totalGlobalMem", static_cast<std::int64_t>(d.total_global_mem)}, {"computeMajor", d.compute_major},
        {"computeMinor", d.compute_minor}, {"maxThreadsPerBlock", d.max_threads_per_block},
        {"maxThreadsPerMultiprocessor", d.max_threads_per_multiprocessor}, {"regsPerBlock", d.regs_per_block},
        {"regsPerMultiprocessor", d.regs_per_multiprocessor}, {"warpSize", d.warp_size},
        {"sharedMemPerBlock", static_cast<std::int64_t>(d.shared_mem_per_block)},
        {"sharedMemPerMultiprocessor", static_cast<std::int64_t>(d.shared_mem_per_multiprocessor)},
        {"numSms", d.num_sms}, {"sharedMemPerBlockOptin", static_cast<std::int64_t>(d.shared_mem_per_block_optin)}};
    for (const auto& [key, value] : numbers) {
      out += ", \"";
      out += key;
      out += "\": ";
      append_int(out, value);
    }
    out += '}';
  }
  out += sorted.empty() ? "]" : "\n  ]";
  return out;
}

gpu_trace_writer::gpu_trace_writer(std::int64_t host_pid, std::int64_t base_ns, std::vector<gpu_device_properties> devices,
                                   std::unordered_map<std::uint32_t, std::int64_t> host_tid_of)
    : host_pid_(host_pid), base_ns_(base_ns), devices_(std::move(devices)), host_tid_of_(std::move(host_tid_of)) {}

void gpu_trace_writer::begin(std::string& out, bool& first) const {
  if (!first) out += ",\n";
  first = false;
}

std::int64_t gpu_trace_writer::host_tid(std::uint32_t cupti_thread) const {
  const auto it = host_tid_of_.find(cupti_thread);
  return it == host_tid_of_.end() ? static_cast<std::int64_t>(cupti_thread) : it->second;
}

const gpu_device_properties* gpu_trace_writer::device(std::uint32_t id) const {
  for (const auto& d : devices_)
    if (d.id == static_cast<int>(id)) return &d;
  return nullptr;
}

void gpu_trace_writer::name_track(std::uint32_t dev, std::uint32_t stream, std::string& out, bool& first) {
  const auto meta = [&](const char* what, std::int64_t tid, const auto& args) {
    begin(out, first);
    open_metadata_event(out, what, dev, tid);
    args();
    out += "}}";
  };
  if (named_devices_.insert(dev).second) {
    const std::string gpu = "GPU " + std::to_string(dev);
    meta("process_name", 0, [&] { out += "\"name\": "; append_json_string(out, gpu); });
    meta("process_labels", 0, [&] { out += "\"labels\": "; append_json_string(out, gpu); });
    meta("process_sort_index", 0, [&] { out += "\"sort_index\": "; append_int(out, gpu_sort_base + dev); });
  }
  if (named_streams_.insert({dev, stream}).second) {
    meta("thread_name", stream, [&] { out += "\"name\": \"stream "; append_int(out, stream); out += '"'; });
    meta("thread_sort_index", stream, [&] { out += "\"sort_index\": "; append_int(out, stream); });
  }
}

gpu_trace_writer::track gpu_trace_writer::track_of(const gpu_activity& a) const {
  if (on_device(a.kind)) return {static_cast<std::int64_t>(a.device), static_cast<std::int64_t>(a.stream), true};
  return {host_pid_, host_tid(a.thread), false};
}

void gpu_trace_writer::write_span(const gpu_activity& a, const track& where, std::string& out, bool& first) const {
  const std::int64_t dur = a.end_ns > a.start_ns ? a.end_ns - a.start_ns : 0;
  begin(out, first);
  out += "{\"ph\": \"X\", \"cat\": \"";
  out += gpu_category_name(a.kind);
  out += "\", \"name\": ";
  append_json_string(out, a.name);
  append_int_member(out, "pid", where.pid);
  append_int_member(out, "tid", where.tid);
  out += ", \"ts\": ";
  append_us3(out, a.start_ns - base_ns_);
  out += ", \"dur\": ";
  append_us3(out, dur);
  append_span_args(a, where, dur, out);
  out += "}}";
}

void gpu_trace_writer::append_span_args(const gpu_activity& a, const track& where, std::int64_t dur,
                                        std::string& out) const {
  out += ", \"args\": {\"External id\": ";
  append_int(out, a.external_id);
  if (where.on_device) {
    if (a.kind == gpu_activity_kind::kernel) {
      append_int_member(out, "queued", a.queued_ns > 0 && a.queued_ns < a.start_ns ? a.start_ns - a.queued_ns : 0);
    }
    append_int_member(out, "device", a.device);
    append_int_member(out, "context", a.context);
    append_int_member(out, "stream", a.stream);
    append_int_member(out, "correlation", a.correlation);
  } else if (launches(a.kind)) {
    append_int_member(out, "cbid", a.cbid);
    append_int_member(out, "correlation", a.correlation);
  }
  if (a.kind == gpu_activity_kind::kernel) append_kernel_args(a, out);
  if (a.kind == gpu_activity_kind::memcpy || a.kind == gpu_activity_kind::memset) {
    append_int_member(out, "bytes", a.bytes);
    out += ", \"memory bandwidth (GB/s)\": ";
    append_fixed(out, dur > 0 ? static_cast<double>(a.bytes) / static_cast<double>(dur) : 0.0, 3);
  }
}

void gpu_trace_writer::append_kernel_args(const gpu_activity& a, std::string& out) const {
  append_int_member(out, "registers per thread", a.registers_per_thread);
  append_int_member(out, "shared memory", a.shared_memory);
  if (const gpu_device_properties* d = device(a.device)) {
    const kernel_occupancy o = estimate_occupancy(a, *d);
    out += ", \"blocks per SM\": ";
    append_fixed(out, o.blocks_per_sm, 2);
    out += ", \"warps per SM\": ";
    append_fixed(out, o.warps_per_sm, 2);
    if (o.known) {
      append_int_member(out, "est. achieved occupancy %", static_cast<std::int64_t>(std::lround(o.occupancy_percent)));
    }
  }
  out += ", \"grid\": ";
  append_triple(out, a.grid);
  out += ", \"block\": ";
  append_triple(out, a.block);
  if (a.graph_id != 0) {
    append_int_member(out, "graph id", a.graph_id);
  }
}

// The ac2g flow's two ends: the launching call `call`, and `a` on its track.
void gpu_trace_writer::write_flow(const gpu_activity& a, const gpu_activity& call, const track& where,
                                  std::string& out, bool& first) const {
  const auto flow = [&](const char* ph, std::int64_t fpid, std::int64_t ftid, std::int64_t ns, bool end) {
    begin(out, first);
    out += "{\"ph\": \"";
    out += ph;
    out += "\", \"id\": ";
    append_int(out, a.correlation);
    append_int_member(out, "pid", fpid);
    append_int_member(out, "tid", ftid);
    out += ", \"ts\": ";
    append_us3(out, ns - base_ns_);
    out += ", \"cat\": \"ac2g\", \"name\": \"ac2g\"";
    if (end) out += ", \"bp\": \"e\"";
    out += '}';
  };
  flow("s", host_pid_, host_tid(call.thread), call.start_ns, false);
  flow("f", where.pid, where.tid, a.start_ns, true);
}

void gpu_trace_writer::write(const std::vector<gpu_activity>& batch, std::string& out, bool& first) {
  // The launching call of each correlation id, for the flows; one flow per
  // launch (a graph launch's kernels share one id: the first is linked).
  std::unordered_map<std::uint32_t, const gpu_activity*> launch_of;
  for (const auto& a : batch)
    if (launches(a.kind) && a.correlation != 0) launch_of.try_emplace(a.correlation, &a);
  std::unordered_set<std::uint32_t> flowed;

  for (const auto& a : batch) {
    if (a.kind == gpu_activity_kind::memory) continue;
    const track where = track_of(a);
    if (where.on_device) name_track(a.device, a.stream, out, first);
    write_span(a, where, out, first);
    // ac2g: from the launching call to the first GPU op of its correlation.
    const auto launch = launch_of.find(a.correlation);
    if (!where.on_device || launch == launch_of.end() || !flowed.insert(a.correlation).second) continue;
    write_flow(a, *launch->second, where, out, first);
  }
}

}  // namespace proftrace::detail
