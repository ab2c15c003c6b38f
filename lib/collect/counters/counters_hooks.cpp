// The counters collector at a session's edges (collector_hooks.hpp): start()
// checks each named counter on the calling thread, warns once naming those
// that cannot be had, and hands the rest to the threads' scopes.
#include "collect/collector_hooks.hpp"

#if PROFTRACE_WITH_COUNTERS
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "thread_counters.hpp"
#include "proftrace/detail/recorder.hpp"
#include "helpers/warn.hpp"
#endif

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

#if PROFTRACE_WITH_COUNTERS
namespace {

// The kinds of `names` this machine counts; one warning names the others.
std::vector<std::uint8_t> available_counters(const std::vector<std::string>& names) {
  std::vector<std::uint8_t> kinds;
  std::string missing;
  const auto miss = [&](const std::string& name, const std::string& why) {
    missing += missing.empty() ? "" : "; ";
    missing += "'" + name + "' " + why;
  };
  for (const std::string& name : names) {
    const int kind = counter_kind_index(name);
    if (kind < 0) {
      miss(name, "is not a counter proftrace knows (see <proftrace/collect/counters.hpp>)");
      continue;
    }
    if (std::find(kinds.begin(), kinds.end(), static_cast<std::uint8_t>(kind)) != kinds.end()) continue;
    if (kinds.size() == max_session_counters) {
      miss(name, "is past the " + std::to_string(max_session_counters) + " counters a session may count");
      continue;
    }
    std::string why;
    const int fd = open_counter(static_cast<std::size_t>(kind), why);
    if (fd < 0) {
      miss(name, why);
      continue;
    }
    close(fd);
    kinds.push_back(static_cast<std::uint8_t>(kind));
  }
  if (!missing.empty()) {
    std::string counted;
    for (const std::uint8_t k : kinds) counted += std::string(counted.empty() ? "" : ", ") + counter_kinds()[k].name;
    warn("counters not counted: " + missing +
         (kinds.empty() ? "; no counter is recorded" : "; counted: " + counted));
  }
  return kinds;
}

}  // namespace

extern const collector_hooks counters_hooks{
    .kind = activity::counters,
    .start =
        [](const profile_options& opts, bool, bool) {
          if (opts.counters.empty()) return false;
          const std::vector<std::uint8_t> kinds = available_counters(opts.counters);
          set_session_counters(kinds);
          return !kinds.empty();
        },
    .stop = [] { set_session_counters({}); },
    .state_bits = [](const profile_options&) -> std::uint32_t { return state_counters; }};
#else
extern const collector_hooks counters_hooks = absent_collector(activity::counters);
#endif

}  // namespace proftrace::detail
