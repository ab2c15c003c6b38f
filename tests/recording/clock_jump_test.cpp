// A trace recorded across a wall-clock jump: proftrace reads the monotonic
// clock (the TSC or CLOCK_MONOTONIC_RAW) and maps it to Unix time once, when
// the trace opens, so a jump of the wall clock (NTP stepping it, an
// administrator setting it) neither reorders nor stretches events.
//
// The jump is made for this process only: this executable defines
// clock_gettime, which takes precedence over the C library's for every
// caller in the process, and shifts CLOCK_REALTIME by an offset the test
// sets.
#include <doctest/doctest.h>

#include <dlfcn.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <proftrace/proftrace.hpp>

#include "test_support.hpp"

namespace {
std::atomic<long long> realtime_offset_ns{0};
}

extern "C" int clock_gettime(clockid_t id, struct timespec* ts) noexcept {
  using clock_gettime_fn = int (*)(clockid_t, struct timespec*);
  static const auto real = reinterpret_cast<clock_gettime_fn>(::dlsym(RTLD_NEXT, "clock_gettime"));
  const int rc = real(id, ts);
  const long long offset = realtime_offset_ns.load(std::memory_order_relaxed);
  if (rc == 0 && id == CLOCK_REALTIME && offset != 0) {
    const long long ns = static_cast<long long>(ts->tv_sec) * 1000000000LL + ts->tv_nsec + offset;
    ts->tv_sec = static_cast<time_t>(ns / 1000000000LL);
    ts->tv_nsec = static_cast<long>(ns % 1000000000LL);
  }
  return rc;
}

namespace {

std::int64_t unix_us_now() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void sleep_in_scope_a() {
  PROF_SCOPE("a");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
}
void sleep_in_scope_b() {
  PROF_SCOPE("b");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
}
void sleep_in_scope_c() {
  PROF_SCOPE("c");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

}  // namespace

TEST_CASE("the wall clock jumps an hour forward, then two back, inside one trace: times stay monotonic and exact") {
  test_support::temp_dir out("clock");
  constexpr long long hour_ns = 3600LL * 1000000000LL;
  const std::int64_t real_start_us = unix_us_now();
  realtime_offset_ns = hour_ns;  // the control: the jump is visible to the program
  CHECK(unix_us_now() - real_start_us > 3599LL * 1000000);
  realtime_offset_ns = 0;

  proftrace::profile p;
  p.start();
  sleep_in_scope_a();
  realtime_offset_ns = hour_ns;
  sleep_in_scope_b();
  realtime_offset_ns = -hour_ns;
  sleep_in_scope_c();
  p.stop();
  realtime_offset_ns = 0;
  p.export_chrome_trace(out.path / "t.json");

  const auto trace = test_support::read_trace(out.path / "t.json");
  const auto ts = [&](const char* name) {
    const auto e = test_support::events_named(trace, name);
    REQUIRE(e.size() == 1);
    return std::pair{e[0].at("ts").to_number<double>(), e[0].at("dur").to_number<double>()};
  };
  const auto [a, a_dur] = ts("a");
  const auto [b, b_dur] = ts("b");
  const auto [c, c_dur] = ts("c");
  CHECK(a < b);
  CHECK(b < c);
  CHECK(b - a < 1e6);  // under a second apart, not an hour
  CHECK(c - b < 1e6);
  for (const double dur : {a_dur, b_dur, c_dur}) {
    CHECK(dur >= 20000);  // microseconds
    CHECK(dur < 1e6);
  }
  // Mapped to the wall clock as it was when the trace opened.
  const double base_us = static_cast<double>(trace.at("baseTimeNanoseconds").to_number<std::int64_t>()) / 1e3;
  CHECK(std::abs(base_us + a - static_cast<double>(real_start_us)) < 60e6);
}
