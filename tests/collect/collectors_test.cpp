// Collectors as compile-time policy types: the availability trait drops an
// unavailable collector from collector_list, basic_profile compiles in the
// activities of what is left, and a session picks a run-time subset of them
// (warning about, and ignoring, activities this build did not compile in).
#include <doctest/doctest.h>

#include <proftrace/collect/cpu_ranges.hpp>
#include <proftrace/collectors.hpp>
#include <proftrace/macros.hpp>
#include <proftrace/profile.hpp>
#include <proftrace/warnings.hpp>

#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace collectors_test {

// A collector this build "lacks" (think CUDA without the toolkit).
struct unavailable_gpu {
  static constexpr proftrace::activity kind = proftrace::activity::cuda;
  static constexpr std::string_view name = "unavailable_gpu";
};
// A collector that does not specialise the trait: available by default.
struct default_memory {
  static constexpr proftrace::activity kind = proftrace::activity::memory;
  static constexpr std::string_view name = "default_memory";
};

}  // namespace collectors_test

template <>
struct proftrace::is_available<collectors_test::unavailable_gpu> : std::false_type {};

namespace {

using proftrace::activity;
using proftrace::activity_set;
using proftrace::basic_profile;
using proftrace::collector_list;
using proftrace::type_list;
using proftrace::collect::cpu_ranges;
using collectors_test::default_memory;
using collectors_test::unavailable_gpu;

// ---- the trait and the list, at compile time ----
static_assert(PROFTRACE_ENABLED && PROFTRACE_WITH_CPU_RANGES, "this test expects the default build selection");
static_assert(proftrace::is_available<cpu_ranges>::value);
static_assert(!proftrace::is_available<unavailable_gpu>::value);
static_assert(proftrace::is_available<default_memory>::value);

static_assert(std::is_same_v<collector_list<cpu_ranges, unavailable_gpu>, type_list<cpu_ranges>>);
static_assert(std::is_same_v<collector_list<unavailable_gpu, cpu_ranges>, type_list<cpu_ranges>>);
static_assert(std::is_same_v<collector_list<unavailable_gpu>, type_list<>>);
static_assert(std::is_same_v<collector_list<>, type_list<>>);
static_assert(std::is_same_v<collector_list<default_memory, unavailable_gpu, cpu_ranges>,
                             type_list<default_memory, cpu_ranges>>);  // order kept
static_assert(collector_list<cpu_ranges, unavailable_gpu>::size == 1);
static_assert(collector_list<unavailable_gpu, unavailable_gpu>::size == 0);

// ---- the activities a list compiles in ----
static_assert(proftrace::activities_of<collector_list<cpu_ranges, unavailable_gpu>>::value == activity_set{activity::cpu});
static_assert(proftrace::activities_of<collector_list<unavailable_gpu>>::value.empty());
static_assert(proftrace::activities_of<collector_list<cpu_ranges, default_memory>>::value ==
              activity_set{activity::cpu, activity::memory});

static_assert(basic_profile<cpu_ranges>::compiled_activities.contains(activity::cpu));
static_assert(!basic_profile<cpu_ranges>::compiled_activities.contains(activity::cuda));
static_assert(basic_profile<cpu_ranges>::compiled_activities == activity_set{activity::cpu});
static_assert(std::is_same_v<basic_profile<cpu_ranges, unavailable_gpu>::collectors, type_list<cpu_ranges>>);
static_assert(basic_profile<cpu_ranges, unavailable_gpu>::compiled_activities == activity_set{activity::cpu});
static_assert(basic_profile<unavailable_gpu>::compiled_activities.empty());

// proftrace::profile is the build's selection: the CPU, CUDA (where the
// toolkit was found), memory and FLOP collectors, each only where compiled in.
using proftrace::collect::cuda_kernels;
static_assert(proftrace::is_available<cuda_kernels>::value == (PROFTRACE_ENABLED && PROFTRACE_WITH_CUDA));
using proftrace::collect::nvtx_ranges;
static_assert(proftrace::is_available<nvtx_ranges>::value == (PROFTRACE_ENABLED && PROFTRACE_WITH_NVTX));
// The counters and OpenMP collectors come last where compiled in.
static_assert(proftrace::is_available<proftrace::collect::counters>::value == (PROFTRACE_ENABLED && PROFTRACE_WITH_COUNTERS));
static_assert(proftrace::is_available<proftrace::collect::openmp>::value == (PROFTRACE_ENABLED && PROFTRACE_WITH_OPENMP));
template <class... C>
using with_optional = collector_list<C..., proftrace::collect::counters, proftrace::collect::openmp>;
static_assert(with_optional<cpu_ranges>::size == 1 + (PROFTRACE_ENABLED && PROFTRACE_WITH_COUNTERS) +
                                                   (PROFTRACE_ENABLED && PROFTRACE_WITH_OPENMP));
constexpr activity_set optional_activities =
    activity_set::from_bits((PROFTRACE_WITH_COUNTERS ? activity_set{activity::counters}.bits() : 0u) |
                            (PROFTRACE_WITH_OPENMP ? activity_set{activity::openmp}.bits() : 0u));
#if PROFTRACE_WITH_FLOPS && PROFTRACE_WITH_MEMORY && PROFTRACE_WITH_CUDA && PROFTRACE_WITH_NVTX
static_assert(std::is_same_v<proftrace::build_collectors, with_optional<cpu_ranges, cuda_kernels, nvtx_ranges,
                                                                        proftrace::collect::memory, proftrace::collect::flops>>);
static_assert(proftrace::profile::compiled_activities ==
              (activity_set{activity::cpu, activity::cuda, activity::nvtx, activity::memory, activity::flops} | optional_activities));
#elif PROFTRACE_WITH_FLOPS && PROFTRACE_WITH_MEMORY && PROFTRACE_WITH_CUDA
static_assert(std::is_same_v<proftrace::build_collectors,
                             with_optional<cpu_ranges, cuda_kernels, proftrace::collect::memory, proftrace::collect::flops>>);
static_assert(proftrace::profile::compiled_activities ==
              (activity_set{activity::cpu, activity::cuda, activity::memory, activity::flops} | optional_activities));
#elif PROFTRACE_WITH_FLOPS && PROFTRACE_WITH_MEMORY
static_assert(std::is_same_v<proftrace::build_collectors,
                             with_optional<cpu_ranges, proftrace::collect::memory, proftrace::collect::flops>>);
static_assert(std::is_same_v<proftrace::profile, proftrace::basic_profile_of<with_optional<
                                                 cpu_ranges, proftrace::collect::memory, proftrace::collect::flops>>::type>);
static_assert(proftrace::profile::compiled_activities == (activity_set{activity::cpu, activity::memory, activity::flops} | optional_activities));
#elif !PROFTRACE_WITH_FLOPS && !PROFTRACE_WITH_MEMORY && !PROFTRACE_WITH_CUDA
static_assert(std::is_same_v<proftrace::build_collectors, with_optional<cpu_ranges>>);
static_assert(std::is_same_v<proftrace::profile, proftrace::basic_profile_of<with_optional<cpu_ranges>>::type>);
static_assert(proftrace::profile::compiled_activities == (activity_set{activity::cpu} | optional_activities));
#endif

// ---- activity_set itself ----
static_assert(activity_set{}.empty());
static_assert((activity_set{activity::cpu, activity::cuda} & activity_set{activity::cpu}) == activity_set{activity::cpu});
static_assert((activity_set{activity::cpu} | activity_set{activity::flops}).contains(activity::flops));

// Collects warnings (the handler may run on the flusher thread).
struct warnings_seen {
  std::mutex mutex;
  std::vector<std::string> messages;
  proftrace::warning_handler previous;

  warnings_seen() {
    previous = proftrace::set_warning_handler([this](std::string_view m) {
      std::lock_guard lock(mutex);
      messages.emplace_back(m);
    });
  }
  ~warnings_seen() { proftrace::set_warning_handler(previous); }
  std::vector<std::string> take() {
    std::lock_guard lock(mutex);
    return std::exchange(messages, {});
  }
};

}  // namespace

TEST_CASE("a session asking only for activities this build did not compile in is rejected, with a warning") {
  warnings_seen warnings;
  CHECK_THROWS_WITH_AS(basic_profile<cpu_ranges>({.activities = {activity::cuda}}), "No valid profiler activities found",
                       std::invalid_argument);
  const auto seen = warnings.take();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0] == "activity CUDA is not compiled into this build; ignored");

  CHECK_THROWS_WITH_AS(basic_profile<cpu_ranges>({.activities = {activity::memory, activity::cuda}}),
                       "No valid profiler activities found", std::invalid_argument);
  CHECK(warnings.take().size() == 2);
}

TEST_CASE("a session keeps the compiled-in subset of the activities it asks for") {
  warnings_seen warnings;
  basic_profile<cpu_ranges, unavailable_gpu> p({.activities = {activity::cpu, activity::cuda}});
  CHECK(p.activities() == activity_set{activity::cpu});
  const auto seen = warnings.take();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0] == "activity CUDA is not compiled into this build; ignored");
}

TEST_CASE("no activities asked for means every compiled-in one, silently") {
  warnings_seen warnings;
  proftrace::profile p;
  CHECK(p.activities() == proftrace::profile::compiled_activities);
  basic_profile<cpu_ranges> q({.activities = {activity::cpu}});
  CHECK(q.activities() == activity_set{activity::cpu});
  CHECK(warnings.take().empty());
}

TEST_CASE("a profile whose collectors all dropped out cannot start a session") {
  warnings_seen warnings;
  CHECK_THROWS_WITH_AS(basic_profile<unavailable_gpu>(), "No valid profiler activities found", std::invalid_argument);
  CHECK(warnings.take().empty());  // nothing was asked for, nothing to warn about
  CHECK_THROWS_WITH_AS(basic_profile<unavailable_gpu>({.activities = {activity::cpu}}),
                       "No valid profiler activities found", std::invalid_argument);
  CHECK(warnings.take().size() == 1);
}

TEST_CASE("the selected CPU activity records CPU ranges") {
  warnings_seen warnings;
  basic_profile<cpu_ranges, unavailable_gpu> p({.activities = {activity::cpu}});
  p.start();
  {
    PROF_SCOPE("collectors_test.scope");
  }
  p.stop();
  bool found = false;
  for (const auto& row : p.key_averages().rows)
    if (row.key == "collectors_test.scope") found = row.count == 1;
  CHECK(found);
  CHECK(warnings.take().empty());
}
