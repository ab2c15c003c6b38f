// proftrace/async_range.hpp — a range that begins on one thread and ends on
// another (a request handed to a worker, a future completed elsewhere).
//
//   proftrace::async_range r = PROF_ASYNC_RANGE("request");   // begins here
//   std::thread worker([r = std::move(r)]() mutable {
//     handle_request();
//     r.end();                                                // ends on the worker
//   });
//
// The trace shows it as a Kineto async event pair ("ph": "b" / "e", "cat":
// "async", one "id") on its own track, from the thread that began it to the
// thread that ended it. The summary counts it under its name with CPU total
// time only: it is nobody's child and has no self time, so the scopes of
// either thread keep their own figures. Moving a range moves the obligation
// to end it; the destructor ends a range still open. Recorded only while a
// session records; with PROFTRACE_ENABLED=0 (or no CPU-range collector)
// PROF_ASYNC_RANGE yields an inert range and references no proftrace symbol.
#pragma once

#include <cstdint>
#include <utility>

#include "config.hpp"

#if PROFTRACE_ENABLED && PROFTRACE_WITH_CPU_RANGES
#include <atomic>

#include "detail/recorder.hpp"
#endif

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {

#if PROFTRACE_ENABLED && PROFTRACE_WITH_CPU_RANGES
namespace detail {
// Ids pair an async range's begin and end across threads (process-wide).
inline constinit std::atomic<std::uint64_t> next_async_id{1};
}  // namespace detail
#endif

class async_range {
 public:
  async_range() noexcept = default;  // inert: records nothing
#if PROFTRACE_ENABLED && PROFTRACE_WITH_CPU_RANGES
  explicit async_range(const detail::site* s) noexcept {
    if (!detail::recording()) return;
    detail::ring* r = detail::thread_ring();
    if (r == nullptr) return;
    id_ = detail::next_async_id.fetch_add(1, std::memory_order_relaxed);
    site_ = s;
    r->push(r->now(), reinterpret_cast<std::uintptr_t>(s), id_, detail::event_kind::async_begin);
  }
#endif
  async_range(async_range&& other) noexcept : site_(std::exchange(other.site_, nullptr)), id_(std::exchange(other.id_, 0)) {}
  async_range& operator=(async_range&& other) noexcept {
    if (this != &other) {
      end();
      site_ = std::exchange(other.site_, nullptr);
      id_ = std::exchange(other.id_, 0);
    }
    return *this;
  }
  async_range(const async_range&) = delete;
  async_range& operator=(const async_range&) = delete;
  ~async_range() { end(); }

  // Ends the range on the calling thread (once; later calls do nothing). If
  // recording has stopped meanwhile, the trace already closed it at its end.
  void end() noexcept {
#if PROFTRACE_ENABLED && PROFTRACE_WITH_CPU_RANGES
    if (id_ == 0) return;
    if (detail::recording()) {
      if (detail::ring* r = detail::thread_ring())
        r->push(r->now(), reinterpret_cast<std::uintptr_t>(site_), id_, detail::event_kind::async_end);
    }
#endif
    id_ = 0;
  }
  // Began while recording and not ended yet.
  bool active() const noexcept { return id_ != 0; }
  // The range's "id" in the trace (0 when inert).
  std::uint64_t id() const noexcept { return id_; }

 private:
  const void* site_ = nullptr;
  std::uint64_t id_ = 0;
};

}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
