#include "proftrace/detail/clock.hpp"

#include <chrono>
#include <mutex>
#include <thread>

#if PROFTRACE_DETAIL_HAS_TSC
#include <cpuid.h>
#endif

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {
namespace {

bool tsc_is_invariant() noexcept {
#if PROFTRACE_DETAIL_HAS_TSC
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0x80000000u, &eax, &ebx, &ecx, &edx) || eax < 0x80000007u) return false;
  __get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx);
  return (edx & (1u << 8)) != 0;  // invariant TSC
#else
  return false;
#endif
}

struct sample {
  std::uint64_t ticks;
  std::int64_t steady_ns;
  std::int64_t unix_ns;
};

// A (ticks, steady, unix) triple taken as close together as we can: the
// tightest of a few tries.
sample take_sample() noexcept {
  sample best{};
  std::int64_t best_gap = INT64_MAX;
  for (int i = 0; i < 5; ++i) {
    const auto s0 = std::chrono::steady_clock::now();
    const std::uint64_t t = now_ticks();
    const auto u = std::chrono::system_clock::now();
    const auto s1 = std::chrono::steady_clock::now();
    const std::int64_t gap = (s1 - s0).count();
    if (gap < best_gap) {
      best_gap = gap;
      best.ticks = t;
      best.steady_ns = std::chrono::duration_cast<std::chrono::nanoseconds>((s0 + (s1 - s0) / 2).time_since_epoch()).count();
      best.unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(u.time_since_epoch()).count();
    }
  }
  return best;
}

}  // namespace

bool choose_clock_source() noexcept {
  static const bool tsc = [] {
    const bool invariant = tsc_is_invariant();
    clock_uses_tsc.store(invariant ? 1 : 0, std::memory_order_relaxed);
    return invariant;
  }();
  return tsc;
}

namespace {

std::mutex calibration_mutex;
bool initialised = false;
sample first;

}  // namespace

clock_calibration calibrate_clock() {
  std::lock_guard lock(calibration_mutex);
  if (!initialised) {
    const bool tsc = choose_clock_source();
    first = take_sample();
    if (tsc) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    initialised = true;
  }
  const sample now = take_sample();
  clock_calibration c;
  c.anchor_ticks = now.ticks;
  c.anchor_unix_ns = now.unix_ns;
  if (clock_uses_tsc.load(std::memory_order_relaxed) && now.ticks > first.ticks)
    c.ns_per_tick = static_cast<double>(now.steady_ns - first.steady_ns) / static_cast<double>(now.ticks - first.ticks);
  else
    c.ns_per_tick = 1.0;  // the fallback clock counts nanoseconds
  return c;
}

std::int64_t trace_clock_ns() {
  static const clock_calibration calibration = calibrate_clock();
  return calibration.to_unix_ns(now_ticks());
}

}  // namespace proftrace::detail
