#include "cupti_api.hpp"

#include <cuda_runtime_api.h>

#include <type_traits>

#include "cuda_library.hpp"
#include "cudart_functions.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

cudart_functions cudart;  // written once, by real_cupti_api()'s first call

#define PROFTRACE_BIND PROFTRACE_DETAIL_BIND

int device_count(int* count) { return static_cast<int>(cudart.get_device_count(count)); }

int synchronize_all() {
  int count = 0, current = 0;
  if (cudart.get_device_count(&count) != cudaSuccess) return 1;
  cudart.get_device(&current);
  int status = 0;
  for (int d = 0; d < count; ++d)
    if (cudart.set_device(d) != cudaSuccess || cudart.device_synchronize() != cudaSuccess) status = 1;
  cudart.set_device(current);
  return status;
}

int device_properties(int device, gpu_device_properties* out) {
  cudaDeviceProp p{};
  const cudaError_t e = cudart.get_device_properties(&p, device);
  if (e != cudaSuccess) return static_cast<int>(e);
  out->id = device;
  out->name = p.name;
  out->total_global_mem = p.totalGlobalMem;
  out->compute_major = p.major;
  out->compute_minor = p.minor;
  out->max_threads_per_block = p.maxThreadsPerBlock;
  out->max_threads_per_multiprocessor = p.maxThreadsPerMultiProcessor;
  out->regs_per_block = p.regsPerBlock;
  out->regs_per_multiprocessor = p.regsPerMultiprocessor;
  out->warp_size = p.warpSize;
  out->shared_mem_per_block = p.sharedMemPerBlock;
  out->shared_mem_per_multiprocessor = p.sharedMemPerMultiprocessor;
  out->num_sms = p.multiProcessorCount;
  out->shared_mem_per_block_optin = p.sharedMemPerBlockOptin;
  out->max_blocks_per_multiprocessor = p.maxBlocksPerMultiProcessor;
  return 0;
}

cupti_api load_real_cupti_api() {
  static std::string why;  // the reason `unavailable` points at
  const shared_library& cupti = cupti_library();
  cupti_api api{};
  const bool bound =
      PROFTRACE_BIND(api.activity_register_callbacks, cupti, cuptiActivityRegisterCallbacks) &&
      PROFTRACE_BIND(api.activity_enable, cupti, cuptiActivityEnable) &&
      PROFTRACE_BIND(api.activity_disable, cupti, cuptiActivityDisable) &&
      PROFTRACE_BIND(api.activity_flush_all, cupti, cuptiActivityFlushAll) &&
      PROFTRACE_BIND(api.activity_get_next_record, cupti, cuptiActivityGetNextRecord) &&
      PROFTRACE_BIND(api.activity_get_num_dropped_records, cupti, cuptiActivityGetNumDroppedRecords) &&
      PROFTRACE_BIND(api.push_external_correlation_id, cupti, cuptiActivityPushExternalCorrelationId) &&
      PROFTRACE_BIND(api.pop_external_correlation_id, cupti, cuptiActivityPopExternalCorrelationId) &&
      PROFTRACE_BIND(api.get_timestamp, cupti, cuptiGetTimestamp) &&
      PROFTRACE_BIND(api.get_callback_name, cupti, cuptiGetCallbackName) &&
      PROFTRACE_BIND(api.get_result_string, cupti, cuptiGetResultString) &&
      PROFTRACE_BIND(api.set_thread_id_type, cupti, cuptiSetThreadIdType) && bind_device_calls(cudart, why);
  if (!bound) return unavailable_cupti_api(why.c_str());
  api.get_device_count = device_count;
  api.synchronize = synchronize_all;
  api.get_device_properties = device_properties;
  return api;
}

}  // namespace

const cupti_api& real_cupti_api() {
  static const cupti_api api = load_real_cupti_api();
  return api;
}

cupti_api unavailable_cupti_api(const char* reason) {
  constexpr CUptiResult no = CUPTI_ERROR_NOT_INITIALIZED;
  return {
      [](CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) { return no; },
      [](CUpti_ActivityKind) { return no; },
      [](CUpti_ActivityKind) { return no; },
      [](std::uint32_t) { return no; },
      [](std::uint8_t*, std::size_t, CUpti_Activity**) { return no; },
      [](CUcontext, std::uint32_t, std::size_t*) { return no; },
      [](CUpti_ExternalCorrelationKind, std::uint64_t) { return no; },
      [](CUpti_ExternalCorrelationKind, std::uint64_t*) { return no; },
      [](std::uint64_t*) { return no; },
      [](CUpti_CallbackDomain, std::uint32_t, const char**) { return no; },
      [](CUptiResult, const char**) { return no; },
      [](CUpti_ActivityThreadIdType) { return no; },
      [](int* count) {
        *count = 0;
        return -1;
      },
      [] { return -1; },
      [](int, gpu_device_properties*) { return -1; },
      reason,
  };
}

std::string describe(const cupti_api& api, CUptiResult result) {
  const char* text = nullptr;
  std::string out = api.get_result_string && api.get_result_string(result, &text) == CUPTI_SUCCESS && text
                        ? std::string(text)
                        : std::string("CUPTI error");
  return out + " (" + std::to_string(static_cast<int>(result)) + ")";
}

}  // namespace proftrace::detail
