// Tests that need a ring to overflow: with a flusher that keeps up (a fast
// machine, a 64-event ring and one producer) nothing would, so the flusher is
// kept from reaching the rings while the producer writes.
#pragma once

#include <atomic>
#include <thread>
#include <vector>

#include "recording/registry.hpp"

namespace test_support {

// Runs `first` on each of `threads` new threads (their rings attach), then
// `rest` on each while the flusher cannot take its snapshot of the rings (the
// registry's fork lock is the one that snapshot takes). A drain already under
// way takes at most a few ring capacities before it needs the next snapshot.
// Not for `block`: its producers would wait for a flusher that cannot come.
template <class First, class Rest>
void with_flusher_stalled(First first, Rest rest, int threads = 1) {
  std::atomic<int> attached{0};
  std::atomic<bool> stalled{false};
  {
    std::vector<std::jthread> producers;
    for (int t = 0; t < threads; ++t)
      producers.emplace_back([&] {
        first();
        attached.fetch_add(1, std::memory_order_acq_rel);
        while (!stalled.load(std::memory_order_acquire)) std::this_thread::yield();
        rest();
      });
    while (attached.load(std::memory_order_acquire) != threads) std::this_thread::yield();
    proftrace::detail::registry::instance().lock_for_fork();
    stalled.store(true, std::memory_order_release);
  }
  proftrace::detail::registry::instance().unlock_after_fork();
}

}  // namespace test_support
