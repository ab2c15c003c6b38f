// The memory collector: allocations and frees are ring events; a trace
// window resolves them in time order across threads.
#include "collect/collector_hooks.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

extern const collector_hooks memory_hooks{
    .kind = activity::memory,
    .state_bits = [](const profile_options& o) -> std::uint32_t { return o.profile_memory ? std::uint32_t{state_memory} : 0u; },
    .open_window = [](const profile_options& o, window_options& w) { w.profile_memory = o.profile_memory; }};

}  // namespace proftrace::detail
