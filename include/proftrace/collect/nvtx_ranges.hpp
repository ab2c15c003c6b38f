// proftrace/collect/nvtx_ranges.hpp — every recorded scope also opens an
// NVTX3 range, so Nsight Systems shows proftrace's names on its timeline.
//
//   // nsys profile --capture-range=cudaProfilerApi ./app
//   proftrace::profile p({.schedule = proftrace::schedule({.wait = 1, .active = 3}),
//                         .cuda_profiler_gating = true});
//   p.start();
//   for (...) { PROF_STEP(); PROF_SCOPE("forward"); ... }   // "forward" in the proftrace domain
//
// Ranges live in the "proftrace" domain; a scope's name is registered with
// the tool once per call site, steps are named "ProfilerStep#N". They need
// no CUPTI, so they keep working while Nsight holds it. With no NVTX tool
// attached (NVTX creates no domain then) a session opens none, and a scope
// costs what it costs without NVTX. Built with the CUDA collector
// (PROFTRACE_WITH_NVTX=AUTO); a session turns them off by leaving
// activity::nvtx out of its activities.
#pragma once

#include "../collectors.hpp"
#include "../config.hpp"

namespace proftrace {
namespace collect {
struct nvtx_ranges {
  static constexpr activity kind = activity::nvtx;
  static constexpr std::string_view name = "nvtx_ranges";
};
}  // namespace collect

template <>
struct is_available<collect::nvtx_ranges> : std::bool_constant<PROFTRACE_ENABLED != 0 && PROFTRACE_WITH_NVTX != 0> {};

}  // namespace proftrace
