// timeit's device synchronisation (builds with the CUDA collector), through
// the dlopen'd runtime: without libcudart it is simply never visible.
#include "cuda_runtime.hpp"
#include "proftrace/cuda.hpp"
#include "proftrace/timeit.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

bool synchronize_cuda_for_timing() noexcept {
  static const bool device_visible = cuda::available();  // asked once: the answer does not change in a run
  return device_visible && cuda::detail::runtime().device_synchronize() == 0;
}

}  // namespace proftrace::detail
