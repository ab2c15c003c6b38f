// proftrace/schedule.hpp — torch.profiler's step schedule, exactly.
//
//   auto s = proftrace::schedule({.wait = 1, .warmup = 1, .active = 2, .repeat = 1});
//   auto t = proftrace::schedule({.skip_first = 10, .wait = 5, .warmup = 5, .active = 10});
//   auto u = proftrace::schedule({.skip_first = 10, .skip_first_wait = true, .wait = 5, .warmup = 5, .active = 10});
//   s(0) == proftrace::profiler_action::none;            // wait
//   s(1) == proftrace::profiler_action::warmup;
//   s(2) == proftrace::profiler_action::record;
//   s(3) == proftrace::profiler_action::record_and_save;  // on_trace_ready runs
//   s(4) == proftrace::profiler_action::none;            // repeat exhausted
//
// After skip_first steps of none, each cycle of wait + warmup + active steps
// is none for `wait`, warmup for `warmup`, record for active - 1 steps and
// record_and_save for the last; with repeat > 0 the schedule is none after
// `repeat` cycles. With skip_first_wait, the first cycle after skip_first
// has no wait phase (torch's skip_first_wait: the steps count as if `wait`
// more had passed, so `repeat` still counts that first, shorter cycle).
// Invalid arguments throw std::invalid_argument; warmup == 0 warns, as torch
// does.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "config.hpp"

namespace proftrace {

enum class profiler_action : std::uint8_t { none = 0, warmup = 1, record = 2, record_and_save = 3 };

inline std::string_view to_string(profiler_action a) noexcept {
  switch (a) {
    case profiler_action::none: return "NONE";
    case profiler_action::warmup: return "WARMUP";
    case profiler_action::record: return "RECORD";
    case profiler_action::record_and_save: return "RECORD_AND_SAVE";
  }
  return "?";
}

using schedule_fn = std::function<profiler_action(std::int64_t step)>;

// Declared in the order the schedule runs, which is the order designated
// initializers must follow:
// {.skip_first, .skip_first_wait, .wait, .warmup, .active, .repeat}
// (any of them may be left out).
struct schedule_args {
  std::int64_t skip_first = 0;  // steps of none before the first cycle
  bool skip_first_wait = false; // the first cycle after skip_first starts with its warmup
  std::int64_t wait = 0;
  std::int64_t warmup = 0;
  std::int64_t active = 0;
  std::int64_t repeat = 0;      // cycles; 0: repeat until the session stops
};

#if PROFTRACE_ENABLED
schedule_fn schedule(schedule_args args);
#else
inline namespace compiled_out {
// Compiled out: nothing is ever recorded, whatever the arguments.
inline schedule_fn schedule(schedule_args) {
  return [](std::int64_t) { return profiler_action::none; };
}
}  // namespace compiled_out
#endif

// torch's default when no schedule is given: record every step.
inline profiler_action default_schedule(std::int64_t) noexcept { return profiler_action::record; }

// What moving from one action to the next does (torch's action_map). A
// missing `next` is the session's exit.
enum class transition_op : std::uint8_t {
  warn_warmup_then_none,    // "Incorrect schedule: WARMUP followed by NONE"
  warn_record_then_none,    // "Incorrect schedule: RECORD followed by NONE"
  warn_record_then_warmup,  // "Incorrect schedule: RECORD followed by WARMUP"
  prepare_trace,
  start_trace,
  stop_trace,
  trace_ready,              // on_trace_ready
};

inline std::vector<transition_op> transition(profiler_action previous, std::optional<profiler_action> next) {
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
