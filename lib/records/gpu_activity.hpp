// Internal: what the CUDA collector keeps of a CUPTI activity record, in a
// form that needs no CUDA header, so that the trace writer and its tests
// build everywhere. lib/collect/cuda/activity_decoder.cpp fills it from CUPTI's
// records; lib/formats/kineto_json/gpu_trace_writer.cpp writes it in Kineto's layout.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "proftrace/config.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

enum class gpu_activity_kind : std::uint8_t {
  kernel,
  memcpy,
  memset,
  runtime,   // a CUDA runtime API call (host side)
  driver,    // a CUDA driver API call (host side)
  sync,      // cudaStreamSynchronize, cudaEventSynchronize, ... (host side)
  overhead,  // time CUPTI itself spent (host side)
  memory,    // a device allocation or free (MEMORY2)
};

struct gpu_activity {
  gpu_activity_kind kind = gpu_activity_kind::kernel;
  std::string name;  // kernel name, API call name, "Memcpy HtoD (Pageable -> Device)", ...
  std::int64_t start_ns = 0;  // Unix ns
  std::int64_t end_ns = 0;
  std::uint32_t device = 0;
  std::uint32_t context = 0;
  std::uint32_t stream = 0;
  std::uint32_t correlation = 0;
  std::uint64_t external_id = 0;  // the launching scope's id; 0 when none was pushed
  // Host-side records.
  std::uint32_t process = 0;
  std::uint32_t thread = 0;
  std::uint32_t cbid = 0;
  std::uint32_t return_value = 0;
  // Kernels.
  std::array<std::int32_t, 3> grid{};
  std::array<std::int32_t, 3> block{};
  std::uint32_t registers_per_thread = 0;
  std::int64_t shared_memory = 0;  // static + dynamic, per block
  std::int64_t queued_ns = 0;       // 0 when CUPTI did not record it
  std::uint32_t graph_id = 0;
  // Copies, sets and allocations.
  std::uint64_t bytes = 0;
  std::uint64_t address = 0;
  bool is_free = false;  // memory: a release rather than an allocation
  std::uint8_t memory_kind = 0;  // CUpti_ActivityMemoryKind of a memset or allocation
};

// CUPTI's memory kinds that live in host memory (pageable, pinned): their
// allocations count on the host (-1) rather than on the device.
constexpr bool is_host_memory_kind(unsigned k) noexcept { return k == 1 || k == 2; }

// An activity's "cat" in a trace, as Kineto names it ("" for allocations:
// they are memory events, not slices).
constexpr const char* gpu_category_name(gpu_activity_kind k) noexcept {
  switch (k) {
    case gpu_activity_kind::kernel: return "kernel";
    case gpu_activity_kind::memcpy: return "gpu_memcpy";
    case gpu_activity_kind::memset: return "gpu_memset";
    case gpu_activity_kind::runtime: return "cuda_runtime";
    case gpu_activity_kind::driver: return "cuda_driver";
    case gpu_activity_kind::sync: return "cuda_sync";
    case gpu_activity_kind::overhead: return "overhead";
    case gpu_activity_kind::memory: break;
  }
  return "";
}

// Kineto's names for CUpti_ActivityMemcpyKind and CUpti_ActivityMemoryKind
// (values stable across CUPTI versions).
inline constexpr std::array<std::string_view, 11> memcpy_kind_names{
    "Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
inline constexpr std::array<std::string_view, 8> memory_kind_names{
    "Unknown", "Pageable", "Pinned", "Device", "Array", "Managed", "Device Static", "Managed Static"};

inline std::string_view memcpy_kind_name(unsigned k) {
  return k < memcpy_kind_names.size() ? memcpy_kind_names[k] : memcpy_kind_names[0];
}
inline std::string_view memory_kind_name(unsigned k) {
  return k < memory_kind_names.size() ? memory_kind_names[k] : memory_kind_names[0];
}

// What cudaGetDeviceProperties reports, as Kineto's "deviceProperties".
struct gpu_device_properties {
  int id = 0;
  std::string name;
  std::uint64_t total_global_mem = 0;
  int compute_major = 0;
  int compute_minor = 0;
  int max_threads_per_block = 0;
  int max_threads_per_multiprocessor = 0;
  int regs_per_block = 0;
  int regs_per_multiprocessor = 0;
  int warp_size = 32;
  std::uint64_t shared_mem_per_block = 0;
  std::uint64_t shared_mem_per_multiprocessor = 0;
  int num_sms = 0;
  std::uint64_t shared_mem_per_block_optin = 0;
  int max_blocks_per_multiprocessor = 0;  // 0: unknown (not in Kineto's list, used for occupancy)
};

}  // namespace proftrace::detail
