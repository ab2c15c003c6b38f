// bench/peers.hpp — two event buffers written only for comparison, each
// storing what a recorded scope stores (a timestamp and a site pointer per
// begin and per end, 32-byte events):
//
//   spsc_ring    the floor a ring design can reach: a fixed power-of-two
//                ring, one producer, head and tail on their own cache
//                lines, a release store per event, no overflow policy, no
//                loss counting. proftrace's ring does all of this and more.
//   append_log   a design that touches new memory on the hot path (Tracy's
//                queues and many tracing libraries append into blocks taken
//                as they fill): each event lands in memory never written
//                before, so the producer pays the first-touch page faults.
#pragma once

#include <sys/mman.h>
#include <x86intrin.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace proftrace_bench {

struct peer_event {
  std::uint64_t ticks;
  std::uint64_t where;
  std::uint64_t payload;
  std::uint32_t kind;
  std::uint32_t extra;
};
static_assert(sizeof(peer_event) == 32);

class spsc_ring {
 public:
  explicit spsc_ring(std::size_t capacity) : slots_(capacity), mask_(capacity - 1) {
    std::memset(static_cast<void*>(slots_.data()), 0, capacity * sizeof(peer_event));  // touched up front
  }
  __attribute__((always_inline)) bool push(std::uint64_t ticks, std::uint64_t where, std::uint32_t kind) noexcept {
    const std::uint64_t h = head_.load(std::memory_order_relaxed);
    if (h - tail_cache_ > mask_) {
      tail_cache_ = tail_.load(std::memory_order_acquire);
      if (h - tail_cache_ > mask_) return false;
    }
    slots_[h & mask_] = {ticks, where, 0, kind, 0};
    head_.store(h + 1, std::memory_order_release);
    return true;
  }
  // The consumer: frees everything written so far (reads each event once).
  std::uint64_t drain() noexcept {
    const std::uint64_t h = head_.load(std::memory_order_acquire);
    std::uint64_t t = tail_.load(std::memory_order_relaxed), sum = 0;
    for (; t != h; ++t) sum += slots_[t & mask_].ticks;
    tail_.store(t, std::memory_order_release);
    return sum;
  }

 private:
  std::vector<peer_event> slots_;
  std::uint64_t mask_;
  alignas(64) std::atomic<std::uint64_t> head_{0};
  std::uint64_t tail_cache_ = 0;
  alignas(64) std::atomic<std::uint64_t> tail_{0};
};

class append_log {
 public:
  // Fresh, never-touched memory for `events` events (an anonymous mapping:
  // the kernel hands out each page on its first write).
  void reset(std::size_t events) {
    release();
    bytes_ = events * sizeof(peer_event);
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base_ = p == MAP_FAILED ? nullptr : static_cast<peer_event*>(p);
    next_ = base_;
  }
  __attribute__((always_inline)) void push(std::uint64_t ticks, std::uint64_t where, std::uint32_t kind) noexcept {
    *next_++ = {ticks, where, 0, kind, 0};
  }
  bool ok() const noexcept { return base_ != nullptr; }
  ~append_log() { release(); }

 private:
  void release() {
    if (base_) ::munmap(base_, bytes_);
    base_ = next_ = nullptr;
  }
  peer_event* base_ = nullptr;
  peer_event* next_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace proftrace_bench
