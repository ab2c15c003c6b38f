#include "flusher.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "pairing/memory_resolver.hpp"
#include "pairing/pairing.hpp"
#include "proftrace/detail/clock.hpp"
#include "proftrace/detail/recorder.hpp"
#include "recording/registry.hpp"
#include "trace_window.hpp"
#include "helpers/warn.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {
constexpr std::size_t consume_chunk = 512;
// A periodic drain takes what a producer adds while it runs in batches of
// at least this many slots.
constexpr std::uint64_t min_batch = 1024;
// A drain writes what it formatted once this much accumulated: bounded
// memory, and the text never regrows (and is copied) past it.
constexpr std::size_t commit_bytes = std::size_t{1} << 20;
}  // namespace

struct flusher::impl {
  std::mutex mutex;  // held by whoever consumes the rings
  // Program threads waiting for `mutex`. Under overload the flusher's loop
  // never sleeps, and std::mutex is not fair: without this, step() or stop()
  // could wait for the lock as long as the producers outrun the flusher.
  std::atomic<int> callers_waiting{0};
  std::condition_variable cv;
  std::atomic<bool> wake_requested{false};
  std::atomic<bool> alive{false};
  bool quit = false;
  std::chrono::milliseconds period{100};
  std::thread thread;
  std::unique_ptr<trace_window> current;
  std::unordered_map<thread_record*, thread_state> threads;
  // Exited threads whose open scopes may still end on another thread; the
  // rest end at the thread's exit when the window closes. Keys are stale.
  std::vector<std::unordered_map<thread_record*, thread_state>::node_type> gone_threads;
  std::vector<event> chunk = std::vector<event>(consume_chunk);
  std::uint64_t unattached_seen = 0;
  std::uint64_t windows_made = 0;
  memory_resolver memory;
  pairing<trace_window> pairs{memory};
  bool next_profile_memory = false;          // the window a switch opens records memory
  std::vector<gpu_memory_event> gpu_memory;  // the closing window's CUDA allocations

  // ---- draining (mutex held) ----

  // Queues the CUDA allocations of a closing memory window for the drain at
  // the switch, clamped into the window (CUPTI's clock runs apart from ours
  // by calibration error only).
  void add_gpu_memory(const gpu_batch& gpu, std::uint64_t split_ticks) {
    gpu_memory.clear();
    if (!current || !current->options().profile_memory) return;
    for (const gpu_activity& a : gpu.activities) {
      if (a.kind != gpu_activity_kind::memory) continue;
      const int device = is_host_memory_kind(a.memory_kind) ? -1 : static_cast<int>(a.device);
      const std::uint64_t ticks = std::clamp(current->to_ticks(a.start_ns), current->start_ticks, split_ticks);
      const event_kind kind = a.is_free ? event_kind::free : event_kind::alloc;
      gpu_memory.push_back({&a,
                            event{ticks, a.address, memory_payload(a.is_free ? 0 : static_cast<std::int64_t>(a.bytes), device),
                                  static_cast<std::uint32_t>(kind), 0},
                            {}});
    }
    for (gpu_memory_event& g : gpu_memory) memory.note(g.e.ticks, &g.e, &g.m);
  }

  thread_state& state_of(thread_record* rec) {
    auto [it, fresh] = threads.try_emplace(rec);
    if (fresh) {
      thread_state& ts = it->second;
      ts.tid = rec->tid;
      ts.uid = rec->events->uid();
      ts.next_index = ts.uid << ring_uid_shift;
      ts.owner = rec;
      pairs.attach(ts);
    }
    return it->second;
  }

  // Takes what `ts`'s ring holds into ts.batch, noting its memory and step
  // events for resolve_memory. Bounded, so a producer that never pauses
  // cannot keep the flusher here.
  void take(thread_state& ts, thread_record* rec) {
    ts.batch.clear();
    do {
      ring& r = *rec->events;
      for (std::size_t round = 0; round <= 2 * r.capacity() / chunk.size() + 1; ++round) {
        std::size_t first = 0;
        const std::size_t n = r.consume(chunk.data(), chunk.size(), &first);
        ts.batch.insert(ts.batch.end(), chunk.data() + first, chunk.data() + first + n);
        if (n == 0 && first == 0) break;
      }
    } while (registry::follow_move(rec));  // the ring it moved to holds what came after
    for (std::size_t i = 0; i < ts.batch.size(); i += record_length(ts.batch[i])) {
      const event& e = ts.batch[i];
      const auto kind = static_cast<event_kind>(e.kind);
      if (is_memory(kind)) {
        memory.note(e.ticks, &e, &ts.resolved.emplace_back());
      } else if (kind == event_kind::begin && reinterpret_cast<const site*>(e.where)->cat == category::step) {
        memory.note(e.ticks, &e, nullptr);
      }
    }
  }

  // Consumes every ring. Events after `split_ticks` are parked in `pending`
  // when `split` is set (and so is everything after them on that thread);
  // otherwise everything goes to the current window. Memory windows take
  // every ring first and resolve memory events in time order; the others
  // stream each ring's chunks straight through (no copy, no scan).
  // `yield`: the periodic drain, which stops between chunks when a program
  // thread waits for the lock (fork(), step(), stop()): the rest stays in
  // the rings for the next round, so none of them waits for a whole flush.
  void drain(bool split, std::uint64_t split_ticks, bool yield = false) {
    if ((current && current->options().profile_memory) || next_profile_memory) drain_batched(split, split_ticks);
    else drain_streamed(split, split_ticks, yield);
    const std::uint64_t unattached = registry::instance().unattached_drops.load(std::memory_order_relaxed);
    if (unattached != unattached_seen) memory.lost = true;
    if (current) current->losses.unattached += unattached - unattached_seen;
    unattached_seen = unattached;
  }

  // Processes `n` events of records, or, with a split, those up to it (the
  // rest of its thread's are parked).
  void route(thread_state& ts, const event* e, std::size_t n, bool split, std::uint64_t split_ticks, bool& parking) {
    if (!split) return pairs.process_all(ts, e, n, current.get());
    pairs.process_until(ts, e, n, split_ticks, parking, current.get());
  }

  void reap_if_done(thread_state& ts, thread_record* rec) {
    if (ts.exited && rec->events->empty() && ts.pending.empty()) {
      // What is still open will not end on this thread (a coroutine it
      // began, resumed elsewhere), or lost its end.
      pairs.freeze_if_unmarked_drops(ts, rec->events->dropped());
      ts.last_ticks = std::max(ts.last_ticks, rec->exit_ticks);  // what is open ran until the thread ended
      if (pairs.thread_gone(ts, current.get())) {
        gone_threads.push_back(threads.extract(rec));  // the node keeps ts where pairing points to it
      } else {
        if (current) current->thread_done(ts.tid);
        threads.erase(rec);
      }
      registry::instance().reap(rec);
    }
  }

  bool caller_waits() const noexcept { return callers_waiting.load(std::memory_order_acquire) > 0; }

  void drain_streamed(bool split, std::uint64_t split_ticks, bool yield) {
    for (thread_record* rec : registry::instance().snapshot()) {
      if (yield && caller_waits()) return;
      thread_state& ts = state_of(rec);
      ts.exited = rec->exited.load(std::memory_order_acquire);
      bool parking = false;
      do {
        ring& r = *rec->events;
        const std::uint64_t backlog = r.unread();
        drain_ring(ts, r, split, split_ticks, yield, parking);
        grow_if_behind(ts, r, backlog);
      } while (registry::follow_move(rec));  // the ring it moved to holds what came after
      account_losses(ts, *rec->events);
      reap_if_done(ts, rec);
    }
  }

  // What was there when the drain came is taken; what a running producer
  // adds meanwhile only in batches: consuming right behind it would make it
  // take back every cache line of the ring from this core.
  void drain_ring(thread_state& ts, ring& r, bool split, std::uint64_t split_ticks, bool yield, bool& parking) {
    const std::uint64_t owed = r.published();
    for (std::size_t round = 0; round <= 2 * r.capacity() / chunk.size() + 1 && !(yield && caller_waits()); ++round) {
      if (r.taken() >= owed && yield && r.unread() < min_batch) break;
      std::size_t first = 0;
      const std::size_t n = r.consume(chunk.data(), chunk.size(), &first, /*fuse_leaves=*/true);
      route(ts, chunk.data() + first, n, split, split_ticks, parking);
      if (current && current->buffered() > commit_bytes) current->commit();
      if (n == 0 && first == 0) break;
    }
  }

  // A ring found three quarters full when its drain came (its producer's
  // wake-up came too late: a busy machine), or that lost events since the
  // last drain, is offered a larger one to move to (registry::max_ring_events;
  // bench/README.md "Drops under load").
  void grow_if_behind(const thread_state& ts, ring& r, std::uint64_t backlog) {
    const registry& reg = registry::instance();
    const std::uint32_t larger = reg.max_ring_events();
    if (r.successor_offered() || r.capacity() >= larger) return;
    const std::uint64_t slots = 2 * std::uint64_t{r.capacity()};
    if (backlog < slots / 4 * 3 && r.dropped() == ts.dropped_seen) return;
    try {
      r.offer_successor(new ring(larger));
    } catch (const std::exception&) {
      // No memory for it: the ring stays as it is, and its losses are counted as ever.
    }
  }

  void drain_batched(bool split, std::uint64_t split_ticks) {
    const std::vector<thread_record*> records = registry::instance().snapshot();
    for (thread_record* rec : records) {
      thread_state& ts = state_of(rec);
      ts.exited = rec->exited.load(std::memory_order_acquire);
      take(ts, rec);
      account_losses(ts, *rec->events);
    }
    memory.resolve_noted(split, split_ticks);
    for (thread_record* rec : records) {
      thread_state& ts = state_of(rec);
      bool parking = false;
      route(ts, ts.batch.data(), ts.batch.size(), split, split_ticks, parking);
      ts.batch.clear();
      reap_if_done(ts, rec);
    }
  }

  void account_losses(thread_state& ts, ring& r) {
    const std::uint64_t d = r.dropped(), o = r.overwritten();
    if (d != ts.dropped_seen || o != ts.overwritten_seen) memory.lost = true;
    if (current) {
      current->losses.dropped += d - ts.dropped_seen;
      current->losses.overwritten += o - ts.overwritten_seen;
    }
    ts.dropped_seen = d;
    ts.overwritten_seen = o;
  }

  // At a switch: the scopes and async ranges open at `at_ticks` close in the
  // current window there and are carried into `next`.
  void clip_at_switch(std::uint64_t at_ticks, trace_window* next) {
    trace_window* old = current.get();
    const std::int64_t old_at = old ? old->to_ns(at_ticks) : 0;
    const std::int64_t next_at = next ? next->to_ns(at_ticks) : 0;
    for (auto& gone : gone_threads) {
      pairs.close_at_thread_exit(gone.mapped(), old);
      if (old) old->thread_done(gone.mapped().tid);
    }
    gone_threads.clear();
    for (auto& [rec, ts] : threads) {
      pairs.freeze_if_unmarked_drops(ts, rec->events->dropped());
      pairs.clip_and_carry(ts, old, old_at, next, next_at);
    }
    pairs.clip_and_carry_asyncs(old, old_at, next, next_at);
  }

  // The events a switch parked after its point, into the window now open.
  void process_parked() {
    for (auto& [rec, ts] : threads) {
      std::vector<event> parked = std::move(ts.pending);
      ts.pending.clear();
      for (std::size_t i = 0; i < parked.size(); i += record_length(parked[i])) pairs.process(ts, &parked[i], current.get());
    }
  }

  // User code (a warning handler) never runs under the flusher lock: it may
  // record events, and a full ring under `block` would wait for this lock.
  std::string take_warning() {
    std::string w;
    if (current) w.swap(current->pending_warning);
    return w;
  }

  // The lock, for a program thread: the flusher steps aside for it.
  std::unique_lock<std::mutex> lock_as_caller() {
    callers_waiting.fetch_add(1, std::memory_order_acq_rel);
    std::unique_lock lock(mutex);
    callers_waiting.fetch_sub(1, std::memory_order_acq_rel);
    return lock;
  }

  void run() {
    const in_profiler_guard own_thread;
    mark_flusher_thread();
    std::unique_lock lock(mutex);
    while (!quit) {
      if (callers_waiting.load(std::memory_order_acquire) > 0) {
        lock.unlock();
        while (callers_waiting.load(std::memory_order_acquire) > 0) std::this_thread::yield();
        lock.lock();
        continue;
      }
      cv.wait_for(lock, period, [&] { return quit || wake_requested.load(std::memory_order_relaxed); });
      wake_requested.store(false, std::memory_order_relaxed);
      drain(false, 0, /*yield=*/true);
      if (current && !caller_waits()) current->commit();  // or at the next round: the caller goes first
      if (std::string w = take_warning(); !w.empty()) {
        lock.unlock();
        warn(w);
        lock.lock();
      }
    }
    alive.store(false, std::memory_order_release);
  }

  void stop() {
    {
      std::lock_guard lock(mutex);
      quit = true;
    }
    cv.notify_one();
    if (thread.joinable()) thread.join();
  }
};

flusher& flusher::instance() {
  static flusher* f = new flusher;  // never destroyed: rings may outlive main
  return *f;
}

flusher::impl& flusher::state() {
  static impl* s = new impl;
  return *s;
}

void flusher::ensure_running(std::chrono::milliseconds period) {
  impl& s = state();
  std::lock_guard lock(s.mutex);
  s.period = period;
  if (s.alive.load(std::memory_order_acquire) || s.quit) return;
  s.alive.store(true, std::memory_order_release);
  // Signals go to the program's threads, never to the flusher: a handler
  // that finishes the trace must not interrupt the thread that writes it,
  // and a file-size limit's SIGXFSZ becomes a failed write (EFBIG).
  sigset_t all, previous;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  s.thread = std::thread([&s] { s.run(); });
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  static bool registered = false;
  if (!registered) {
    registered = true;
    std::atexit([] { flusher::instance().state().stop(); });
  }
}

bool flusher::running() const noexcept { return state().alive.load(std::memory_order_acquire); }

void flusher::wake() noexcept {
  impl& s = state();
  if (!s.wake_requested.exchange(true, std::memory_order_relaxed)) s.cv.notify_one();
}

std::shared_ptr<finished_trace> flusher::switch_window(std::uint64_t at_ticks, std::optional<window_options> next_options,
                                                       bool discard_api_steps, gpu_batch gpu) {
  impl& s = state();
  const in_profiler_guard guard;
  std::vector<std::string> warnings;
  std::unique_lock lock = s.lock_as_caller();
  std::unique_ptr<trace_window> next;
  if (next_options) {
    s.memory.set_next_start(memory_resolver::next_window_start{!s.current, next_options->first_step});
    s.next_profile_memory = next_options->profile_memory;
    next = std::make_unique<trace_window>(std::move(*next_options), at_ticks, ++s.windows_made);
  }
  s.pairs.discard_api_steps = discard_api_steps;
  s.add_gpu_memory(gpu, at_ticks);
  s.drain(true, at_ticks);
  s.memory.set_next_start(std::nullopt);
  s.next_profile_memory = false;
  s.clip_at_switch(at_ticks, next.get());

  std::shared_ptr<finished_trace> done;
  if (trace_window* old = s.current.get()) {
    old->write_gpu(gpu, s.gpu_memory);
    done = old->finish(old->to_ns(at_ticks), warnings);
  }
  s.current = std::move(next);
  s.gpu_memory.clear();
  std::vector<memory_record> preexisting = s.memory.take_preexisting();
  if (s.current) s.current->memory_records() = std::move(preexisting);
  s.process_parked();
  if (s.current) s.current->commit();
  if (std::string w = s.take_warning(); !w.empty()) warnings.push_back(std::move(w));
  lock.unlock();
  for (auto& w : warnings) warn(w);
  return done;
}

bool flusher::add_metadata(std::string key, std::string raw_json) {
  impl& s = state();
  const std::unique_lock lock = s.lock_as_caller();
  if (!s.current) return false;
  s.current->tail_metadata.emplace_back(std::move(key), std::move(raw_json));
  return true;
}

void flusher::flush_now() {
  impl& s = state();
  const in_profiler_guard guard;
  std::string warning;
  {
    const std::unique_lock lock = s.lock_as_caller();
    s.drain(false, 0);
    if (s.current) s.current->commit();
    warning = s.take_warning();
  }
  if (!warning.empty()) warn(warning);
}

void flusher::prepare_fork() noexcept {
  state().lock_as_caller().release();  // held across fork(); unlocked by the handlers below
  registry::instance().lock_for_fork();
}

void flusher::parent_after_fork() noexcept {
  registry::instance().unlock_after_fork();
  state().mutex.unlock();
}

void flusher::child_after_fork() noexcept {
  impl& s = state();
  // The parent's flusher thread does not exist here: forget it without
  // joining, and give the child a condition variable no one waits on.
  ::new (static_cast<void*>(&s.thread)) std::thread();
  ::new (static_cast<void*>(&s.cv)) std::condition_variable();
  s.alive.store(false, std::memory_order_relaxed);
  s.wake_requested.store(false, std::memory_order_relaxed);
  s.callers_waiting.store(0, std::memory_order_relaxed);  // those were the parent's threads
  s.quit = false;
  s.current.reset();  // the parent goes on writing it; this only closes our descriptor
  s.threads.clear();
  s.gone_threads.clear();
  s.pairs.forget();
  s.memory.forget();
  s.next_profile_memory = false;
  s.gpu_memory.clear();
  registry::instance().keep_only_this_thread_after_fork();
  registry::instance().unlock_after_fork();
  s.mutex.unlock();
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer still lists the parent's threads here; glibc would give
  // the child's first new threads their cached stacks, hence their pthread_t
  // ids, which TSan takes for duplicates ("dup thread with used id"). Stacks
  // a little larger than any cached one are fresh mappings with new ids, so
  // a fresh_session child runs under TSan (with die_after_fork=0).
  pthread_attr_t attr;
  std::size_t stack = 0;
  if (::pthread_getattr_default_np(&attr) == 0) {
    ::pthread_attr_getstacksize(&attr, &stack);
    if (stack == 0) stack = std::size_t{8} << 20;
    ::pthread_attr_setstacksize(&attr, stack + (std::size_t{1} << 20));
    ::pthread_setattr_default_np(&attr);
    ::pthread_attr_destroy(&attr);
  }
#endif
}

void wake_flusher() noexcept { flusher::instance().wake(); }
bool flusher_running() noexcept { return flusher::instance().running(); }

}  // namespace proftrace::detail
