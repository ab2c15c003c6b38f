#include "proftrace/schedule.hpp"

#include <stdexcept>

#include "warn.hpp"

namespace proftrace {
namespace {
void warn_in_schedule(std::string_view m) { PROFTRACE_ABI_NAMESPACE::detail::warn(m); }
}  // namespace

schedule_fn schedule(schedule_args a) {
  if (!(a.wait >= 0 && a.warmup >= 0 && a.active > 0 && a.repeat >= 0 && a.skip_first >= 0))
    throw std::invalid_argument("Invalid profiler schedule arguments");
  if (a.warmup == 0) warn_in_schedule("Profiler won't be using warmup, this can skew profiler results");
  return [a](std::int64_t step) {
    if (step < 0) throw std::invalid_argument("profiler step must be >= 0");
    if (step < a.skip_first) return profiler_action::none;
    step -= a.skip_first;
    // torch: shift by `wait` so the first cycle skips its wait phase.
    if (a.skip_first_wait) step += a.wait;
    const std::int64_t cycle = a.wait + a.warmup + a.active;
    if (a.repeat > 0 && step / cycle >= a.repeat) return profiler_action::none;
    const std::int64_t mod = step % cycle;
    if (mod < a.wait) return profiler_action::none;
    if (mod < a.wait + a.warmup) return profiler_action::warmup;
    return mod < cycle - 1 ? profiler_action::record : profiler_action::record_and_save;
  };
}

}  // namespace proftrace
