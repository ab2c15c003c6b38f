#include "proftrace/detail/ring.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <thread>

#include "registry.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

ring::ring(std::uint32_t capacity) {
  if (capacity < 64 || (capacity & (capacity - 1)) != 0) throw std::invalid_argument("proftrace: ring capacity must be a power of two >= 64");
  constexpr std::size_t page = 4096;
  const std::size_t bytes = (std::size_t{capacity} * sizeof(event) + page - 1) / page * page;
  words_ = static_cast<std::uint64_t*>(std::aligned_alloc(page, bytes));
  if (!words_) throw std::bad_alloc();
  std::memset(words_, 0, bytes);  // touch every page now, not on the hot path
  mask_ = capacity - 1;
  watermark_ = capacity / 2;
  limit_ = watermark_;
  tsc_ = choose_clock_source();
}

ring::~ring() { std::free(words_); }

void ring::reset() noexcept {
  head_.store(0, std::memory_order_relaxed);
  tail_.store(0, std::memory_order_relaxed);
  floor_.store(0, std::memory_order_relaxed);
  dropped_.store(0, std::memory_order_relaxed);
  overwritten_.store(0, std::memory_order_relaxed);
  tail_cache_ = floor_local_ = next_wake_ = 0;
  limit_ = watermark_;
}

bool ring::make_room(std::uint64_t h, std::uint32_t n) noexcept {
  const std::uint64_t cap = mask_ + 1;
  tail_cache_ = std::max(tail_.load(std::memory_order_acquire), floor_local_);
  limit_ = tail_cache_ + watermark_;
  if (h + n - tail_cache_ >= watermark_ && h >= next_wake_) {
    next_wake_ = h + watermark_ / 4;
    wake_flusher();
  }
  if (h + n - tail_cache_ <= cap) return true;

  switch (current_overflow_policy()) {
    case overflow_policy::block: {
      for (unsigned spins = 0; h + n - tail_cache_ > cap; ++spins) {
        if (!flusher_running()) {  // nobody will ever make room: behave as drop
          dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
          return false;
        }
        wake_flusher();
        if (spins < 64) std::this_thread::yield();
        else std::this_thread::sleep_for(std::chrono::microseconds(50));
        tail_cache_ = tail_.load(std::memory_order_acquire);
      }
      limit_ = tail_cache_ + watermark_;
      return true;
    }
    case overflow_policy::drop_oldest: {
      // Raise the floor past the slots about to be overwritten, then fence so
      // a consumer that reads our new data also sees the new floor.
      floor_local_ = h + n - cap;
      floor_.store(floor_local_, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_release);
      tail_cache_ = floor_local_;
      limit_ = tail_cache_ + watermark_;
      return true;
    }
    case overflow_policy::drop:
    default:
      dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return false;
  }
}

void ring::push_record(std::uint64_t ticks, std::uint64_t where, std::uint64_t payload, event_kind kind,
                       const std::uint64_t* ext_words, std::uint32_t n_ext) noexcept {
  const std::uint64_t h = head_.load(std::memory_order_relaxed);
  const std::uint32_t n = 1 + n_ext;
  if (h + n > limit_ && !make_room(h, n)) return;
  store_slot(h, ticks, where, payload, static_cast<std::uint64_t>(kind) | (std::uint64_t{n_ext} << 32));
  for (std::uint32_t i = 0; i < n_ext; ++i) {
    const std::uint64_t* w = ext_words + i * words_per_event;
    std::uint64_t* s = words_ + ((h + 1 + i) & mask_) * words_per_event;
    for (std::uint32_t k = 0; k < words_per_event; ++k)
      std::atomic_ref<std::uint64_t>(s[k]).store(k == 3 ? static_cast<std::uint64_t>(event_kind::extension) : w[k],
                                                 std::memory_order_relaxed);
  }
  head_.store(h + n, std::memory_order_release);
}

std::size_t ring::consume(event* out, std::size_t max, std::size_t* first) noexcept {
  *first = 0;
  std::uint64_t t = tail_.load(std::memory_order_relaxed);
  const std::uint64_t f = floor_.load(std::memory_order_acquire);
  if (f > t) {
    overwritten_.store(overwritten_.load(std::memory_order_relaxed) + (f - t), std::memory_order_relaxed);
    t = f;
  }
  const std::uint64_t h = head_.load(std::memory_order_acquire);
  std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(h - t, max));
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t* s = words_ + ((t + i) & mask_) * words_per_event;
    std::uint64_t w[words_per_event];
    for (std::uint32_t k = 0; k < words_per_event; ++k) w[k] = std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(s[k])).load(std::memory_order_relaxed);
    std::memcpy(&out[i], w, sizeof(event));
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  const std::uint64_t f2 = floor_.load(std::memory_order_relaxed);
  std::size_t skip = 0;
  if (f2 > t) {
    skip = static_cast<std::size_t>(std::min<std::uint64_t>(f2 - t, n));
    overwritten_.store(overwritten_.load(std::memory_order_relaxed) + skip, std::memory_order_relaxed);
  }
  // Keep records whole: a record cut by `max` stays for the next call.
  std::size_t end = n;
  for (std::size_t i = skip; i < n;) {
    const auto kind = static_cast<event_kind>(out[i].kind);
    const std::size_t len = kind == event_kind::extension ? 1 : 1 + out[i].extra;
    if (i + len > n) {
      end = i;
      break;
    }
    i += len;
  }
  tail_.store(t + end, std::memory_order_release);
  *first = skip;
  return end > skip ? end - skip : 0;
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
