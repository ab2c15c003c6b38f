// The CPU ranges collector: scopes are ring events, so all it sets is
// what the hot path records.
#include "collect/collector_hooks.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

extern const collector_hooks cpu_hooks{
    .kind = activity::cpu,
    .state_bits = [](const profile_options&) -> std::uint32_t { return state_recording; }};

}  // namespace proftrace::detail
