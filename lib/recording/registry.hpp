// The process-wide list of thread rings, shared by the hot path's first
// event on each thread and by the flusher. Internal to the library.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "proftrace/detail/ring.hpp"
#include "proftrace/detail/site.hpp"
#include "proftrace/overflow.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

struct thread_record {
  std::unique_ptr<ring> events;
  // The rings this thread's producer moved from (ring::offer_successor),
  // drained: kept until the thread is reaped, as each forwards a push made
  // through a reference taken before its move.
  std::vector<std::unique_ptr<ring>> moved_from;
  std::int64_t tid = 0;
  std::string name;                  // guarded by registry::mutex
  std::atomic<bool> exited{false};   // set by the thread on exit; the flusher then drains and frees
  std::uint64_t exit_ticks = 0;      // when it exited: written before `exited`, read after it
};

class registry {
 public:
  static registry& instance();

  thread_record* attach(std::int64_t tid, std::uint32_t ring_events);
  // The live records; the caller holds the flusher lock so the list cannot
  // shrink under it.
  std::vector<thread_record*> snapshot();
  // Frees an exited, drained record; its ring goes to a pool for reuse.
  void reap(thread_record* r);
  // The flusher: once `r`'s producer moved to the larger ring offered and
  // the ring it left is drained, that larger ring becomes r->events (true).
  static bool follow_move(thread_record* r) noexcept;
  // The largest ring a thread's ring grows to (ring_events() x
  // PROFTRACE_RING_GROWTH; ring_events() itself when growth is off).
  std::uint32_t max_ring_events() const noexcept;
  void set_name(thread_record* r, std::string name);
  void name_if_unnamed(thread_record* r, const char* name);
  std::string name_of(thread_record* r);

  // fork(): the lock is held across it; in the child only the forking
  // thread exists, so the other records are freed and its ring emptied.
  void lock_for_fork() noexcept { mutex_.lock(); }
  void unlock_after_fork() noexcept { mutex_.unlock(); }
  void keep_only_this_thread_after_fork() noexcept;

  std::uint32_t ring_events() const noexcept { return ring_events_.load(std::memory_order_relaxed); }
  void set_ring_events(std::uint32_t n) noexcept { ring_events_.store(n, std::memory_order_relaxed); }

  // Events that found no ring (thread exiting, allocation failure).
  std::atomic<std::uint64_t> unattached_drops{0};

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<thread_record>> records_;
  std::vector<std::unique_ptr<ring>> pool_;
  std::atomic<std::uint32_t> ring_events_{PROFTRACE_RING_EVENTS};
};

// The site of the ProfilerStep#N annotations that profile::start()/step()
// open (torch's record_steps); PROF_STEP uses step_site.
extern const site api_step_site;

overflow_policy current_overflow_policy() noexcept;
void set_overflow_policy(overflow_policy p) noexcept;
void wake_flusher() noexcept;
// A name for the calling thread where nothing names it (PROF_THREAD_NAME
// wins, before or after): a runtime's worker (an OpenMP thread). `name`
// lives as long as the thread. Attaches no ring: taken when one attaches.
void set_default_thread_name(const char* name) noexcept;
bool flusher_running() noexcept;
// The flusher's thread marks itself: a full ring there never waits under
// `block` (only the flusher could make room), it drops and counts instead.
void mark_flusher_thread() noexcept;
bool on_flusher_thread() noexcept;

}  // namespace proftrace::detail
