#include "cudart_functions.hpp"

#include "cuda_library.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

bool bind_device_calls(cudart_functions& cudart, std::string& why) {
  const shared_library& runtime = cudart_library();
  return PROFTRACE_DETAIL_BIND(cudart.get_device_count, runtime, cudaGetDeviceCount) &&
         PROFTRACE_DETAIL_BIND(cudart.get_device, runtime, cudaGetDevice) &&
         PROFTRACE_DETAIL_BIND(cudart.set_device, runtime, cudaSetDevice) &&
         PROFTRACE_DETAIL_BIND(cudart.device_synchronize, runtime, cudaDeviceSynchronize) &&
         PROFTRACE_DETAIL_BIND(cudart.get_device_properties, runtime, cudaGetDeviceProperties);
}

bool bind_all_calls(cudart_functions& cudart, std::string& why) {
  const shared_library& runtime = cudart_library();
  return bind_device_calls(cudart, why) && PROFTRACE_DETAIL_BIND(cudart.profiler_start, runtime, cudaProfilerStart) &&
         PROFTRACE_DETAIL_BIND(cudart.profiler_stop, runtime, cudaProfilerStop) &&
         PROFTRACE_DETAIL_BIND(cudart.mem_get_info, runtime, cudaMemGetInfo) &&
         PROFTRACE_DETAIL_BIND(cudart.get_error_string, runtime, cudaGetErrorString);
}

}  // namespace proftrace::detail
