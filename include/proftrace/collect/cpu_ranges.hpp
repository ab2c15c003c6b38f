// proftrace/collect/cpu_ranges.hpp — the CPU range collector: PROF_SCOPE,
// PROF_FUNCTION, PROF_OP, PROF_MODULE, PROF_STEP, PROF_INSTANT, PROF_COUNTER.
//
//   using cpu_only = proftrace::basic_profile<proftrace::collect::cpu_ranges>;
//   cpu_only p({.activities = {proftrace::activity::cpu}});
//
// Compiled in unless PROFTRACE_WITH_CPU_RANGES=0 (then those macros compile
// to nothing and the collector drops out of every collector_list).
#pragma once

#include "../collectors.hpp"
#include "../config.hpp"

namespace proftrace {
namespace collect {
struct cpu_ranges {
  static constexpr activity kind = activity::cpu;
  static constexpr std::string_view name = "cpu_ranges";
};
}  // namespace collect

template <>
struct is_available<collect::cpu_ranges> : std::bool_constant<PROFTRACE_ENABLED != 0 && PROFTRACE_WITH_CPU_RANGES != 0> {};

}  // namespace proftrace
