#include "counter_kinds.hpp"

#include <linux/perf_event.h>

#include <iterator>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {
namespace {

constexpr counter_kind kinds[] = {
    {"task-clock", nullptr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {"cpu-clock", nullptr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
    {"context-switches", "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cpu-migrations", "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    {"page-faults", "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {"minor-faults", nullptr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN},
    {"major-faults", nullptr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
    {"cycles", "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", nullptr, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"ref-cycles", nullptr, PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES},
    {"bus-cycles", nullptr, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES},
    {"cache-references", nullptr, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
    {"cache-misses", nullptr, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {"branches", "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch-misses", nullptr, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
    {"stalled-cycles-frontend", "idle-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND},
    {"stalled-cycles-backend", "idle-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND},
};
constexpr std::size_t kind_count = std::size(kinds);

// One key site per kind (a site's atomic member keeps them from being built in a loop).
#define PROFTRACE_COUNTER_SITE(i) site{kinds[i].name, "", __FILE__, 0, category::counter}
const site key_sites[] = {
    PROFTRACE_COUNTER_SITE(0),
    PROFTRACE_COUNTER_SITE(1),
    PROFTRACE_COUNTER_SITE(2),
    PROFTRACE_COUNTER_SITE(3),
    PROFTRACE_COUNTER_SITE(4),
    PROFTRACE_COUNTER_SITE(5),
    PROFTRACE_COUNTER_SITE(6),
    PROFTRACE_COUNTER_SITE(7),
    PROFTRACE_COUNTER_SITE(8),
    PROFTRACE_COUNTER_SITE(9),
    PROFTRACE_COUNTER_SITE(10),
    PROFTRACE_COUNTER_SITE(11),
    PROFTRACE_COUNTER_SITE(12),
    PROFTRACE_COUNTER_SITE(13),
    PROFTRACE_COUNTER_SITE(14),
    PROFTRACE_COUNTER_SITE(15),
    PROFTRACE_COUNTER_SITE(16)};
#undef PROFTRACE_COUNTER_SITE
static_assert(std::size(key_sites) == kind_count);

}  // namespace

std::span<const counter_kind> counter_kinds() noexcept { return kinds; }
std::size_t counter_kind_count() noexcept { return std::size(kinds); }

int counter_kind_index(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kind_count; ++i)
    if (name == kinds[i].name || (kinds[i].alias && name == kinds[i].alias)) return static_cast<int>(i);
  return -1;
}

const site* counter_key_site(std::size_t kind) noexcept { return kind < kind_count ? &key_sites[kind] : nullptr; }

int counter_kind_of_key(const char* key) noexcept {
  for (std::size_t i = 0; i < kind_count; ++i)
    if (key == kinds[i].name) return static_cast<int>(i);
  return -1;
}

}  // namespace proftrace::detail
