// Records: what pairing counts in the trace it writes to, which the finished
// trace reports (records/finished_trace.hpp).
#pragma once

#include <cstdint>

#include "proftrace/config.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// What pairing counts in the window it writes to, beside loss_counts.
struct pairing_counts {
  // Negative dimensions or counts, impossible shapes, overflow: counted, not
  // added (a zero estimate is valid).
  std::uint64_t invalid_flop_estimates = 0;
  std::uint64_t unscoped_flop_estimates = 0;  // recorded with no scope open on the thread
  std::uint64_t unknown_frees = 0;            // frees of addresses never seen allocated (no event was lost)
  std::uint64_t invalid_memory_devices = 0;   // memory events naming a device outside -1..253: not written
  std::uint64_t unfreed_reallocations = 0;    // allocations at an address still live (no event was lost)
  std::uint64_t truncated_scopes = 0;         // scopes whose end was lost: written up to the loss, marked
  std::uint64_t moved_scopes = 0;             // scopes that ended on another thread: written as async ranges
  std::uint64_t closed_at_thread_exit = 0;  // open when their thread exited, ended by no other: written ending there
  // Ends of scopes and async ranges that an earlier trace window wrote
  // closed at its end (a session's stop): not losses.
  std::uint64_t ended_after_their_session = 0;
  std::uint64_t instant_events = 0;  // written, as the table's rows count scopes
  std::uint64_t counter_events = 0;
  std::uint64_t truncated_names = 0;  // runtime names and string args cut at the maximum length
  std::uint64_t dropped_args = 0;     // PROF_ARG with no scope open, or past max_scope_args on one scope
};

}  // namespace proftrace::detail
