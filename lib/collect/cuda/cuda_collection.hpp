// Internal: what sessions and the flusher need of the CUDA collector, with
// no CUDA header (lib/collect/cuda/cupti_collector.cpp implements it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpu_activity.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

// What CUDA collection could not record, counted in the trace.
struct gpu_loss_counts {
  std::uint64_t dropped_records = 0;         // CUPTI's count: records it had no buffer for
  std::uint64_t zero_timestamp_kernels = 0;  // kernels CUPTI could not time: left out
  std::uint64_t refused_buffers = 0;         // buffer requests refused at the cap

  void add(const gpu_loss_counts& o) noexcept {
    dropped_records += o.dropped_records;
    zero_timestamp_kernels += o.zero_timestamp_kernels;
    refused_buffers += o.refused_buffers;
  }
};

// The GPU side of one trace: its activities (joined to external ids) and
// what could not be collected.
struct gpu_batch {
  std::vector<gpu_activity> activities;
  gpu_loss_counts losses;
};

// A scope's external id while CUPTI collects: bit 52 set (ids the flusher
// numbers itself stay far below), 16 bits of thread serial and 36 of
// sequence, all below 2^53 so JavaScript viewers keep them exact.
inline constexpr std::uint64_t cuda_external_id_marker = std::uint64_t{1} << 52;
constexpr bool is_cuda_external_id(std::uint64_t id) noexcept { return (id & cuda_external_id_marker) != 0; }

#if PROFTRACE_WITH_CUDA
// Starts CUPTI collection for a session. False when it stays off: with one
// warning per reason and process where CUDA is there and fails (another
// CUPTI client, a CUPTI error), or is missing (no library, driver or device)
// and the session `named` activity::cuda; silently for PROFTRACE_DISABLE_CUDA.
bool cuda_collection_start(bool named);
void cuda_collection_stop();
// Waits for the device, flushes CUPTI's buffers and returns what they held.
gpu_batch cuda_collection_take();
// The visible devices' properties, read when collection started.
std::vector<gpu_device_properties> cuda_devices();
#endif

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
