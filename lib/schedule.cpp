#include "proftrace/schedule.hpp"

#include <stdexcept>

#include "proftrace/collectors.hpp"
#include "warn.hpp"

namespace proftrace {
namespace {
void warn_in_schedule(std::string_view m) { PROFTRACE_ABI_NAMESPACE::detail::warn(m); }
}  // namespace

std::string_view to_string(profiler_action a) noexcept {
  switch (a) {
    case profiler_action::none: return "NONE";
    case profiler_action::warmup: return "WARMUP";
    case profiler_action::record: return "RECORD";
    case profiler_action::record_and_save: return "RECORD_AND_SAVE";
  }
  return "?";
}

std::string_view to_string(activity a) noexcept {
  switch (a) {
    case activity::cpu: return "CPU";
    case activity::cuda: return "CUDA";
    case activity::memory: return "MEMORY";
    case activity::flops: return "FLOPS";
    case activity::nvtx: return "NVTX";
    case activity::counters: return "COUNTERS";
    case activity::openmp: return "OPENMP";
  }
  return "?";
}

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

profiler_action default_schedule(std::int64_t) noexcept { return profiler_action::record; }

std::vector<transition_op> transition(profiler_action previous, std::optional<profiler_action> next) {
  using A = profiler_action;
  using T = transition_op;
  if (!next) {
    switch (previous) {
      case A::warmup: return {T::start_trace, T::stop_trace};
      case A::record:
      case A::record_and_save: return {T::stop_trace, T::trace_ready};
      case A::none: return {};
    }
  }
  switch (previous) {
    case A::none:
      switch (*next) {
        case A::none: return {};
        case A::warmup: return {T::prepare_trace};
        case A::record:
        case A::record_and_save: return {T::prepare_trace, T::start_trace};
      }
      break;
    case A::warmup:
      switch (*next) {
        case A::none: return {T::warn_warmup_then_none, T::start_trace, T::stop_trace};
        case A::warmup: return {};
        case A::record:
        case A::record_and_save: return {T::start_trace};
      }
      break;
    case A::record:
      switch (*next) {
        case A::none: return {T::warn_record_then_none, T::stop_trace};
        case A::warmup: return {T::warn_record_then_warmup, T::stop_trace};
        case A::record:
        case A::record_and_save: return {};
      }
      break;
    case A::record_and_save:
      switch (*next) {
        case A::none: return {T::stop_trace, T::trace_ready};
        case A::warmup: return {T::stop_trace, T::trace_ready, T::prepare_trace};
        case A::record:
        case A::record_and_save: return {T::stop_trace, T::trace_ready, T::prepare_trace, T::start_trace};
      }
      break;
  }
  return {};
}

}  // namespace proftrace
