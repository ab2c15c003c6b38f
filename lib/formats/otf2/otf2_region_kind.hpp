// Internal: the OTF2 role and paradigm of a scope, from its name and its
// Kineto category, so that Vampir and Scalasca class it as they class
// Score-P's: MPI_* calls (MPI paradigm: point-to-point, collective,
// barrier), OpenMP constructs ("omp parallel", "omp barrier", ...),
// GPU work (kernels, copies), functions (cpu_op, python_function) and user
// regions (user_annotation), ProfilerStep a loop.
//
//   const otf2_region_kind k = region_kind_of("MPI_Allreduce", "user_annotation");
//   // k.role == OTF2_REGION_ROLE_COLL_ALL2ALL, k.paradigm == OTF2_PARADIGM_MPI
#pragma once

#include "proftrace/config.hpp"

#include <otf2/otf2.h>

#include <string_view>

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

struct otf2_region_kind {
  OTF2_RegionRole role = OTF2_REGION_ROLE_CODE;
  OTF2_Paradigm paradigm = OTF2_PARADIGM_USER;
};

otf2_region_kind region_kind_of(std::string_view name, std::string_view category) noexcept;

// The name a scope's region takes: "ProfilerStep" for every "ProfilerStep#N"
// (its N a parameter of the enter), else the name itself.
std::string_view region_name_of(std::string_view name) noexcept;
// N of "ProfilerStep#N"; false for another name.
bool profiler_step_number(std::string_view name, std::int64_t& step) noexcept;

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
