// proftrace/detail/site.hpp — the static record each macro use owns.
// Not API: the macros create these; events point at them.
#pragma once

#include <atomic>
#include <cstdint>

#include "../config.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

// How the flusher writes an event that points at a site.
enum class category : std::uint8_t {
  user_annotation,  // PROF_SCOPE: "cat": "user_annotation"
  cpu_op,           // op-like scopes (PROF_OP, scopes with shapes): "cpu_op"
  module,           // PROF_MODULE: a user_annotation that also names a level of
                    // the module hierarchy (with_modules)
  step,             // ProfilerStep#N; the step number travels in the payload
  instant,          // PROF_INSTANT
  counter,          // PROF_COUNTER
  proftrace,        // proftrace's own spans: a producer's wait for ring room under block
  openmp,           // OpenMP regions, loops and waits seen through OMPT: "cat": "openmp"
};

struct site {
  const char* name;
  const char* function;
  const char* file;
  std::uint32_t line;
  category cat;
#if PROFTRACE_WITH_NVTX
  // The name's handle in the NVTX domain, registered on the site's first
  // recorded scope (mutable: the macros' sites are constexpr objects).
  mutable std::atomic<const void*> nvtx_name{nullptr};
#endif
};

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
