#include "collector_hooks.hpp"

#include <iterator>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

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

// Trivially destructible: exit hooks that run after static destructors still read it.
struct collector_list {
  const collector_hooks* items[std::size(all_collectors)] = {};
  std::size_t size = 0;
};

std::span<const collector_hooks* const> build_collectors() {
  static const collector_list in_build = [] {
    collector_list l;
    for (const collector_hooks* c : all_collectors)
      if (c->in_build) l.items[l.size++] = c;
    return l;
  }();
  return {in_build.items, in_build.size};
}

}  // namespace proftrace::detail
