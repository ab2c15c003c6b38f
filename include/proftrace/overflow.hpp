// proftrace/overflow.hpp — what a full per-thread ring does with a new event.
//
//   proftrace::profile p({.overflow = proftrace::overflow_policy::block});
//
// The build's default comes from PROFTRACE_OVERFLOW_POLICY (config.hpp); a
// session may override it at run time. Whatever the policy, every lost event
// is counted per thread and reported in the trace metadata and the summary.
#pragma once

#include <cstdint>
#include <string_view>

namespace proftrace {

enum class overflow_policy : std::uint8_t {
  // Never stall the instrumented thread: the new event is discarded and
  // counted. The default.
  drop = 0,
  // Lossless: the instrumented thread waits (spinning, then yielding) until
  // the flusher frees room. Falls back to `drop` when no flusher is running,
  // so a missing flusher can never hang the program.
  block = 1,
  // Keep the newest events: the oldest unread events are overwritten and
  // counted when the flusher finds the gap.
  drop_oldest = 2,
};

constexpr std::string_view to_string(overflow_policy p) noexcept {
  switch (p) {
    case overflow_policy::drop: return "drop";
    case overflow_policy::block: return "block";
    case overflow_policy::drop_oldest: return "drop_oldest";
  }
  return "unknown";
}

}  // namespace proftrace
