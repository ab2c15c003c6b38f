// The CUDA collectors at a session's edges (collector_hooks.hpp): CUPTI's
// kernels, copies, API calls and allocations, and NVTX ranges.
#include "collect/collector_hooks.hpp"
#include "cuda_collection.hpp"
#include "proftrace/detail/recorder.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

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
#endif

#if PROFTRACE_WITH_NVTX
// NVTX ranges need a tool (Nsight), attached when the process starts; with
// none they would cost two calls per scope for nothing. They need no CUPTI.
extern const collector_hooks nvtx_ranges_hooks{
    .kind = activity::nvtx,
    .start = [](const profile_options&, bool, bool) { return nvtx_tool_attached(); },
    .stop = nullptr,
    .state_bits = [](const profile_options&) -> std::uint32_t { return state_nvtx; },
    .open_window = nullptr,
    .take = nullptr};
#endif

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
