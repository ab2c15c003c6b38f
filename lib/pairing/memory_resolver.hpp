// Internal: allocations and frees resolved in time order across threads.
//
// An address freed on another thread than the one that allocated it must be
// matched whichever ring is drained first, and the running totals must be
// those of the moment each event happened. The flusher notes a drain's
// memory and step events here (`note`), `resolve_noted` applies them in time
// order; a drain with no memory window resolves each event in its thread's
// order instead (`resolve`).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "records/memory.hpp"
#include "records/thread.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

constexpr bool is_memory(event_kind k) noexcept {
  return k == event_kind::alloc || k == event_kind::free || k == event_kind::reserved;
}

class memory_resolver {
 public:
  // What the window opened at a switch starts from.
  struct next_window_start {
    bool after_gap = false;  // no trace before it: memory starts from nothing
    std::int64_t first_step = -1;
  };

  // A memory event to resolve into `out`, or (out null) a step begin, whose
  // number the events after it carry.
  void note(std::uint64_t ticks, const event* e, resolved_memory* out) { timeline_.push_back({ticks, e, out}); }
  // Resolves what was noted in time order. With a split, the state at
  // `split_ticks` is what the next window starts from (preexisting()).
  void resolve_noted(bool split, std::uint64_t split_ticks);
  void resolve(const event& e, resolved_memory& m);

  void set_next_start(std::optional<next_window_start> s) { next_start_ = s; }
  // The allocations live (and reserved sizes) when the last split was crossed.
  std::vector<memory_record> take_preexisting() { return std::exchange(preexisting_, {}); }

  // Some event was lost since the live allocations were last reset: a free
  // of an unknown address may be one whose allocation was lost.
  bool lost = false;

  void forget() {
    timeline_.clear();
    next_start_.reset();
    preexisting_.clear();
  }

 private:
  struct live_allocation {
    std::int64_t bytes = 0;
    memory_category category = memory_category::unknown;
  };
  struct device_totals {
    std::int64_t allocated = 0;
    std::int64_t reported_reserved = 0;  // PROF_MEMORY_RESERVED
    std::int64_t reserved() const noexcept { return std::max(allocated, reported_reserved); }
  };
  struct address_hash {
    std::size_t operator()(const std::pair<int, std::uint64_t>& k) const noexcept {
      return std::hash<std::uint64_t>{}(k.second ^ (static_cast<std::uint64_t>(k.first) << 48));
    }
  };
  struct timed_event {
    std::uint64_t ticks;
    const event* e;
    resolved_memory* out;  // null for a step
  };

  void cross_split();

  std::unordered_map<std::pair<int, std::uint64_t>, live_allocation, address_hash> live_;
  std::map<int, device_totals> totals_;  // per device, -1: host
  std::int64_t current_step_ = -1;
  std::vector<timed_event> timeline_;
  std::optional<next_window_start> next_start_;
  std::vector<memory_record> preexisting_;
};

}  // namespace proftrace::detail
