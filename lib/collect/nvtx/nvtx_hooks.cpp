// The NVTX collector at a session's edges (collector_hooks.hpp): each
// scope also an NVTX range, for Nsight.
#include "collect/collector_hooks.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

#if PROFTRACE_WITH_NVTX
// NVTX ranges need a tool (Nsight), attached when the process starts; with
// none they would cost two calls per scope for nothing. They need no CUPTI.
extern const collector_hooks nvtx_ranges_hooks{
    .kind = activity::nvtx,
    .start = [](const profile_options&, bool, bool) { return nvtx_tool_attached(); },
    .state_bits = [](const profile_options&) -> std::uint32_t { return state_nvtx; }};
#else
extern const collector_hooks nvtx_ranges_hooks = absent_collector(activity::nvtx);
#endif

}  // namespace proftrace::detail
