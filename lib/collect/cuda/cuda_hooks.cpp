// The CUDA collector at a session's edges (collector_hooks.hpp): CUPTI's
// kernels, copies, API calls and allocations.
#include "collect/collector_hooks.hpp"
#include "cuda_collection.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

#if PROFTRACE_WITH_CUDA
// CUDA cannot be used across fork(): a forked child never collects it.
extern const collector_hooks cuda_kernels_hooks{
    .kind = activity::cuda,
    .start = [](const profile_options&, bool named, bool in_forked_child) { return !in_forked_child && cuda_collection_start(named); },
    .stop = [] { cuda_collection_stop(); },
    .state_bits = [](const profile_options&) -> std::uint32_t { return state_cuda; },
    .open_window =
        [](const profile_options&, window_options& w) {
          w.devices = cuda_devices();
          w.cuda = true;
        },
    .take = [] { return cuda_collection_take(); }};
#else
extern const collector_hooks cuda_kernels_hooks = absent_collector(activity::cuda);
#endif

}  // namespace proftrace::detail
