#include "cupti_api.hpp"

#include <cuda_runtime_api.h>

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

const cupti_api& real_cupti_api() {
  static const cupti_api api{
      cuptiActivityRegisterCallbacks,
      cuptiActivityEnable,
      cuptiActivityDisable,
      cuptiActivityFlushAll,
      cuptiActivityGetNextRecord,
      cuptiActivityGetNumDroppedRecords,
      cuptiActivityPushExternalCorrelationId,
      cuptiActivityPopExternalCorrelationId,
      cuptiGetTimestamp,
      [](CUpti_CallbackDomain domain, std::uint32_t cbid, const char** name) {
        return cuptiGetCallbackName(domain, cbid, name);
      },
      cuptiGetResultString,
      cuptiSetThreadIdType,
      [](int* count) { return static_cast<int>(cudaGetDeviceCount(count)); },
      [] {
        int count = 0, current = 0;
        if (cudaGetDeviceCount(&count) != cudaSuccess) return 1;
        cudaGetDevice(&current);
        int status = 0;
        for (int d = 0; d < count; ++d)
          if (cudaSetDevice(d) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) status = 1;
        cudaSetDevice(current);
        return status;
      },
      [](int device, gpu_device_properties* out) {
        cudaDeviceProp p{};
        const cudaError_t e = cudaGetDeviceProperties(&p, device);
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
      },
  };
  return api;
}

std::string describe(const cupti_api& api, CUptiResult result) {
  const char* text = nullptr;
  std::string out = api.get_result_string && api.get_result_string(result, &text) == CUPTI_SUCCESS && text
                        ? std::string(text)
                        : std::string("CUPTI error");
  return out + " (" + std::to_string(static_cast<int>(result)) + ")";
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
