// proftrace/memory_stats.hpp — peak memory per device, per trace, per session
// and per step (torch.cuda.max_memory_allocated / max_memory_reserved for
// what the program reported).
//
//   proftrace::profile p({.schedule = ..., .profile_memory = true});
//   ... PROF_ALLOC / PROF_FREE / PROF_MEMORY_RESERVED, or the operator new hook ...
//   for (const auto& d : p.memory_stats())
//     std::cout << d.device << ": peak " << d.session.max_allocated << " bytes, "
//               << d.steps.size() << " steps\n";
//
// Totals count what was recorded while a trace was recording: memory
// allocated before it began is not known, and its free is counted under
// `unknown_frees`. Reserved is what a pool last reported with
// PROF_MEMORY_RESERVED, and never less than what is allocated.
#pragma once

#include <cstdint>
#include <vector>

namespace proftrace {

struct memory_peaks {
  std::int64_t max_allocated = 0;  // bytes
  std::int64_t max_reserved = 0;

  void merge(const memory_peaks& o) noexcept {
    if (o.max_allocated > max_allocated) max_allocated = o.max_allocated;
    if (o.max_reserved > max_reserved) max_reserved = o.max_reserved;
  }
  friend bool operator==(const memory_peaks&, const memory_peaks&) = default;
};

struct step_memory_peaks {
  std::int64_t step = -1;  // -1: before the first step of the schedule
  memory_peaks peaks;
  friend bool operator==(const step_memory_peaks&, const step_memory_peaks&) = default;
};

struct device_memory_stats {
  int device = -1;  // -1: host memory, else the device id given to PROF_ALLOC
  std::int64_t current_allocated = 0;  // at the end of the last trace
  std::int64_t current_reserved = 0;
  memory_peaks trace;    // over the last finished trace
  memory_peaks session;  // over every trace of the session so far (every start() of this profile)
  std::vector<step_memory_peaks> steps;  // every step recorded in the session, in step order
};

}  // namespace proftrace
