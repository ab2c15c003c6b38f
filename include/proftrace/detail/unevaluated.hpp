// Internal: the operands of compiled-out macros. A compiled-out PROF_* macro
// names its arguments as an operand of sizeof only: nothing is evaluated, no
// code is emitted, no symbol is referenced, and a variable or parameter kept
// for the profile alone stays used under -Wunused. The functions here are
// declared, never defined: sizeof's operand does not use them.
//
//   #define PROF_MATMUL(m, n, k) PROFTRACE_DETAIL_UNEVALUATED_CALL(::proftrace::detail::unevaluated::operands(m, n, k))
#pragma once

#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "../config.hpp"
#include "../flops.hpp"

// One expression (a name, a value; any type, a bit-field too).
#define PROFTRACE_DETAIL_UNEVALUATED(x) static_cast<void>(sizeof(static_cast<void>(x), 0))
// A call of one of the functions below (variadic: braces with commas pass
// as they are), for arguments that are not one
// expression: several, a braced list, designated initializers.
#define PROFTRACE_DETAIL_UNEVALUATED_CALL(...) static_cast<void>(sizeof(__VA_ARGS__))

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail::unevaluated {

// By value: a reference would make GCC take the variable as addressable,
// which changes its unoptimised code (objcode_identity, -O0).
template <class... T>
int operands(T...) noexcept;

// What PROF_FLOPS takes: an estimate, also as a braced list ({n, true}), or
// anything its enabled form takes (which checks it there).
int flops(::proftrace::flops::estimate) noexcept;
template <class T>
int flops(T) noexcept;

// PROF_SCOPE_SHAPES's shapes: braced lists of integers of any type.
struct dim {
  template <class Int>
    requires std::is_integral_v<Int>
  dim(Int) noexcept;
};
int shapes(std::initializer_list<std::initializer_list<dim>>) noexcept;

}  // namespace detail::unevaluated
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
