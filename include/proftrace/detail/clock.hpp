// proftrace/detail/clock.hpp — the hot path's time stamp. Not API.
//
// Raw rdtsc (no fence) where the TSC is invariant; CLOCK_MONOTONIC_RAW
// nanoseconds otherwise. The flusher converts ticks to Unix nanoseconds with
// the calibration in lib/recording/clock.cpp, so the hot path never multiplies.
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>

#include "../config.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define PROFTRACE_DETAIL_HAS_TSC 1
#else
#define PROFTRACE_DETAIL_HAS_TSC 0
#endif

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

// 1 when the invariant TSC is the time source; set once by
// choose_clock_source() before any ring exists.
inline constinit std::atomic<std::uint8_t> clock_uses_tsc{0};

// Decides the time source (once; cheap: a cpuid) and returns whether it is the TSC.
bool choose_clock_source() noexcept;

inline std::uint64_t fallback_clock_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

PROFTRACE_ALWAYS_INLINE std::uint64_t now_ticks() noexcept {
#if PROFTRACE_DETAIL_HAS_TSC
  if (PROFTRACE_LIKELY(clock_uses_tsc.load(std::memory_order_relaxed))) return __rdtsc();
#endif
  return fallback_clock_ns();
}

// Maps ticks to Unix nanoseconds: unix_ns = anchor_unix_ns + (ticks - anchor_ticks) * ns_per_tick.
struct clock_calibration {
  std::uint64_t anchor_ticks = 0;
  std::int64_t anchor_unix_ns = 0;
  double ns_per_tick = 1.0;

  std::int64_t to_unix_ns(std::uint64_t ticks) const noexcept {
    const auto delta = static_cast<std::int64_t>(ticks - anchor_ticks);
    return anchor_unix_ns + static_cast<std::int64_t>(static_cast<double>(delta) * ns_per_tick);
  }
  // The inverse, for timestamps taken by another clock on the same Unix base (CUPTI's).
  std::uint64_t from_unix_ns(std::int64_t ns) const noexcept {
    const auto delta = static_cast<std::int64_t>(static_cast<double>(ns - anchor_unix_ns) / ns_per_tick);
    return anchor_ticks + static_cast<std::uint64_t>(delta);
  }
};

// Returns a calibration (choosing the time source first if need be) whose
// rate is measured over the longest baseline available so far.
clock_calibration calibrate_clock();

// The trace clock, what the flusher writes, read now in Unix nanoseconds:
// one calibration for the whole process, so that the readings of one clock
// exchange (lib/collect/mpi/clock_offset.cpp) share a slope.
std::int64_t trace_clock_ns();

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
