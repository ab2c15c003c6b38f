#include "collector_hooks.hpp"

#include <vector>

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

// One line per collector, in the order a session starts them; each
// defines its hooks in its folder (absent_collector() where the build lacks it).
extern const collector_hooks cpu_hooks, cuda_kernels_hooks, nvtx_ranges_hooks, memory_hooks, flops_hooks, counters_hooks,
    openmp_hooks;
constexpr const collector_hooks* all_collectors[] = {
    &cpu_hooks,
    &cuda_kernels_hooks,
    &nvtx_ranges_hooks,
    &memory_hooks,
    &flops_hooks,
    &counters_hooks,
    &openmp_hooks,
};

std::span<const collector_hooks* const> build_collectors() {
  static const std::vector<const collector_hooks*> in_build = [] {
    std::vector<const collector_hooks*> v;
    for (const collector_hooks* c : all_collectors)
      if (c->in_build) v.push_back(c);
    return v;
  }();
  return in_build;
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
