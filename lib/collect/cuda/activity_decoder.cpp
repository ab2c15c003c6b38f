#include "activity_decoder.hpp"

#include <algorithm>
#include <string>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

std::int64_t unix_ns(std::uint64_t cupti_ns, std::int64_t offset_ns) {
  return static_cast<std::int64_t>(cupti_ns) + offset_ns;
}

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel", as Kineto shows it.
std::string api_name(const cupti_api& api, CUpti_CallbackDomain domain, std::uint32_t cbid) {
  const char* name = nullptr;
  if (!api.get_callback_name || api.get_callback_name(domain, cbid, &name) != CUPTI_SUCCESS || !name)
    return (domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "cuda runtime " : "cuda driver ") + std::to_string(cbid);
  std::string s = name;
  const auto v = s.rfind("_v");
  if (v != std::string::npos && v + 2 < s.size() &&
      std::all_of(s.begin() + static_cast<std::ptrdiff_t>(v + 2), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    s.resize(v);
  return s;
}

const char* sync_name(unsigned type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "Event Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "Stream Wait Event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "Stream Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "Context Sync";
    default: return "Unknown Sync";
  }
}

// The start and end every timed record carries, on the host's clock.
template <class Record>
void timed(gpu_activity& a, const Record& r, std::int64_t offset_ns) {
  a.start_ns = unix_ns(r.start, offset_ns);
  a.end_ns = unix_ns(r.end, offset_ns);
}

// The fields every device-side op (kernel, copy, set) carries.
template <class Record>
void device_op(gpu_activity& a, const Record& r, std::int64_t offset_ns) {
  timed(a, r, offset_ns);
  a.device = r.deviceId;
  a.context = r.contextId;
  a.stream = r.streamId;
  a.correlation = r.correlationId;
}

std::optional<gpu_activity> decode_kernel(const cupti_kernel_record& k, std::int64_t offset_ns, decode_counts& counts) {
  if (k.start == 0 && k.end == 0) {
    ++counts.zero_timestamp_kernels;
    return std::nullopt;
  }
  gpu_activity a;
  a.kind = gpu_activity_kind::kernel;
  a.name = k.name ? k.name : "(unnamed kernel)";
  device_op(a, k, offset_ns);
  a.queued_ns = k.queued > 0 && k.queued != CUPTI_TIMESTAMP_UNKNOWN ? unix_ns(k.queued, offset_ns) : 0;
  a.grid = {k.gridX, k.gridY, k.gridZ};
  a.block = {k.blockX, k.blockY, k.blockZ};
  a.registers_per_thread = k.registersPerThread;
  a.shared_memory = std::int64_t{k.staticSharedMemory} + k.dynamicSharedMemory;
  a.graph_id = k.graphId;
  return a;
}

gpu_activity decode_memcpy(const cupti_memcpy_record& m, std::int64_t offset_ns) {
  gpu_activity a;
  a.kind = gpu_activity_kind::memcpy;
  a.name = "Memcpy " + std::string(memcpy_kind_name(m.copyKind)) + " (" + std::string(memory_kind_name(m.srcKind)) +
           " -> " + std::string(memory_kind_name(m.dstKind)) + ")";
  device_op(a, m, offset_ns);
  a.bytes = m.bytes;
  return a;
}

gpu_activity decode_memset(const cupti_memset_record& m, std::int64_t offset_ns) {
  gpu_activity a;
  a.kind = gpu_activity_kind::memset;
  a.name = "Memset (" + std::string(memory_kind_name(m.memoryKind)) + ")";
  device_op(a, m, offset_ns);
  a.bytes = m.bytes;
  return a;
}

// A runtime or driver API call.
gpu_activity decode_api_call(const CUpti_ActivityAPI& c, bool runtime, const cupti_api& api, std::int64_t offset_ns) {
  gpu_activity a;
  a.kind = runtime ? gpu_activity_kind::runtime : gpu_activity_kind::driver;
  a.name = api_name(api, runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, c.cbid);
  timed(a, c, offset_ns);
  a.process = c.processId;
  a.thread = c.threadId;
  a.cbid = c.cbid;
  a.correlation = c.correlationId;
  a.return_value = c.returnValue;
  return a;
}

gpu_activity decode_sync(const cupti_sync_record& s, std::int64_t offset_ns) {
  gpu_activity a;
  a.kind = gpu_activity_kind::sync;
  a.name = sync_name(s.type);
  timed(a, s, offset_ns);
  a.context = s.contextId;
  a.stream = s.streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : s.streamId;
  a.correlation = s.correlationId;
  return a;
}

gpu_activity decode_overhead(const cupti_overhead_record& o, std::int64_t offset_ns) {
  gpu_activity a;
  a.kind = gpu_activity_kind::overhead;
  a.name = "CUPTI overhead";
  timed(a, o, offset_ns);
  if (o.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || o.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
    a.process = o.objectId.pt.processId;
    a.thread = o.objectId.pt.threadId;
  }
  return a;
}

// A device allocation or free.
gpu_activity decode_memory(const cupti_memory_record& m, std::int64_t offset_ns) {
  gpu_activity a;
  a.kind = gpu_activity_kind::memory;
  a.name = m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE ? "free" : "alloc";
  a.is_free = m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  a.start_ns = a.end_ns = unix_ns(m.timestamp, offset_ns);
  a.device = m.deviceId;
  a.context = m.contextId;
  a.stream = m.streamId;
  a.correlation = m.correlationId;
  a.address = m.address;
  a.bytes = m.bytes;
  a.memory_kind = static_cast<std::uint8_t>(m.memoryKind);
  return a;
}

}  // namespace

std::optional<gpu_activity> decode_record(const CUpti_Activity& record, const cupti_api& api, std::int64_t offset_ns,
                                          std::unordered_map<std::uint32_t, std::uint64_t>& external,
                                          decode_counts& counts) {
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return decode_kernel(reinterpret_cast<const cupti_kernel_record&>(record), offset_ns, counts);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return decode_memcpy(reinterpret_cast<const cupti_memcpy_record&>(record), offset_ns);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return decode_memset(reinterpret_cast<const cupti_memset_record&>(record), offset_ns);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return decode_api_call(reinterpret_cast<const CUpti_ActivityAPI&>(record),
                             record.kind == CUPTI_ACTIVITY_KIND_RUNTIME, api, offset_ns);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return decode_sync(reinterpret_cast<const cupti_sync_record&>(record), offset_ns);
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      return decode_overhead(reinterpret_cast<const cupti_overhead_record&>(record), offset_ns);
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      return decode_memory(reinterpret_cast<const cupti_memory_record&>(record), offset_ns);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& e = reinterpret_cast<const CUpti_ActivityExternalCorrelation&>(record);
      if (e.externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) external[e.correlationId] = e.externalId;
      return std::nullopt;
    }
    default:
      ++counts.unknown_records;
      return std::nullopt;
  }
}

void activity_decoder::consume(std::uint8_t* buffer, std::size_t valid_bytes) {
  CUpti_Activity* record = nullptr;
  while (api_->activity_get_next_record(buffer, valid_bytes, &record) == CUPTI_SUCCESS && record != nullptr)
    if (auto a = decode_record(*record, *api_, offset_ns_, external_, counts_)) activities_.push_back(std::move(*a));
}

activity_decoder::result activity_decoder::take() {
  // Devices of contexts, from the ops that carry both (sync records carry
  // only the context).
  std::unordered_map<std::uint32_t, std::uint32_t> device_of_context;
  for (const auto& a : activities_)
    if (a.kind == gpu_activity_kind::kernel || a.kind == gpu_activity_kind::memcpy ||
        a.kind == gpu_activity_kind::memset)
      device_of_context.try_emplace(a.context, a.device);
  for (auto& a : activities_) {
    if (const auto e = external_.find(a.correlation); a.correlation != 0 && e != external_.end()) a.external_id = e->second;
    if (a.kind == gpu_activity_kind::sync)
      if (const auto d = device_of_context.find(a.context); d != device_of_context.end()) a.device = d->second;
  }
  std::stable_sort(activities_.begin(), activities_.end(),
                   [](const gpu_activity& x, const gpu_activity& y) { return x.start_ns < y.start_ns; });
  result r{std::move(activities_), counts_};
  activities_.clear();
  external_.clear();
  counts_ = {};
  return r;
}

}  // namespace proftrace::detail
