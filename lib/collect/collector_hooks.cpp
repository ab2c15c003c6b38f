#include "collector_hooks.hpp"

#include "proftrace/detail/recorder.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

// The collectors that live in the recorder itself: their records are ring
// events, so all they set is what the hot path records.
extern const collector_hooks cpu_ranges_hooks{
    .kind = activity::cpu,
    .start = nullptr,
    .stop = nullptr,
    .state_bits = [](const profile_options&) -> std::uint32_t { return state_recording; },
    .open_window = nullptr,
    .take = nullptr};

extern const collector_hooks memory_hooks{
    .kind = activity::memory,
    .start = nullptr,
    .stop = nullptr,
    .state_bits = [](const profile_options& o) -> std::uint32_t { return o.profile_memory ? std::uint32_t{state_memory} : 0u; },
    .open_window = [](const profile_options& o, window_options& w) { w.profile_memory = o.profile_memory; },
    .take = nullptr};

extern const collector_hooks flops_hooks{
    .kind = activity::flops,
    .start = nullptr,
    .stop = nullptr,
    .state_bits = [](const profile_options& o) -> std::uint32_t { return o.with_flops ? std::uint32_t{state_flops} : 0u; },
    .open_window = nullptr,
    .take = nullptr};

#if PROFTRACE_WITH_CUDA
extern const collector_hooks cuda_kernels_hooks;
#endif
#if PROFTRACE_WITH_NVTX
extern const collector_hooks nvtx_ranges_hooks;
#endif
#if PROFTRACE_WITH_COUNTERS
extern const collector_hooks counters_hooks;
#endif
#if PROFTRACE_WITH_OPENMP
extern const collector_hooks openmp_hooks;
#endif

std::span<const collector_hooks* const> build_collectors() {
  static const collector_hooks* const all[] = {
      &cpu_ranges_hooks,
#if PROFTRACE_WITH_CUDA
      &cuda_kernels_hooks,
#endif
#if PROFTRACE_WITH_NVTX
      &nvtx_ranges_hooks,
#endif
      &memory_hooks,
      &flops_hooks,
#if PROFTRACE_WITH_COUNTERS
      &counters_hooks,
#endif
#if PROFTRACE_WITH_OPENMP
      &openmp_hooks,
#endif
  };
  return all;
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
