// proftrace/collect/flops.hpp — the FLOP estimator collector: PROF_MATMUL,
// PROF_ADDMM, PROF_BMM, PROF_CONV, PROF_CONV_BACKWARD, PROF_ELEMENTWISE, PROF_FLOPS.
//
//   using with_flops = proftrace::basic_profile<proftrace::collect::cpu_ranges, proftrace::collect::flops>;
//   with_flops p({.with_flops = true});
//
// Compiled in unless PROFTRACE_WITH_FLOPS=0 (then those macros compile to
// nothing, the others stay, and the collector drops out of every
// collector_list). Estimates are recorded while a session runs with
// `with_flops`, and attach to the scope open on the calling thread.
#pragma once

#include "../collectors.hpp"
#include "../config.hpp"

namespace proftrace {
namespace collect {
struct flops {
  static constexpr activity kind = activity::flops;
  static constexpr std::string_view name = "flops";
};
}  // namespace collect

template <>
struct is_available<collect::flops> : std::bool_constant<PROFTRACE_ENABLED != 0 && PROFTRACE_WITH_FLOPS != 0> {};

}  // namespace proftrace
