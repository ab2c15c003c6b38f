// Internal: GPU activities in Kineto's layout — kernel, gpu_memcpy,
// gpu_memset, cuda_sync events on a (device, stream) track, cuda_runtime and
// cuda_driver events on the calling thread, ac2g flows from the launching
// call to the first GPU op it launched, the GPU processes' and streams'
// names, and "deviceProperties". Needs no CUDA header.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "records/gpu_activity.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// Kineto's "blocks per SM", "warps per SM" and "est. achieved occupancy %",
// from the launch and the device's limits (registers, shared memory,
// threads, blocks per SM). `known` is false without the device's properties.
struct kernel_occupancy {
  double blocks_per_sm = 0;
  double warps_per_sm = 0;
  double occupancy_percent = 0;
  bool known = false;
};
kernel_occupancy estimate_occupancy(const gpu_activity& kernel, const gpu_device_properties& device);

// The "deviceProperties" array, devices in id order.
std::string device_properties_json(const std::vector<gpu_device_properties>& devices);

class gpu_trace_writer {
 public:
  // host_pid: the process's pid (host events); base_ns: the trace's
  // baseTimeNanoseconds; host_tid_of: CUPTI's thread id -> the thread's tid
  // in the trace (a missing one is written as CUPTI reports it).
  gpu_trace_writer(std::int64_t host_pid, std::int64_t base_ns, std::vector<gpu_device_properties> devices,
                   std::unordered_map<std::uint32_t, std::int64_t> host_tid_of = {});

  // Appends every activity of `batch` (and the flows and track names it
  // needs) as trace events to `out`, each preceded by ",\n" unless `first`.
  // Device allocations (kind memory) are not written here: they go through
  // the memory collector.
  void write(const std::vector<gpu_activity>& batch, std::string& out, bool& first);

 private:
  // Where an activity's event goes: its (device, stream) track, or the
  // host thread that made the call.
  struct track {
    std::int64_t pid;
    std::int64_t tid;
    bool on_device;
  };

  void begin(std::string& out, bool& first) const;
  track track_of(const gpu_activity& a) const;
  void write_span(const gpu_activity& a, const track& where, std::string& out, bool& first) const;
  void append_span_args(const gpu_activity& a, const track& where, std::int64_t dur, std::string& out) const;
  void append_kernel_args(const gpu_activity& a, std::string& out) const;
  void write_flow(const gpu_activity& a, const gpu_activity& call, const track& where, std::string& out,
                  bool& first) const;
  void name_track(std::uint32_t device, std::uint32_t stream, std::string& out, bool& first);
  std::int64_t host_tid(std::uint32_t cupti_thread) const;
  const gpu_device_properties* device(std::uint32_t id) const;

  std::int64_t host_pid_;
  std::int64_t base_ns_;
  std::vector<gpu_device_properties> devices_;
  std::unordered_map<std::uint32_t, std::int64_t> host_tid_of_;
  std::set<std::uint32_t> named_devices_;
  std::set<std::pair<std::uint32_t, std::uint32_t>> named_streams_;
};

}  // namespace proftrace::detail
