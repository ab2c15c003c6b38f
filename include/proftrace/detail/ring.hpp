// proftrace/detail/ring.hpp — one thread's single-producer single-consumer
// event ring. Not API.
//
// The producer (the instrumented thread) writes whole records and publishes
// them with a store-release of `head_`; the consumer (whoever holds the
// flusher's lock) copies them out, validates the copy, and frees the slots
// with a store-release of `tail_`. Head and tail live on separate cache lines.
// Slots are written and read word by word with relaxed atomics: on x86 these
// are plain moves, and they keep the drop_oldest overwrite race-free. Under
// drop_oldest the producer raises `floor_` (release fence) before it
// overwrites unread slots, and the consumer discards, after an acquire fence,
// any copied slot below the floor — the seqlock argument, per ring.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "../config.hpp"
#include "../overflow.hpp"
#include "clock.hpp"
#include "event.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

class ring {
 public:
  // Allocates capacity (a power of two >= 64) events and touches every page,
  // so the hot path never takes a first-touch fault.
  explicit ring(std::uint32_t capacity);
  ~ring();
  ring(const ring&) = delete;
  ring& operator=(const ring&) = delete;

  std::uint32_t capacity() const noexcept { return static_cast<std::uint32_t>(mask_ + 1); }

  // Back to empty with zeroed counters, for reuse by another thread. Only
  // while no producer is attached and nobody consumes.
  void reset() noexcept;

  // ---- producer side (the owning thread only) ----

  // The time stamp: the clock choice sits in this ring's read-only line,
  // which the push touches anyway.
  PROFTRACE_ALWAYS_INLINE std::uint64_t now() const noexcept {
#if PROFTRACE_DETAIL_HAS_TSC
    if (PROFTRACE_LIKELY(tsc_)) return __rdtsc();
#endif
    return fallback_clock_ns();
  }

  PROFTRACE_ALWAYS_INLINE void push(std::uint64_t ticks, std::uint64_t where, std::uint64_t payload,
                                    event_kind kind) noexcept {
    const std::uint64_t h = head_.load(std::memory_order_relaxed);
    if (PROFTRACE_UNLIKELY(h >= limit_) && !make_room(h, 1)) return;
    store_slot(h, ticks, where, payload, static_cast<std::uint64_t>(kind));
    head_.store(h + 1, std::memory_order_release);
  }

  // A record of 1 + n_ext slots: the head event, then `ext_words` (n_ext * 4
  // words) in extension slots. Published all at once.
  void push_record(std::uint64_t ticks, std::uint64_t where, std::uint64_t payload, event_kind kind,
                   const std::uint64_t* ext_words, std::uint32_t n_ext) noexcept;

  // Events this producer discarded (drop policy, or block without a flusher).
  std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

  // ---- consumer side (the flusher lock holder only) ----

  // Copies the unread records (at most `max` slots, whole records only) into
  // `out`, frees their slots and returns how many valid slots start at
  // `out + *first`. Slots overwritten under drop_oldest are counted in
  // overwritten().
  std::size_t consume(event* out, std::size_t max, std::size_t* first) noexcept;
  std::uint64_t overwritten() const noexcept { return overwritten_.load(std::memory_order_relaxed); }
  bool empty() const noexcept {
    return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_relaxed);
  }

 private:
  PROFTRACE_ALWAYS_INLINE void store_slot(std::uint64_t index, std::uint64_t w0, std::uint64_t w1,
                                          std::uint64_t w2, std::uint64_t w3) noexcept {
    std::uint64_t* s = words_ + (index & mask_) * words_per_event;
    std::atomic_ref<std::uint64_t>(s[0]).store(w0, std::memory_order_relaxed);
    std::atomic_ref<std::uint64_t>(s[1]).store(w1, std::memory_order_relaxed);
    std::atomic_ref<std::uint64_t>(s[2]).store(w2, std::memory_order_relaxed);
    std::atomic_ref<std::uint64_t>(s[3]).store(w3, std::memory_order_relaxed);
  }

  // Slow path, taken past the watermark: refreshes the cached tail, wakes the
  // flusher, and when there is no room for `n` slots applies the overflow
  // policy. False: the record is dropped (and counted).
  PROFTRACE_NOINLINE bool make_room(std::uint64_t h, std::uint32_t n) noexcept;

  // Producer cache line.
  alignas(64) std::atomic<std::uint64_t> head_{0};
  std::uint64_t limit_ = 0;  // tail_cache_ + watermark_: past it, make_room() looks again
  std::uint64_t tail_cache_ = 0;
  std::uint64_t floor_local_ = 0;
  std::uint64_t next_wake_ = 0;
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<std::uint64_t> floor_{0};

  // Consumer cache line.
  alignas(64) std::atomic<std::uint64_t> tail_{0};
  std::atomic<std::uint64_t> overwritten_{0};

  // Read-only after construction.
  alignas(64) std::uint64_t* words_ = nullptr;
  std::uint64_t mask_ = 0;
  std::uint64_t watermark_ = 0;
  bool tsc_ = false;
};

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
