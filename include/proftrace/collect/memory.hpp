// proftrace/collect/memory.hpp — the memory collector: PROF_ALLOC, PROF_FREE.
//
//   proftrace::profile p({.profile_memory = true});
//   void* block = pool.take(n);
//   PROF_ALLOC(block, n);            // host memory; PROF_ALLOC(dptr, n, 0) for device 0
//   ...
//   PROF_FREE(block);
//
// Compiled in unless PROFTRACE_WITH_MEMORY=0 (then those macros compile to
// nothing, the others stay). Each allocation and free is attributed to the
// scopes open on its thread (CPU Mem / Self CPU Mem, CUDA Mem / Self CUDA Mem)
// and written as a "[memory]" instant event with the running totals; a free
// of an address never seen allocated is counted, never a crash.
#pragma once

#include "../collectors.hpp"
#include "../config.hpp"

namespace proftrace {
namespace collect {
struct memory {
  static constexpr activity kind = activity::memory;
  static constexpr std::string_view name = "memory";
};
}  // namespace collect

template <>
struct is_available<collect::memory> : std::bool_constant<PROFTRACE_ENABLED != 0 && PROFTRACE_WITH_MEMORY != 0> {};

}  // namespace proftrace
