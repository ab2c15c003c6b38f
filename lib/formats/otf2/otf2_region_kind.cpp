#include "otf2_region_kind.hpp"

#include <array>
#include <charconv>
#include <utility>

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

namespace {

constexpr std::string_view step_region = "ProfilerStep";
constexpr std::string_view step_prefix = "ProfilerStep#";

// The calls proftrace::mpi_calls records (lib/collect/mpi/mpi_calls.cpp),
// by name, and the OMPT collector's constructs (lib/collect/openmp: "omp
// <construct>", maybe followed by more), by the start of the name.
constexpr std::array<std::pair<std::string_view, OTF2_RegionRole>, 26> known_roles{{
    {"MPI_Send", OTF2_REGION_ROLE_POINT2POINT}, {"MPI_Recv", OTF2_REGION_ROLE_POINT2POINT},
    {"MPI_Isend", OTF2_REGION_ROLE_POINT2POINT}, {"MPI_Irecv", OTF2_REGION_ROLE_POINT2POINT},
    {"MPI_Sendrecv", OTF2_REGION_ROLE_POINT2POINT}, {"MPI_Barrier", OTF2_REGION_ROLE_BARRIER},
    {"MPI_Bcast", OTF2_REGION_ROLE_COLL_ONE2ALL}, {"MPI_Scatter", OTF2_REGION_ROLE_COLL_ONE2ALL},
    {"MPI_Reduce", OTF2_REGION_ROLE_COLL_ALL2ONE}, {"MPI_Gather", OTF2_REGION_ROLE_COLL_ALL2ONE},
    {"MPI_Allreduce", OTF2_REGION_ROLE_COLL_ALL2ALL}, {"MPI_Allgather", OTF2_REGION_ROLE_COLL_ALL2ALL},
    {"MPI_Alltoall", OTF2_REGION_ROLE_COLL_ALL2ALL}, {"MPI_Waitall", OTF2_REGION_ROLE_FUNCTION},
    {"omp parallel", OTF2_REGION_ROLE_PARALLEL}, {"omp barrier", OTF2_REGION_ROLE_BARRIER},
    {"omp loop", OTF2_REGION_ROLE_LOOP}, {"omp taskloop", OTF2_REGION_ROLE_LOOP},
    {"omp distribute", OTF2_REGION_ROLE_LOOP}, {"omp critical", OTF2_REGION_ROLE_CRITICAL},
    {"omp single", OTF2_REGION_ROLE_SINGLE}, {"omp sections", OTF2_REGION_ROLE_SECTIONS},
    {"omp workshare", OTF2_REGION_ROLE_WORKSHARE}, {"omp ordered", OTF2_REGION_ROLE_ORDERED},
    {"omp taskwait", OTF2_REGION_ROLE_TASK_WAIT}, {"omp implicit task", OTF2_REGION_ROLE_TASK},
}};

OTF2_RegionRole known_role(std::string_view name, OTF2_RegionRole otherwise) noexcept {
  for (const auto& [known, role] : known_roles)
    if (name == known || (known.starts_with("omp ") && name.starts_with(known))) return role;
  return otherwise;
}

}  // namespace

otf2_region_kind region_kind_of(std::string_view name, std::string_view category) noexcept {
  if (name.starts_with("MPI_")) return {known_role(name, OTF2_REGION_ROLE_FUNCTION), OTF2_PARADIGM_MPI};
  if (category == "openmp" || name.starts_with("omp ")) return {known_role(name, OTF2_REGION_ROLE_CODE), OTF2_PARADIGM_OPENMP};
  if (category == "kernel") return {OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_CUDA};
  if (category == "gpu_memcpy" || category == "gpu_memset") return {OTF2_REGION_ROLE_DATA_TRANSFER, OTF2_PARADIGM_CUDA};
  if (category == "cuda_runtime" || category == "cuda_driver") return {OTF2_REGION_ROLE_WRAPPER, OTF2_PARADIGM_CUDA};
  if (name.starts_with(step_prefix) || name == step_region) return {OTF2_REGION_ROLE_LOOP, OTF2_PARADIGM_USER};
  if (category == "cpu_op" || category == "python_function") return {OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER};
  return {OTF2_REGION_ROLE_CODE, OTF2_PARADIGM_USER};  // user_annotation and the rest: user regions
}

std::string_view region_name_of(std::string_view name) noexcept {
  std::int64_t step = 0;
  return profiler_step_number(name, step) ? step_region : name;
}

bool profiler_step_number(std::string_view name, std::int64_t& step) noexcept {
  if (!name.starts_with(step_prefix)) return false;
  const char* end = name.data() + name.size();
  const auto [at, ec] = std::from_chars(name.data() + step_prefix.size(), end, step);
  return ec == std::errc() && at == end;
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
