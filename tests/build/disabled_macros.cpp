// PROFTRACE_ENABLED=0: every PROF_* macro expands to nothing (declarations)
// or a void expression that names its arguments as sizeof's operand only,
// keeps its syntactic role, does not evaluate its arguments and references
// no proftrace symbol.
//
// tests/build/CMakeLists.txt builds this file twice:
//   disabled_macros                 PROFTRACE_ENABLED=0, NOT linked with
//                                   libproftrace (linking at all proves no
//                                   proftrace symbol is referenced; the
//                                   disabled_macros_nm test checks the object)
//   disabled_macros_enabled_twin    the normal enabled build: proves that
//                                   every "syntactic position" used below is
//                                   one the real (enabled) macros accept, so
//                                   the disabled expansions are checked
//                                   against the macros' actual roles.
#include <doctest/doctest.h>

#include <proftrace/collect/cpu_ranges.hpp>
#include <proftrace/collectors.hpp>
#include <proftrace/macros.hpp>
#include <proftrace/memory_category.hpp>

#include <atomic>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace {

// ---------------------------------------------------------------------------
// Positions valid in both builds (names are string literals, as the enabled
// macros require: they build a static constexpr site from them).
// ---------------------------------------------------------------------------

int plain_function(int n) {
  PROF_FUNCTION();
  int sum = 0;
  for (int i = 0; i < n; ++i) {
    PROF_STEP();
    PROF_SCOPE("loop body");
    PROF_OP("op");
    PROF_SCOPE_SHAPES("gemm", {n, i}, {i, n});
    PROF_MODULE("model.layer");
    sum += i;
    PROF_COUNTER("sum", sum);
    PROF_INSTANT("iteration done");
  }
  return sum;
}

// Several declaration-like macros in one scope, even on one line (each gets
// its own __COUNTER__ name when enabled).
int same_line(int x) {
  PROF_SCOPE("a"); PROF_SCOPE("b"); PROF_OP("c"); PROF_MODULE("d"); PROF_STEP(); PROF_STEP(); PROF_CUDA_PROFILE();
  return x + 1;
}

template <class T>
T in_template(T v) {
  PROF_FUNCTION();
  PROF_SCOPE_SHAPES("template", {static_cast<int>(v)});
  PROF_COUNTER("value", v);
  return v * 2;
}

struct with_members {
  int value;
  explicit with_members(int v) : value(v) {
    PROF_FUNCTION();
    PROF_INSTANT("constructed");
  }
  int get() const {
    PROF_SCOPE("get");
    return value;
  }
};

// Expression-statement macros as the lone (unbraced) sub-statement of if/else,
// for, while: they must be exactly one statement, so no dangling else and no
// half-guarded expansion.
int unbraced_statements(int x) {
  int taken = 0;
  if (x > 0)
    PROF_COUNTER("positive", x);
  else
    PROF_INSTANT("not positive");
  if (x > 1)
    PROF_THREAD_NAME("worker");
  else
    PROF_COUNTER("small", x);
  if (x > 2) {
    if (x > 3)
      PROF_INSTANT("nested");
    else
      ++taken;
  }
  for (int i = 0; i < x; ++i)
    PROF_COUNTER("i", i);
  while (x-- > 5)
    PROF_INSTANT("loop");
  return taken;
}

// PROF_THREAD_NAME is an expression of type void in both builds (enabled: a
// call to a void function), so it may appear in a comma expression.
int thread_name_in_comma_expression(int x) { return (PROF_THREAD_NAME("comma"), x + 1); }
static_assert(std::is_void_v<decltype(PROF_THREAD_NAME("decltype"))>);

// PROF_INSTANT and PROF_COUNTER are void expressions in both builds too.
int expression_macros(int x) {
  const int y = (PROF_INSTANT("comma"), PROF_COUNTER("comma", x), x + 1);
  x > 0 ? PROF_INSTANT("then") : PROF_COUNTER("else", x);
  return y;
}
static_assert(std::is_void_v<decltype(PROF_INSTANT("decltype"))>);
static_assert(std::is_void_v<decltype(PROF_COUNTER("decltype", 1))>);

// Shapes of any integer type, mixed within one shape, without narrowing errors.
std::size_t shapes_of_any_integer(std::size_t m, int k, long n) {
  PROF_SCOPE_SHAPES("mixed", {m, k}, {k, n}, {std::size_t{3}, 4u, short{5}});
  return m + static_cast<std::size_t>(k + n);
}

// The memory and FLOP macros: statements, void expressions, and a
// declaration (PROF_MEMORY_CATEGORY) in a block.
int memory_and_flops(int n) {
  [[maybe_unused]] static char block[64];
  PROF_SCOPE("with memory");
  PROF_MEMORY_CATEGORY(proftrace::memory_category::activation);
  PROF_ALLOC(block, n);
  PROF_ALLOC(block + 8, n, 0, proftrace::memory_category::gradient);
  PROF_MEMORY_RESERVED(4 * n);
  PROF_MATMUL(n, n, n);
  PROF_CONV(.batch = 1, .in_channels = 3, .out_channels = 8, .input = {n, n}, .kernel = {3, 3});
  // Raw counts of any integer type, estimates in braces with commas, the
  // braced form alone, and PROF_FLOPS_SCOPE with each.
  PROF_FLOPS(n);
  PROF_FLOPS(static_cast<unsigned long>(n));
  PROF_FLOPS(proftrace::flops::estimate{n, true});
  PROF_FLOPS({n, true});
  {
    PROF_FLOPS_SCOPE("flops scope raw", n);
  }
  {
    PROF_FLOPS_SCOPE("flops scope braced", proftrace::flops::estimate{n, true});
  }
  if (n > 2)
    PROF_FLOPS(proftrace::flops::estimate{n, false});
  else
    PROF_FLOPS(2 * n);
  if (n > 1)
    PROF_FREE(block);
  else
    PROF_FREE(block + 8, 0);
  return (PROF_ELEMENTWISE(n), PROF_FREE(block), n + 1);
}
static_assert(std::is_void_v<decltype(PROF_ALLOC(nullptr, 1))>);
static_assert(std::is_void_v<decltype(PROF_MEMORY_RESERVED(1, 0))>);
static_assert(std::is_void_v<decltype(PROF_FLOPS(1))>);
static_assert(std::is_void_v<decltype(PROF_FLOPS(proftrace::flops::estimate{1, true}))>);

// Runtime names and args: a declaration and a void expression.
int dynamic_names(int n) {
  const std::string_view name = n > 1 ? "many" : "one";  // used by the macros alone: no -Wunused
  PROF_SCOPE_DYNAMIC(name);
  PROF_ARG("n", n);
  PROF_ARG("half", n / 2.0);
  PROF_ARG("name", name);
  if (n > 0)
    PROF_ARG("positive", 1);
  return (PROF_ARG("comma", n), n + 1);
}
static_assert(std::is_void_v<decltype(PROF_ARG("decltype", 1))>);

// Parameters passed on to the macros only: still used in the disabled
// build (built with -Werror=unused-parameter).
void passed_on(std::string_view name, const char* thread, int value, double sample) {
  PROF_SCOPE_DYNAMIC(name);
  PROF_THREAD_NAME(thread);
  PROF_ARG("value", value);
  PROF_COUNTER("sample", sample);
}

// Variables and parameters kept for the profile alone, passed to the FLOP,
// memory and shape macros only: still used in the disabled build (built
// with -Werror=unused-variable and -Werror=unused-parameter).
void only_for_the_profile(int m, std::int64_t bytes, void* block, proftrace::memory_category category) {
  const int n = m * 2, k = m + 1, batch = 3, kernel = 3, device = 0;
  const std::int64_t flops = 2 * n, numel = n * k, reserved = 64;
  PROF_SCOPE_SHAPES("gemm", {m, n}, {n, k});
  PROF_MATMUL(m, n, k);
  PROF_ADDMM(m, n, k);
  PROF_BMM(batch, m, n, k);
  PROF_BADDBMM(batch, m, n, k);
  PROF_ELEMENTWISE(numel);
  PROF_FLOPS(flops);
  PROF_CONV(.batch = batch, .in_channels = 3, .out_channels = 8, .input = {n, n}, .kernel = {kernel, kernel});
  PROF_CONV_BACKWARD(.batch = batch, .in_channels = 3, .out_channels = 8, .input = {n, n}, .kernel = {kernel, kernel});
  PROF_MEMORY_CATEGORY(category);
  PROF_ALLOC(block, bytes);
  PROF_FREE(block, device);
  PROF_MEMORY_RESERVED(reserved);
}

// Arguments that cannot be copied (atomics) and braced ones, as the enabled
// macros take them (converted to their parameters' types).
struct atomic_estimate {  // estimate-like: .value and .valid
  std::atomic<std::int64_t> value{8};
  std::atomic<bool> valid{true};
};
std::int64_t atomics_and_braces(std::atomic<std::int64_t>& pool, std::atomic<int>& n, void* block) {
  const atomic_estimate e;
  PROF_MATMUL(n, n, n);
  PROF_BMM(n, n, n, n);
  PROF_ELEMENTWISE({n});
  PROF_FLOPS(e);
  PROF_FLOPS({n, true});
  PROF_MEMORY_RESERVED(pool);
  PROF_ALLOC(block, pool, -1, {});
  PROF_FREE(block, {});
  PROF_MEMORY_CATEGORY({});
  return pool + n;
}

}  // namespace

TEST_CASE("the macros compile in every position and leave the program's behaviour alone") {
  static char block[16];
  only_for_the_profile(2, 16, block, proftrace::memory_category::activation);
  std::atomic<std::int64_t> pool{64};
  std::atomic<int> n{2};
  CHECK(atomics_and_braces(pool, n, block) == 66);
  CHECK(dynamic_names(2) == 3);
  passed_on("name", "thread", 1, 2.0);
  CHECK(memory_and_flops(2) == 3);
  CHECK(plain_function(4) == 6);
  CHECK(same_line(1) == 2);
  CHECK(in_template(21) == 42);
  CHECK(in_template(1.5) == 3.0);
  CHECK(with_members(7).get() == 7);
  CHECK(unbraced_statements(0) == 0);
  CHECK(unbraced_statements(3) == 1);
  CHECK(unbraced_statements(4) == 0);
  CHECK(thread_name_in_comma_expression(1) == 2);
  CHECK(expression_macros(1) == 2);
  CHECK(expression_macros(-1) == 0);
  CHECK(shapes_of_any_integer(1, 2, 3) == 6);
  // A lambda body is a block like any other.
  auto lambda = [](int v) {
    PROF_SCOPE("lambda");
    PROF_COUNTER("lambda value", v);
    return v;
  };
  CHECK(lambda(5) == 5);
}

#if !PROFTRACE_ENABLED
// ---------------------------------------------------------------------------
// Only with PROFTRACE_ENABLED=0.
// ---------------------------------------------------------------------------

static_assert(PROFTRACE_ENABLED == 0);

// The collector trait follows the master switch: cpu_ranges drops out of
// every collector list, so nothing of the session side is instantiated.
static_assert(!proftrace::is_available<proftrace::collect::cpu_ranges>::value);
static_assert(proftrace::collector_list<proftrace::collect::cpu_ranges>::size == 0);
static_assert(std::is_same_v<proftrace::collector_list<proftrace::collect::cpu_ranges>, proftrace::type_list<>>);

namespace {

int evaluations = 0;

// Never called: the disabled macros discard them unevaluated.
[[maybe_unused]] const char* name_with_side_effect(const char* name) {
  ++evaluations;
  return name;
}
[[maybe_unused]] int value_with_side_effect(int value) {
  ++evaluations;
  return value;
}

}  // namespace

// Declared, never defined anywhere, with external linkage: if any macro
// evaluated (odr-used) its argument, this executable would fail to link.
namespace disabled_macros_test {
const char* never_defined_name();
int never_defined_value();
proftrace::memory_category never_defined_category();
}  // namespace disabled_macros_test
using disabled_macros_test::never_defined_name;
using disabled_macros_test::never_defined_category;
using disabled_macros_test::never_defined_value;

TEST_CASE("disabled macros never evaluate their arguments") {
  evaluations = 0;
  int counter = 0;
  {
    PROF_SCOPE(name_with_side_effect("scope"));
    PROF_FUNCTION();
    PROF_OP(name_with_side_effect("op"));
    PROF_SCOPE_SHAPES(name_with_side_effect("shapes"), {++counter, value_with_side_effect(3)},
                      {counter++, value_with_side_effect(4)});
    PROF_MODULE(name_with_side_effect("module"));
    PROF_STEP();
    PROF_INSTANT(name_with_side_effect("instant"));
    PROF_COUNTER(name_with_side_effect("counter"), value_with_side_effect(++counter));
    PROF_COUNTER("counter", counter += 10);
    PROF_THREAD_NAME(name_with_side_effect("thread"));
    PROF_ALLOC(nullptr, value_with_side_effect(1), value_with_side_effect(0));
    PROF_FREE(nullptr, value_with_side_effect(0));
    PROF_MEMORY_RESERVED(value_with_side_effect(1));
    PROF_MEMORY_CATEGORY(never_defined_category());
    PROF_MATMUL(value_with_side_effect(1), 2, 3);
    PROF_FLOPS(value_with_side_effect(1));
    PROF_FLOPS(proftrace::flops::estimate{value_with_side_effect(1), true});
    PROF_FLOPS({value_with_side_effect(1), true});
    PROF_FLOPS_SCOPE(name_with_side_effect("flops scope"), value_with_side_effect(2));
    PROF_SCOPE_DYNAMIC(name_with_side_effect("dynamic"));
    PROF_ARG("arg", value_with_side_effect(1));
    PROF_ARG("never", never_defined_value());
  }
  CHECK(evaluations == 0);
  CHECK(counter == 0);

  // Arguments that would not even link if they were evaluated.
  PROF_SCOPE(never_defined_name());
  PROF_OP(never_defined_name());
  PROF_MODULE(never_defined_name());
  PROF_SCOPE_SHAPES(never_defined_name(), {never_defined_value()});
  PROF_INSTANT(never_defined_name());
  PROF_COUNTER(never_defined_name(), never_defined_value());
  PROF_THREAD_NAME(never_defined_name());
  PROF_FLOPS(never_defined_value());
  PROF_FLOPS({never_defined_value(), true});
  {
    PROF_FLOPS_SCOPE(never_defined_name(), proftrace::flops::estimate{never_defined_value(), true});
  }
  CHECK(evaluations == 0);
}

TEST_CASE("disabled expression macros are void expressions usable anywhere an expression is") {
  // Their disabled expansion is ((void)0), or a runtime value as sizeof's
  // operand cast to void: an expression of type void (enabled, they are
  // void expressions as well).
  static_assert(std::is_void_v<decltype(PROF_INSTANT("x"))>);
  static_assert(std::is_void_v<decltype(PROF_COUNTER("x", 1))>);
  static_assert(std::is_void_v<decltype(PROF_THREAD_NAME("x"))>);
  evaluations = 0;
  int n = 0;
  n = (PROF_INSTANT(name_with_side_effect("i")), PROF_COUNTER("c", value_with_side_effect(1)),
       PROF_THREAD_NAME(name_with_side_effect("t")), n + 1);
  CHECK(n == 1);
  n > 0 ? PROF_INSTANT(name_with_side_effect("then")) : PROF_COUNTER("else", value_with_side_effect(n));
  CHECK(evaluations == 0);
}

TEST_CASE("disabled declaration macros expand to nothing: an empty statement") {
  // `PROF_SCOPE("x");` is `;` (PROF_SCOPE_SHAPES's, a sizeof cast to void) — valid as a statement anywhere, including a
  // constexpr function (the enabled form's static site is not allowed there
  // before C++23, so this is a property of the disabled build only).
  struct local {
    static constexpr int f(int v) {
      PROF_SCOPE("constexpr");
      PROF_FUNCTION();
      PROF_STEP();
      PROF_SCOPE_SHAPES("constexpr shapes", {v});
      return v + 1;
    }
  };
  static_assert(local::f(1) == 2);
  CHECK(local::f(2) == 3);
}
#else
// The enabled twin: the trait keeps cpu_ranges when the macros are on.
static_assert(proftrace::collector_list<proftrace::collect::cpu_ranges>::size == (PROFTRACE_WITH_CPU_RANGES ? 1 : 0));
#endif
