// Internal: the CUDA runtime and NVML calls behind <proftrace/cuda.hpp>,
// timeit and profileit, as injectable tables (tests drive the error paths on
// machines without a GPU). Both libraries are opened with dlopen at first use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace proftrace::cuda::detail {

struct runtime_api {
  int (*get_device_count)(int* count);  // each returns a cudaError_t as an int
  int (*profiler_start)();
  int (*profiler_stop)();
  int (*get_device)(int* device);
  int (*set_device)(int device);
  int (*mem_get_info)(std::size_t* free, std::size_t* total);
  int (*device_uuid)(int device, unsigned char uuid[16]);
  const char* (*error_string)(int error);
  int (*device_synchronize)();
  // Set where libcudart could not be had: why; every call above then fails.
  const char* unavailable = nullptr;
};

// NVML as loaded with dlopen from the driver's libnvidia-ml.so.1.
struct nvml_memory {
  unsigned long long total, free, used;
};
struct nvml_api {
  int (*init)();
  int (*device_by_uuid)(const char* uuid, void** device);
  int (*memory_info)(void* device, nvml_memory* memory);
};

// Loaded on the first call (once, thread-safe).
const runtime_api& real_runtime_api();
// Every call fails; `reason` (kept by the caller) becomes `unavailable`.
runtime_api unavailable_runtime_api(const char* reason);
// The table in use: the injected one, else the real one.
const runtime_api& runtime();
// Null when libnvidia-ml.so.1 is absent or lacks a symbol (quietly off).
const nvml_api* real_nvml_api();

// Tests swap tables in; null restores the real ones.
void use_apis(const runtime_api* runtime, const nvml_api* nvml, bool nvml_absent = false);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as NVML names devices.
std::string_view format_uuid(const unsigned char uuid[16], char (&out)[41]);

}  // namespace proftrace::cuda::detail
