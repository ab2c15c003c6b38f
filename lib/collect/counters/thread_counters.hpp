// Internal: the session's counters and each thread's open copies of them.
//
//   std::string why;
//   int fd = open_counter(kind, why);           // on the calling thread; -1 and why on failure
//   set_session_counters({kinds, n});           // start(): threads reopen on their next scope
//   set_session_counters({});                   // stop()
//
// A thread opens the session's counters for itself (pid 0: this thread,
// any CPU) on its first counted scope, and again when a later session
// counts others; they close when it exits.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "counter_kinds.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// Opens kind `kind` for the calling thread: its fd, or -1 with the reason in `why`.
int open_counter(std::size_t kind, std::string& why) noexcept;
// The kinds counted from now on (at most max_session_counters; empty: none).
void set_session_counters(std::span<const std::uint8_t> kinds) noexcept;

}  // namespace proftrace::detail
