// Records: an allocation, free or reserve report as resolved in time
// order across threads, and as a trace shows it.
#pragma once

#include <cstdint>

#include "proftrace/config.hpp"
#include "proftrace/detail/event.hpp"
#include "proftrace/memory_category.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// An allocation, free or reserve report as resolved in time order across
// threads: what it changed, the totals after it, and the step it fell in.
struct resolved_memory {
  std::int64_t bytes = 0;
  std::int64_t total_allocated = 0;
  std::int64_t total_reserved = 0;
  std::int64_t step = -1;
  memory_category category = memory_category::unknown;
  bool known = true;  // false: a free of an address never seen allocated
  // An allocation at an address still live (its free was never reported):
  // the earlier block is taken as freed here, its bytes out of the totals.
  bool replaced_live = false;
  std::int64_t replaced_bytes = 0;
  memory_category replaced_category = memory_category::unknown;
  // What the event adds to the memory of the scope it happens in.
  std::int64_t attributed_bytes() const noexcept { return bytes - replaced_bytes; }
};

// A memory event as a trace shows it: where, when, what it resolved to.
struct memory_event {
  std::int64_t tid = 0;
  std::int64_t ns = 0;
  int device = -1;  // -1: host
  std::uint64_t address = 0;
  event_kind kind = event_kind::alloc;
  const resolved_memory* resolved = nullptr;
};

// A memory event as the memory timeline and memory_stats() take it.
// torch's _memory_profiler.Action values (INCREMENT_VERSION = 3 has no
// counterpart here); `reserve` is proftrace's own and is not exported.
enum class memory_action : std::uint8_t { preexisting = 1, create = 2, destroy = 4, reserve = 5 };

struct memory_record {
  std::int64_t t_ns = 0;  // Unix ns; -1 for an allocation live when the trace began
  std::int64_t bytes = 0;  // negative on destroy; the reported size on reserve
  std::int64_t total_allocated = 0;  // on the device, just after this record
  std::int64_t total_reserved = 0;
  std::int64_t step = -1;
  std::int32_t device = -1;
  memory_category category = memory_category::unknown;
  memory_action action = memory_action::create;
};


// A resolved allocation, free or reserve report at `ns` as a memory_record.
inline memory_record record_of(std::int64_t ns, const resolved_memory& m, int device, event_kind kind) noexcept {
  return {ns, m.bytes, m.total_allocated, m.total_reserved, m.step, device, m.category,
          kind == event_kind::alloc  ? memory_action::create
          : kind == event_kind::free ? memory_action::destroy
                                     : memory_action::reserve};
}
}  // namespace proftrace::detail
