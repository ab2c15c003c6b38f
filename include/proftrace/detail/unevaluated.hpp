// Internal: the operands of compiled-out macros. A compiled-out PROF_* macro
// names its arguments as an operand of sizeof only: nothing is evaluated, no
// code is emitted, no symbol is referenced, and a variable or parameter kept
// for the profile alone stays used under -Wunused. The functions here are
// declared, never defined: sizeof's operand does not use them.
//
//   #define PROF_MEMORY_RESERVED(...) PROFTRACE_DETAIL_UNEVALUATED_CALL(::proftrace::detail::unevaluated::reserved(__VA_ARGS__))
#pragma once

#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "../config.hpp"
#include "../flops.hpp"
#include "../memory_category.hpp"

// One expression (a name, a value; any type, a bit-field too).
#define PROFTRACE_DETAIL_UNEVALUATED(x) static_cast<void>(sizeof(static_cast<void>(x), 0))
// A call of one of the functions below (variadic: braces with commas pass
// as they are), for arguments that are not one
// expression: several, a braced list, designated initializers.
#define PROFTRACE_DETAIL_UNEVALUATED_CALL(...) static_cast<void>(sizeof(__VA_ARGS__))

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail::unevaluated {

// The parameters of the enabled macros' calls, by value as there (a
// reference would also make GCC take a variable as addressable, which
// changes its unoptimised code: objcode_identity, -O0), so that every
// argument the enabled macro takes, a braced list or an atomic too, compiles.
int alloc(const void*, std::int64_t, int = -1, memory_category = memory_category::unknown) noexcept;
int free(const void*, int = -1) noexcept;
int reserved(std::int64_t, int = -1) noexcept;
int category(memory_category) noexcept;

// What PROF_FLOPS takes: an estimate, also as a braced list ({n, true}), or
// anything its enabled form takes (which checks it there), by value when it
// can be copied.
int flops(::proftrace::flops::estimate) noexcept;
template <class T>
  requires std::is_copy_constructible_v<T>
int flops(T) noexcept;
template <class T>
  requires(!std::is_copy_constructible_v<T>)
int flops(const T&) noexcept;

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
