// The FLOPs collector: estimates are ring events added to the innermost scope.
#include "collect/collector_hooks.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

extern const collector_hooks flops_hooks{
    .kind = activity::flops,
    .state_bits = [](const profile_options& o) -> std::uint32_t {
      return o.with_flops ? std::uint32_t{state_flops} : 0u;
    }};

}  // namespace proftrace::detail
