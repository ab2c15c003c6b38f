#include "cuda_runtime.hpp"

#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "helpers/warn.hpp"
#include "cuda_library.hpp"
#include "cudart_functions.hpp"
#include "proftrace/cuda.hpp"

namespace proftrace::cuda {
namespace detail {

using proftrace::detail::cudart_library;
using proftrace::detail::library_function;

namespace {
const runtime_api* runtime_override = nullptr;
const nvml_api* nvml_override = nullptr;
bool nvml_forced_absent = false;

const nvml_api* nvml() { return nvml_forced_absent ? nullptr : nvml_override ? nvml_override : real_nvml_api(); }

std::string cuda_error(const char* call, int error) {
  const runtime_api& rt = runtime();
  if (rt.unavailable) return std::string("proftrace: ") + call + " failed: " + rt.unavailable;
  const char* text = rt.error_string ? rt.error_string(error) : nullptr;
  return std::string("proftrace: ") + call + " failed: " + (text ? text : "CUDA error") + " (" + std::to_string(error) +
         ")";
}

proftrace::detail::cudart_functions cudart;  // written once, by real_runtime_api()'s first call

runtime_api load_real_runtime_api() {
  static std::string why;  // the reason `unavailable` points at
  const bool bound = proftrace::detail::bind_all_calls(cudart, why);
  if (!bound) return unavailable_runtime_api(why.c_str());
  return {
      [](int* n) { return static_cast<int>(cudart.get_device_count(n)); },
      [] { return static_cast<int>(cudart.profiler_start()); },
      [] { return static_cast<int>(cudart.profiler_stop()); },
      [](int* d) { return static_cast<int>(cudart.get_device(d)); },
      [](int d) { return static_cast<int>(cudart.set_device(d)); },
      [](std::size_t* free, std::size_t* total) { return static_cast<int>(cudart.mem_get_info(free, total)); },
      [](int device, unsigned char uuid[16]) {
        cudaDeviceProp prop{};
        const cudaError_t e = cudart.get_device_properties(&prop, device);
        if (e == cudaSuccess)
          for (int i = 0; i < 16; ++i) uuid[i] = static_cast<unsigned char>(prop.uuid.bytes[i]);
        return static_cast<int>(e);
      },
      [](int e) { return cudart.get_error_string(static_cast<cudaError_t>(e)); },
      [] { return static_cast<int>(cudart.device_synchronize()); },
  };
}
}  // namespace

const runtime_api& real_runtime_api() {
  static const runtime_api api = load_real_runtime_api();
  return api;
}

runtime_api unavailable_runtime_api(const char* reason) {
  return {
      [](int* n) {
        *n = 0;
        return -1;
      },
      [] { return -1; },
      [] { return -1; },
      [](int*) { return -1; },
      [](int) { return -1; },
      [](std::size_t*, std::size_t*) { return -1; },
      [](int, unsigned char*) { return -1; },
      [](int) { return static_cast<const char*>(nullptr); },
      [] { return -1; },
      reason,
  };
}

const runtime_api& runtime() { return runtime_override ? *runtime_override : real_runtime_api(); }

const nvml_api* real_nvml_api() {
  static const nvml_api* loaded = []() -> const nvml_api* {
    void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return nullptr;
    static nvml_api api{};
    api.init = reinterpret_cast<int (*)()>(::dlsym(lib, "nvmlInit_v2"));
    api.device_by_uuid = reinterpret_cast<int (*)(const char*, void**)>(::dlsym(lib, "nvmlDeviceGetHandleByUUID"));
    api.memory_info = reinterpret_cast<int (*)(void*, nvml_memory*)>(::dlsym(lib, "nvmlDeviceGetMemoryInfo"));
    if (!api.init || !api.device_by_uuid || !api.memory_info || api.init() != 0) return nullptr;
    return &api;
  }();
  return loaded;
}

void use_apis(const runtime_api* runtime, const nvml_api* nvml, bool nvml_absent) {
  runtime_override = runtime;
  nvml_override = nvml;
  nvml_forced_absent = nvml_absent;
}

std::string_view format_uuid(const unsigned char u[16], char (&out)[41]) {
  const int n = std::snprintf(out, sizeof out, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                              u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                              u[14], u[15]);
  return {out, static_cast<std::size_t>(n > 0 ? n : 0)};
}

}  // namespace detail

bool available() noexcept {
  int n = 0;
  return detail::runtime().get_device_count(&n) == 0 && n > 0;
}

bool nsight_attached() noexcept {
  for (const char* v : {"NSYS_PROFILING_SESSION_ID", "CUDA_INJECTION64_PATH"})
    if (const char* s = std::getenv(v); s && *s) return true;
  return false;
}

void profiler_start() {
  if (const int e = detail::runtime().profiler_start(); e != 0) throw std::runtime_error(detail::cuda_error("cudaProfilerStart", e));
}

void profiler_stop() {
  if (const int e = detail::runtime().profiler_stop(); e != 0) throw std::runtime_error(detail::cuda_error("cudaProfilerStop", e));
}

profiler_range::~profiler_range() {
  try {
    profiler_stop();
  } catch (const std::exception& e) {
    proftrace::detail::warn(e.what());
  }
}

namespace {
void warn_once_about_profile_scope(const std::string& what) noexcept {
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) proftrace::detail::warn(what + " (PROF_CUDA_PROFILE; further failures not reported)");
}
}  // namespace

profiler_scope::profiler_scope() noexcept {
  if (const int e = detail::runtime().profiler_start(); e != 0) warn_once_about_profile_scope(detail::cuda_error("cudaProfilerStart", e));
  else started_ = true;
}

profiler_scope::~profiler_scope() {
  if (!started_) return;
  if (const int e = detail::runtime().profiler_stop(); e != 0) warn_once_about_profile_scope(detail::cuda_error("cudaProfilerStop", e));
}

device_memory memory_info(int device) noexcept {
  device_memory m;
  m.device = device;
  try {
    const auto& rt = detail::runtime();
    int count = 0;
    if (const int e = rt.get_device_count(&count); e != 0 || device < 0 || device >= count) {
      m.unavailable = e != 0 ? detail::cuda_error("cudaGetDeviceCount", e)
                             : "proftrace: no CUDA device " + std::to_string(device) + " (" + std::to_string(count) +
                                   " visible)";
      return m;
    }
    int previous = 0;
    rt.get_device(&previous);
    if (const int e = rt.set_device(device); e == 0) {
      std::size_t free = 0, total = 0;
      if (const int g = rt.mem_get_info(&free, &total); g == 0) {
        m.free_bytes = free;
        m.total_bytes = total;
      } else {
        m.unavailable = detail::cuda_error("cudaMemGetInfo", g);
      }
      rt.set_device(previous);
    } else {
      m.unavailable = detail::cuda_error("cudaSetDevice", e);
    }
    const detail::nvml_api* nvml = detail::nvml();
    unsigned char uuid[16];
    char name[41];
    void* handle = nullptr;
    detail::nvml_memory mem{};
    if (!nvml) {
      if (m.unavailable.empty()) m.unavailable = "proftrace: NVML (libnvidia-ml.so.1) is not available";
    } else if (rt.device_uuid(device, uuid) == 0 &&
               nvml->device_by_uuid(std::string(detail::format_uuid(uuid, name)).c_str(), &handle) == 0 &&
               nvml->memory_info(handle, &mem) == 0) {
      m.nvml_total_bytes = mem.total;
      m.nvml_free_bytes = mem.free;
      m.nvml_used_bytes = mem.used;
    } else if (m.unavailable.empty()) {
      m.unavailable = "proftrace: NVML has no memory figures for CUDA device " + std::to_string(device);
    }
  } catch (...) {
    m.unavailable = "proftrace: could not read device memory";
  }
  return m;
}

}  // namespace proftrace::cuda
