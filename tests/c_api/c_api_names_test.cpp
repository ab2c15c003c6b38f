// The C API's bound on interned names (lib/recording/interned_names.hpp). A test
// executable of its own: it uses up its process's bound.
#include <doctest/doctest.h>
#include <proftrace/proftrace.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <list>
#include <string>
#include <vector>

#include "recording/interned_names.hpp"
#include "test_support.hpp"

using test_support::files_in;
using test_support::read_trace;
using test_support::temp_dir;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool sanitized_allocator = true;  // its quarantine and shadow keep freed memory resident
#else
constexpr bool sanitized_allocator = false;
#endif

namespace {

std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

// `n` names never used before, a quarter as each kind of name the C API
// interns: instants, counters, literal pushes and arg keys.
void record_new_names(int session, int n) {
  char name[96];
  for (int i = 0; i < n; ++i) {
    std::snprintf(name, sizeof name, "session %d: a name made at run time, never seen before, number %d", session, i);
    switch (i % 4) {
      case 0: proftrace_instant(name); break;
      case 1: proftrace_counter(name, i); break;
      case 2:
        proftrace_push_literal(name);
        proftrace_pop();
        break;
      default:
        proftrace_push_literal("args");
        proftrace_arg_int(name, i);
        proftrace_pop();
    }
  }
}

std::size_t over_limit_events(const boost::json::object& trace) {
  std::size_t n = 0;
  for (const auto& e : trace.at("traceEvents").as_array()) {
    const auto& event = e.as_object();
    if (event.contains("name") && event.at("name") == proftrace::detail::over_limit_name) ++n;  // a counter's too
    else if (event.contains("args") && event.at("args").as_object().contains(proftrace::detail::over_limit_name)) ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("the C API interns a bounded number of names: 3 sessions of 200,000 new names each, flat memory, the rest counted") {
  constexpr int names_per_session = 200'000;
  static_assert(names_per_session > static_cast<int>(proftrace::detail::max_interned_names));
  test_support::warning_capture warnings;
  std::vector<std::size_t> rss{resident_bytes()};
  std::list<temp_dir> outs;  // never moved: a temp_dir removes its folder when destroyed
  for (int session = 0; session < 3; ++session) {
    const temp_dir& out = outs.emplace_back("c-names");
    const std::string config = "out=" + out.path.string() + ",format=json,overflow=block";
    REQUIRE(proftrace_start(config.c_str()) == 0);
    record_new_names(session, names_per_session);
    proftrace_stop();
    rss.push_back(resident_bytes());
  }
  // Read only now: a parsed trace's memory would count in the next session's.
  std::vector<std::uint64_t> over_limit;
  for (const temp_dir& out : outs) {
    const auto files = files_in(out.path);
    REQUIRE(files.size() == 1);
    const auto trace = read_trace(files[0]);
    over_limit.push_back(static_cast<std::uint64_t>(trace.at("proftrace").at("names_over_limit").as_int64()));
    // Every event and arg past the bound is in the trace, under the one name.
    CHECK(over_limit_events(trace) == over_limit.back());
  }
  MESSAGE("resident MB before and after each session: " << rss[0] / 1e6 << ", " << rss[1] / 1e6 << ", "
                                                         << rss[2] / 1e6 << ", " << rss[3] / 1e6);
  // The first session fills the bound (few names were interned before it);
  // every name of the later ones is new, so every one is over the limit.
  CHECK(over_limit[0] >= names_per_session - proftrace::detail::max_interned_names);
  CHECK(over_limit[0] <= names_per_session - proftrace::detail::max_interned_names + 16);
  CHECK(over_limit[1] == names_per_session);
  CHECK(over_limit[2] == names_per_session);
  // 400,000 more names interned would hold over 100 MB; bounded, the later
  // sessions reuse what the first one left.
  if (!sanitized_allocator) CHECK(rss[3] < rss[1] + (std::size_t{24} << 20));
  CHECK(warnings.contains("recorded as \"[names over limit]\""));
  CHECK(warnings.contains(std::to_string(names_per_session) + " C API events and args"));
}
