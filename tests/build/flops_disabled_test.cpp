// PROFTRACE_WITH_FLOPS=0 and PROFTRACE_WITH_MEMORY=0: the FLOP and memory
// macros compile to void expressions that name their arguments as sizeof's
// operand only, evaluate nothing and reference no symbol (this executable is
// not linked with libproftrace), while the estimators stay usable.
#include <doctest/doctest.h>

#include <proftrace/flops.hpp>
#include <proftrace/collect/flops.hpp>
#include <proftrace/collect/memory.hpp>
#include <proftrace/macros.hpp>

#include <type_traits>

static_assert(PROFTRACE_WITH_FLOPS == 0);
static_assert(!proftrace::is_available<proftrace::collect::flops>::value);
static_assert(PROFTRACE_WITH_MEMORY == 0);
static_assert(!proftrace::is_available<proftrace::collect::memory>::value);

namespace disabled_flops_test {
std::int64_t never_defined();  // evaluating any argument would fail to link
}

TEST_CASE("disabled FLOP macros are void expressions and evaluate nothing") {
  using disabled_flops_test::never_defined;
  int evaluated = 0;
  PROF_MATMUL(never_defined(), ++evaluated, 4);
  PROF_ADDMM(never_defined(), 4, 4);
  PROF_BMM(never_defined(), 2, 3, 4);
  PROF_BADDBMM(never_defined(), 2, 3, 4);
  PROF_ELEMENTWISE(++evaluated);
  PROF_FLOPS(proftrace::flops::mm(never_defined(), 1, 1));
  PROF_CONV(.batch = never_defined(), .in_channels = 3);
  PROF_CONV_BACKWARD(.batch = never_defined());
  PROF_ALLOC(nullptr, never_defined());
  PROF_ALLOC(nullptr, ++evaluated, 0);
  PROF_FREE(nullptr);
  PROF_FREE(nullptr, never_defined());
  PROF_ALLOC(nullptr, 1, -1, static_cast<proftrace::memory_category>(never_defined()));
  PROF_MEMORY_RESERVED(never_defined());
  PROF_MEMORY_RESERVED(++evaluated, 0);
  {
    PROF_MEMORY_CATEGORY(static_cast<proftrace::memory_category>(never_defined()));
  }
  CHECK(evaluated == 0);
  static_assert(std::is_void_v<decltype(PROF_MATMUL(1, 2, 3))>);
  static_assert(std::is_void_v<decltype(PROF_ALLOC(nullptr, 1))>);
  static_assert(std::is_void_v<decltype(PROF_MEMORY_RESERVED(1))>);
  static_assert(proftrace::flops::mm(2, 3, 4).value == 48);
}
