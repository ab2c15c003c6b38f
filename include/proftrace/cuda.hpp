// proftrace/cuda.hpp — torch.cuda.profiler's helpers and the device memory
// figures of torch_geometric's GPUStats, for builds with the CUDA toolkit
// (link proftrace::cuda).
//
//   proftrace::cuda::profiler_start();   // nsys profile --capture-range=cudaProfilerApi ...
//   run_steps();
//   proftrace::cuda::profiler_stop();
//   {
//     proftrace::cuda::profiler_range capture;   // the same, for a block
//     run_steps();
//   }
//   { PROF_CUDA_PROFILE(); run_steps(); }        // the same; never throws (macros.hpp)
//   if (auto m = proftrace::cuda::memory_info(0))
//     std::cout << *m->free_bytes << " of " << *m->total_bytes << " bytes free\n";
//
// cudaProfilerStart/Stop switch collection by an attached tool (Nsight
// Systems) and do nothing without one. The explicit calls throw
// std::runtime_error naming the CUDA error (no driver, no device); the RAII
// range's end only warns, and PROF_CUDA_PROFILE's scope only warns (once
// per process) at either end. memory_info() reports what the CUDA runtime sees
// (cudaMemGetInfo) and, where the driver's NVML library loads, what
// nvidia-smi shows; absent figures are empty, never zeros. libcudart is
// opened at run time: where it cannot be found every call behaves as with
// no driver, and the error names the missing library.
//
// With PROFTRACE_ENABLED=0 these are inline stand-ins that touch no CUDA
// library: nothing is available, the profiler calls do nothing and
// memory_info() says the profiler was compiled out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "config.hpp"

namespace proftrace::cuda {

struct device_memory {
  int device = 0;
  // cudaMemGetInfo on the device.
  std::optional<std::uint64_t> free_bytes;
  std::optional<std::uint64_t> total_bytes;
  // NVML (nvidia-smi's view: used includes every process and the driver's reserve).
  std::optional<std::uint64_t> nvml_used_bytes;
  std::optional<std::uint64_t> nvml_free_bytes;
  std::optional<std::uint64_t> nvml_total_bytes;
  std::string unavailable;  // why a figure is missing (no driver, no NVML, ...)
};

#if PROFTRACE_ENABLED
// A driver is loaded and at least one device is visible.
bool available() noexcept;
// Nsight Systems (or another CUDA injection) is attached to this process,
// judged by its environment (NSYS_PROFILING_SESSION_ID, CUDA_INJECTION64_PATH).
bool nsight_attached() noexcept;

void profiler_start();
void profiler_stop();

class profiler_range {
 public:
  profiler_range() { profiler_start(); }
  ~profiler_range();
  profiler_range(const profiler_range&) = delete;
  profiler_range& operator=(const profiler_range&) = delete;
};

// What PROF_CUDA_PROFILE() expands to.
class profiler_scope {
 public:
  profiler_scope() noexcept;
  ~profiler_scope();
  profiler_scope(const profiler_scope&) = delete;
  profiler_scope& operator=(const profiler_scope&) = delete;

 private:
  bool started_ = false;
};

// Never throws: without a driver or with a bad device index, every figure is
// empty and `unavailable` says why.
device_memory memory_info(int device) noexcept;
#else
inline namespace compiled_out {
inline bool available() noexcept { return false; }
inline bool nsight_attached() noexcept { return false; }
inline void profiler_start() noexcept {}
inline void profiler_stop() noexcept {}
class profiler_range {
 public:
  profiler_range() noexcept {}
  profiler_range(const profiler_range&) = delete;
  profiler_range& operator=(const profiler_range&) = delete;
};
class profiler_scope {
 public:
  profiler_scope() noexcept {}
  profiler_scope(const profiler_scope&) = delete;
  profiler_scope& operator=(const profiler_scope&) = delete;
};
inline device_memory memory_info(int device) noexcept {
  device_memory m;
  m.device = device;
  m.unavailable = "proftrace was compiled out (PROFTRACE_ENABLED=0)";
  return m;
}
}  // namespace compiled_out
#endif

}  // namespace proftrace::cuda
