// timeit's device synchronisation (builds with the CUDA collector).
#include <cuda_runtime_api.h>

#include "proftrace/cuda.hpp"
#include "proftrace/timeit.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

bool synchronize_cuda_for_timing() noexcept {
  static const bool device_visible = cuda::available();  // asked once: the answer does not change in a run
  return device_visible && cudaDeviceSynchronize() == cudaSuccess;
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
