// proftrace/collect/cuda_kernels.hpp — the CUDA collector: CUPTI kernels,
// copies, sets and API calls, each linked to the scope that launched it.
//
//   proftrace::profile p;                 // CPU and CUDA where the build has both
//   p.start();
//   { PROF_SCOPE("forward"); launch_kernels(); }   // kernels appear under "forward"
//   p.stop();
//   std::cout << p.key_averages().table({.sort_by = "self_cuda_time_total"});
//
// Compiled in when the build found the CUDA toolkit (PROFTRACE_WITH_CUDA);
// libcupti and libcudart are opened at run time, so the program needs
// neither to start. Without them, a driver or a device, a session leaves
// CUDA collection off and records the CPU profile as usual: silently with
// default activities, with one warning per process where it named
// activity::cuda. Another CUPTI client attached is one warning either way;
// PROFTRACE_DISABLE_CUDA=1 turns collection off by hand, silently.
#pragma once

#include "../collectors.hpp"
#include "../config.hpp"

namespace proftrace {
namespace collect {
struct cuda_kernels {
  static constexpr activity kind = activity::cuda;
  static constexpr std::string_view name = "cuda_kernels";
};
}  // namespace collect

template <>
struct is_available<collect::cuda_kernels> : std::bool_constant<PROFTRACE_ENABLED != 0 && PROFTRACE_WITH_CUDA != 0> {};

}  // namespace proftrace
