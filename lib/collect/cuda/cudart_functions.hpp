// Internal: the CUDA runtime calls the CUDA collector makes, as one table
// bound from libcudart, opened with dlopen at first use (cuda_library.hpp).
// The CUPTI table (cupti_api.cpp) needs the device calls; the runtime helpers
// of <proftrace/cuda.hpp> (cuda_runtime.cpp) need them all.
//
//   cudart_functions cudart;
//   static std::string why;  // what `unavailable` points at
//   if (!bind_device_calls(cudart, why)) return unavailable(why.c_str());
//   int devices = 0;
//   cudart.get_device_count(&devices);
#pragma once

#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include <string>

#include "proftrace/config.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

struct cudart_functions {
  decltype(&cudaGetDeviceCount) get_device_count = nullptr;
  decltype(&cudaGetDevice) get_device = nullptr;
  decltype(&cudaSetDevice) set_device = nullptr;
  decltype(&cudaDeviceSynchronize) device_synchronize = nullptr;
  decltype(&cudaGetDeviceProperties) get_device_properties = nullptr;
  decltype(&cudaProfilerStart) profiler_start = nullptr;
  decltype(&cudaProfilerStop) profiler_stop = nullptr;
  decltype(&cudaMemGetInfo) mem_get_info = nullptr;
  decltype(&cudaGetErrorString) get_error_string = nullptr;
};

// Binds the device calls: count, get, set, synchronize, properties. False,
// with `why` naming the first missing symbol, where libcudart lacks one.
bool bind_device_calls(cudart_functions& cudart, std::string& why);

// Binds every call: the device calls, then the profiler's start and stop,
// the memory info and the error strings.
bool bind_all_calls(cudart_functions& cudart, std::string& why);

}  // namespace proftrace::detail
