#include "proftrace/schedule.hpp"

#include <stdexcept>
#include <string>

#include "helpers/warn.hpp"

namespace proftrace {
namespace {
void warn_in_schedule(std::string_view m) { PROFTRACE_ABI_NAMESPACE::detail::warn(m); }
}  // namespace

schedule_fn schedule(schedule_args a) {
  if (!(a.wait >= 0 && a.warmup >= 0 && a.active > 0 && a.repeat >= 0 && a.skip_first >= 0))
    throw std::invalid_argument("Invalid profiler schedule arguments");
  std::int64_t cycle = 0;
  if (__builtin_add_overflow(a.wait, a.warmup, &cycle) || __builtin_add_overflow(cycle, a.active, &cycle))
    throw std::invalid_argument("Invalid profiler schedule arguments: the cycle wait + warmup + active (" +
                                std::to_string(a.wait) + " + " + std::to_string(a.warmup) + " + " +
                                std::to_string(a.active) + ") overflows a 64-bit step count");
  if (a.warmup == 0) warn_in_schedule("Profiler won't be using warmup, this can skew profiler results");
  return [a, cycle](std::int64_t step) {
    if (step < 0) throw std::invalid_argument("profiler step must be >= 0");
    if (step < a.skip_first) return profiler_action::none;
    // Unsigned: a step plus a wait near INT64_MAX (skip_first_wait) still fits.
    auto at = static_cast<std::uint64_t>(step - a.skip_first);
    // torch: shift by `wait` so the first cycle skips its wait phase.
    if (a.skip_first_wait) at += static_cast<std::uint64_t>(a.wait);
    const auto length = static_cast<std::uint64_t>(cycle);
    if (a.repeat > 0 && at / length >= static_cast<std::uint64_t>(a.repeat)) return profiler_action::none;
    const std::uint64_t mod = at % length;
    if (mod < static_cast<std::uint64_t>(a.wait)) return profiler_action::none;
    if (mod < static_cast<std::uint64_t>(a.wait + a.warmup)) return profiler_action::warmup;
    return mod < length - 1 ? profiler_action::record : profiler_action::record_and_save;
  };
}

}  // namespace proftrace
