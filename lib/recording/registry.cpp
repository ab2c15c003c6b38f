#include "registry.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "proftrace/detail/recorder.hpp"
#include "environment_session.hpp"
#include "helpers/warn.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {
namespace {

constexpr std::size_t max_pooled_rings = 16;

constinit thread_local bool this_thread_exiting = false;

std::int64_t current_tid() noexcept { return static_cast<std::int64_t>(::syscall(SYS_gettid)); }

// Destroyed when the thread exits: hands the ring to the flusher, which
// drains what is left and then frees it. Not the main thread's: its
// thread-locals are destroyed by exit() (returning from main calls it)
// before the atexit handlers, one of which stops a running session; its
// scopes still open then close at that stop as at any stop, not as scopes
// that will end on another thread, and it keeps its ring until then (the C
// API's open step records its end there).
struct thread_exit_hook {
  thread_record* record = nullptr;
  ~thread_exit_hook() {
    this_thread_exiting = true;  // no new ring from here on
    if (record && current_tid() != ::getpid()) {
      this_thread_ring = nullptr;
      record->exit_ticks = now_ticks();
      record->exited.store(true, std::memory_order_release);
      wake_flusher();
    }
  }
};
thread_local thread_exit_hook exit_hook;

// A name this thread takes when it attaches its ring, unless named by then.
constinit thread_local const char* default_name = nullptr;

}  // namespace

registry& registry::instance() {
  static registry* r = new registry;  // never destroyed: threads may exit after main
  return *r;
}

thread_record* registry::attach(std::int64_t tid, std::uint32_t ring_events) {
  auto rec = std::make_unique<thread_record>();
  rec->tid = tid;
  std::lock_guard lock(mutex_);
  // The pooled ring nearest the size asked for, or one that grew (up to the
  // growth bound): its pages are already there, where a new one would fault
  // them in and a thread like the one that left it would grow again.
  const std::uint32_t largest = std::max(ring_events, max_ring_events());
  auto pooled = pool_.end();
  for (auto it = pool_.begin(); it != pool_.end(); ++it) {
    const std::uint32_t c = (*it)->capacity();
    if (c >= ring_events && c <= largest && (pooled == pool_.end() || c < (*pooled)->capacity())) pooled = it;
  }
  if (pooled != pool_.end()) {
    rec->events = std::move(*pooled);
    pool_.erase(pooled);
  } else {
    rec->events = std::make_unique<ring>(ring_events);
  }
  records_.push_back(std::move(rec));
  return records_.back().get();
}

std::vector<thread_record*> registry::snapshot() {
  std::lock_guard lock(mutex_);
  std::vector<thread_record*> out;
  out.reserve(records_.size());
  for (auto& r : records_) out.push_back(r.get());
  return out;
}

void registry::reap(thread_record* r) {
  std::lock_guard lock(mutex_);
  auto it = std::find_if(records_.begin(), records_.end(), [&](auto& p) { return p.get() == r; });
  if (it == records_.end()) return;
  if (pool_.size() < max_pooled_rings) {
    (*it)->events->reset();
    pool_.push_back(std::move((*it)->events));
  }
  records_.erase(it);
}

bool registry::follow_move(thread_record* r) noexcept {
  ring& left = *r->events;
  if (!left.moved() || !left.empty()) return false;
  ring* larger = left.hand_over_successor();
  r->moved_from.push_back(std::move(r->events));
  r->events.reset(larger);
  return true;
}

// How far a ring may grow when the flusher finds it filling faster than it
// drains (three quarters full when it came, or a loss): to this many times
// its size, in one step (CMake's PROFTRACE_RING_GROWTH; 1: never).
#ifndef PROFTRACE_RING_GROWTH
#define PROFTRACE_RING_GROWTH 4
#endif

namespace {
// PROFTRACE_RING_GROWTH in the environment (1, 2, 4, ... up to 64) overrides the build's.
std::uint64_t ring_growth() noexcept {
  static const std::uint64_t growth = [] {
    const char* env = std::getenv("PROFTRACE_RING_GROWTH");
    const long v = env ? std::strtol(env, nullptr, 10) : 0;
    return v >= 1 && v <= 64 && (v & (v - 1)) == 0 ? static_cast<std::uint64_t>(v) : std::uint64_t{PROFTRACE_RING_GROWTH};
  }();
  return growth;
}
}  // namespace

std::uint32_t registry::max_ring_events() const noexcept {
  const std::uint64_t most = std::uint64_t{ring_events()} * ring_growth();
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(most, std::uint64_t{1} << 30));
}

void registry::keep_only_this_thread_after_fork() noexcept {
  thread_record* mine = exit_hook.record;
  for (auto& r : records_) {
    if (r.get() != mine) continue;
    if (r->events->moved()) {  // this thread pushes to the successor: it is the ring kept
      r->moved_from.push_back(std::move(r->events));
      r->events.reset(r->moved_from.back()->hand_over_successor());
    }
    r->moved_from.clear();
    r->events->reset();
    this_thread_ring = r->events.get();
    auto kept = std::move(r);
    records_.clear();
    records_.push_back(std::move(kept));
    return;
  }
  records_.clear();
}

void registry::set_name(thread_record* r, std::string name) {
  std::lock_guard lock(mutex_);
  r->name = std::move(name);
}

void registry::name_if_unnamed(thread_record* r, const char* name) {
  std::lock_guard lock(mutex_);
  if (r->name.empty()) r->name = name;
}

std::string registry::name_of(thread_record* r) {
  std::lock_guard lock(mutex_);
  return r->name;
}

// PROFTRACE_CONFIG: a session before main(). Here, in the translation unit
// that attach_this_thread() (which every macro references) pulls out of a
// static libproftrace.a, so that a program with macros but no session code
// links it too.
namespace {
[[gnu::constructor]] void proftrace_start_from_environment() { start_from_environment(); }
}  // namespace

namespace {
// Inside attach_this_thread on this thread: a signal handler's event then
// is counted, not recorded (attaching again would wait for the registry's
// lock this thread holds).
constinit thread_local volatile bool attaching = false;
}  // namespace

ring* attach_this_thread() noexcept {
  auto& reg = registry::instance();
  if (this_thread_exiting || attaching) {
    reg.unattached_drops.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  const in_profiler_guard own_allocations;
  attaching = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  struct attached {
    ~attached() {
      std::atomic_signal_fence(std::memory_order_seq_cst);
      attaching = false;
    }
  } const done;
  try {
    thread_record* rec = reg.attach(current_tid(), reg.ring_events());
    if (default_name) reg.set_name(rec, default_name);
    exit_hook.record = rec;
    this_thread_ring = rec->events.get();
    return this_thread_ring;
  } catch (const std::exception& e) {
    reg.unattached_drops.fetch_add(1, std::memory_order_relaxed);
    warn_once("attach", std::string("cannot allocate this thread's event ring (") + e.what() +
                            "); its events are dropped and counted");
    return nullptr;
  }
}

void set_default_thread_name(const char* name) noexcept {
  default_name = name;
  if (this_thread_ring == nullptr || !exit_hook.record) return;
  const in_profiler_guard own_allocations;
  try {
    registry::instance().name_if_unnamed(exit_hook.record, name);
  } catch (...) {
  }
}

void set_thread_name(const char* name) noexcept {
  if (!name) return;
  ring* r = thread_ring();
  if (!r) return;
  const in_profiler_guard own_allocations;
  try {
    registry::instance().set_name(exit_hook.record, name);
  } catch (...) {
  }
}

}  // namespace proftrace::detail
