#include "proftrace/detail/ring.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <thread>

#include "proftrace/detail/recorder.hpp"
#include "registry.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {
// Ring uids start at 1 (an index is never 0 or cancel_end) and wrap below
// ring_uid_limit - 1 (no index has all bits set: no_begin).
std::atomic<std::uint64_t> next_uid{0};
std::uint64_t fresh_base() noexcept {
  const std::uint64_t n = next_uid.fetch_add(1, std::memory_order_relaxed);
  return (1 + n % (ring_uid_limit - 2)) << ring_uid_shift;
}
// Set on the flusher's thread: what it records itself never waits for it.
constinit thread_local bool flusher_thread = false;

}  // namespace

void mark_flusher_thread() noexcept { flusher_thread = true; }
bool on_flusher_thread() noexcept { return flusher_thread; }

ring::ring(std::uint32_t capacity) {
  if (capacity < 64 || (capacity & (capacity - 1)) != 0) throw std::invalid_argument("proftrace: ring capacity must be a power of two >= 64");
  constexpr std::size_t page = 4096;
  const std::uint64_t slots = std::uint64_t{capacity} * 2;
  const std::size_t bytes = (slots * words_per_slot * sizeof(std::uint64_t) + page - 1) / page * page;
  words_ = static_cast<std::uint64_t*>(std::aligned_alloc(page, bytes));
  if (!words_) throw std::bad_alloc();
  std::memset(words_, 0, bytes);  // touch every page now, not on the hot path
  mask_ = slots - 1;
  watermark_ = slots / 2;
  tsc_ = choose_clock_source();
  reset();
}

ring::~ring() {
  if (owns_successor_) delete successor_.load(std::memory_order_relaxed);
  std::free(words_);
}

void ring::reset() noexcept {
  if (owns_successor_) delete successor_.load(std::memory_order_relaxed);
  owns_successor_ = false;
  successor_.store(nullptr, std::memory_order_relaxed);
  moved_.store(false, std::memory_order_relaxed);
  carried_dropped_ = 0;
  base_ = fresh_base();
  head_.store(base_, std::memory_order_relaxed);
  tail_.store(base_, std::memory_order_relaxed);
  dropped_.store(0, std::memory_order_relaxed);
  reentered_.store(0, std::memory_order_relaxed);
  overwritten_.store(0, std::memory_order_relaxed);
  tail_cache_ = next_wake_ = consumed_ = base_;
  unmarked_drops_ = 0;
  gap_owed_ = false;
  limit_to(base_ + watermark_);
}

void ring::overwrite_oldest(std::uint64_t h, std::uint32_t n) noexcept {
  const std::uint64_t cap = mask_ + 1;
  std::uint64_t t = tail_cache_;
  while (h + n - t > cap) {
    // Walk whole records from the tail (always a record boundary): the
    // producer reads back only slots it wrote itself.
    std::uint64_t f = t;
    std::uint64_t records = 0;
    while (h + n - f > cap) {
      const std::uint64_t* s = words_ + (f & mask_) * words_per_slot;
      f += slots_of(std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(s[1])).load(std::memory_order_relaxed));
      ++records;
    }
    // Success: the consumer had not freed them; it now cannot hand them out.
    if (tail_.compare_exchange_strong(t, f, std::memory_order_acq_rel, std::memory_order_acquire)) {
      overwritten_.store(overwritten_.load(std::memory_order_relaxed) + records, std::memory_order_relaxed);
      t = f;
      break;
    }
    // The consumer moved the tail meanwhile (t now holds it): look again.
  }
  tail_cache_ = t;
}

namespace {
// Linux futexes on a ring's 32-bit word: a producer waiting for room sleeps
// instead of spinning, so a producer that outruns the flusher costs no CPU
// while it waits (its wait is in the trace as its own span).
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected, long timeout_ns) noexcept {
  const timespec timeout{0, timeout_ns};
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, &timeout, nullptr, 0);
}
void futex_wake_all(std::atomic<std::uint32_t>& word) noexcept {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}
}  // namespace

bool ring::wait_for_room(std::uint64_t h, std::uint32_t need) noexcept {
  const std::uint64_t cap = mask_ + 1;
  // Resume once half the ring is free, not at the first free slot: a
  // producer that outruns the flusher then waits a few long times instead
  // of once per consumed chunk.
  const std::uint64_t resume = std::max<std::uint64_t>(need, cap / 2);
  for (unsigned round = 0; h + resume - tail_cache_ > cap; ++round) {
    if (!flusher_running()) {
      if (h + need - tail_cache_ <= cap) break;
      return false;
    }
    wake_flusher();
    if (round < 4) std::this_thread::yield();
    else sleep_until_consumed(h, resume);
    tail_cache_ = tail_.load(std::memory_order_acquire);
  }
  return true;
}

// Ordering: the producer announces itself, then reads the tail; the
// consumer moves the tail, then reads the announcement (all seq_cst). One
// of them sees the other: the consumer wakes it, or it sees the room. The
// consumer wakes it only once the tail reaches where it resumes: one wake-up
// per wait, not one per chunk consumed.
void ring::sleep_until_consumed(std::uint64_t h, std::uint64_t resume) noexcept {
  const std::uint64_t cap = mask_ + 1;
  const std::uint32_t epoch = room_epoch_.load(std::memory_order_acquire);
  resume_tail_.store(h + resume - cap, std::memory_order_relaxed);  // published by the store below
  producer_sleeps_.store(1, std::memory_order_seq_cst);
  if (h + resume - tail_.load(std::memory_order_seq_cst) > cap) futex_wait(room_epoch_, epoch, 1'000'000);
  producer_sleeps_.store(0, std::memory_order_relaxed);
}

// Below the watermark the producer comes back here at it; above it, when
// the next wake-up of the flusher is due or the ring may be full, not at
// every record: each visit reads the consumer's cache line.
void ring::set_limit(std::uint64_t h) noexcept {
  const std::uint64_t full = tail_cache_ + mask_ + 1;
  limit_to(h - tail_cache_ < watermark_ ? tail_cache_ + watermark_ : std::min(full, std::max(next_wake_, h)));
}

std::uint64_t ring::make_room(std::uint64_t h, std::uint32_t n, std::uint64_t ticks, event_kind kind) noexcept {
  const std::uint64_t cap = mask_ + 1;
  const std::uint32_t need = n + (unmarked_drops_ != 0 ? 2 : 0);  // a gap record is owed first
  tail_cache_ = tail_.load(std::memory_order_acquire);
  if (h + need - tail_cache_ >= watermark_ && h >= next_wake_) {
    next_wake_ = h + watermark_ / 4;
    wake_flusher();
  }
  const auto drop = [&] {
    dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    ++unmarked_drops_;
    limit_to(h);  // the next record comes back here, to write the gap record first
    return no_begin;
  };
  std::uint64_t wait_begin = 0;
  if (h + need - tail_cache_ > cap) {
    switch (current_overflow_policy()) {
      case overflow_policy::block:
        // Nobody will make room when no flusher runs, nor when this is the
        // flusher's own thread (a warning handler it runs records scopes):
        // behave as drop.
        if (flusher_thread) return drop();
        wait_begin = now();
        if (!wait_for_room(h, need + 2)) return drop();  // two slots more: the wait's record
        wait_end_ = now();
        break;
      case overflow_policy::drop_oldest:
        overwrite_oldest(h, need);
        break;
      case overflow_policy::drop:
      default:
        return drop();
    }
  }
  set_limit(h + need);
  if (unmarked_drops_ != 0) {
    store_full(h, ticks, unmarked_drops_, 0, static_cast<std::uint64_t>(event_kind::gap));
    unmarked_drops_ = 0;
    h += 2;
  }
  if (wait_end_ != 0) {
    const bool before = opens_scope(kind);
    store_full(before ? h : h + n, wait_end_, reinterpret_cast<std::uintptr_t>(&ring_wait_site), wait_begin,
               static_cast<std::uint64_t>(event_kind::complete));
    if (before) h += 2;
  }
  return h;
}

std::uint64_t ring::store_record(std::uint64_t h, std::uint64_t ticks, std::uint64_t where, std::uint64_t payload,
                                 event_kind kind, const std::uint64_t* ext_words, std::uint32_t n_ext) noexcept {
  if (takes_one_slot(kind, where, payload, n_ext, ring_uid_of(base_))) {
    store_short(h, ticks, where, payload, kind);
    return 1;
  }
  store_full(h, ticks, where, payload, static_cast<std::uint64_t>(kind) | (std::uint64_t{n_ext} << 32));
  for (std::uint32_t i = 0; i < n_ext; ++i) {
    const std::uint64_t* w = ext_words + i * words_per_event;
    store_words(h + 2 + 2 * i, w[0], w[1]);
    store_words(h + 3 + 2 * i, w[2], static_cast<std::uint64_t>(event_kind::extension));
  }
  return 2 + 2 * std::uint64_t{n_ext};
}

std::uint64_t ring::push_record(std::uint64_t ticks, std::uint64_t where, std::uint64_t payload, event_kind kind,
                                const std::uint64_t* ext_words, std::uint32_t n_ext) noexcept {
  if (!enter_push()) return no_begin;
  const std::uint64_t at = push_record_unguarded(ticks, where, payload, kind, ext_words, n_ext);
  leave_push();
  return at;
}

std::uint64_t ring::push_record_unguarded(std::uint64_t ticks, std::uint64_t where, std::uint64_t payload,
                                          event_kind kind, const std::uint64_t* ext_words,
                                          std::uint32_t n_ext) noexcept {
  std::uint64_t h = head_.load(std::memory_order_relaxed);
  if (PROFTRACE_UNLIKELY(not_yet_written(kind, payload, h))) payload = no_begin;
  const std::uint64_t n = record_slots(where, payload, kind, n_ext);
  std::uint64_t next = h + n;  // where the head goes
  if (h + n > limit_) {
    if (PROFTRACE_UNLIKELY(successor_.load(std::memory_order_acquire) != nullptr))
      return push_to_successor(h, ticks, where, payload, kind, ext_words, n_ext);
    h = make_room(h, static_cast<std::uint32_t>(n), ticks, kind);
    if (h == no_begin) return no_begin;
    next = h + n;
    if (PROFTRACE_UNLIKELY(wait_end_ != 0)) {  // make_room waited and wrote the wait's record
      if (opens_scope(kind)) ticks = wait_end_;  // the scope starts when the wait ended
      else next += 2;
      wait_end_ = 0;
    }
  }
  store_record(h, ticks, where, payload, kind, ext_words, n_ext);
  head_.store(next, std::memory_order_release);
  return h;
}

bool ring::offer_successor(ring* larger) noexcept {
  if (successor_offered()) {
    delete larger;
    return false;
  }
  owns_successor_ = true;
  successor_.store(larger, std::memory_order_release);
  return true;
}

ring* ring::hand_over_successor() noexcept {
  ring* next = successor_.load(std::memory_order_relaxed);
  owns_successor_ = false;
  // A signal handler's push that reentered a push through this ring after
  // the move was counted here: it belongs to the successor's count now.
  if (const std::uint64_t late = dropped() - next->carried_dropped_; late != 0)
    next->reentered_.fetch_add(late, std::memory_order_relaxed);
  return next;
}

std::uint64_t ring::push_to_successor(std::uint64_t h, std::uint64_t ticks, std::uint64_t where,
                                      std::uint64_t payload, event_kind kind, const std::uint64_t* ext_words,
                                      std::uint32_t n_ext) noexcept {
  ring& next = *successor_.load(std::memory_order_acquire);
  if (!moved_.load(std::memory_order_relaxed)) move_to(next, h);
  return next.push_record(ticks, where, payload, kind, ext_words, n_ext);
}

// In this order, for a signal handler that records between two steps: the
// successor is whole before the thread's pushes go there, and the losses
// counted here until then are carried after.
void ring::move_to(ring& next, std::uint64_t h) noexcept {
  next.continue_from(*this, h);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (this_thread_ring == this) this_thread_ring = &next;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  const std::uint64_t dropped_here = dropped_.load(std::memory_order_relaxed);
  const std::uint64_t reentered_here = reentered_.load(std::memory_order_relaxed);
  next.carried_dropped_ = dropped_here + reentered_here;  // exactly what is carried: a later count here is late
  next.dropped_.fetch_add(dropped_here, std::memory_order_relaxed);
  next.reentered_.fetch_add(reentered_here, std::memory_order_relaxed);
  next.overwritten_.fetch_add(overwritten_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  limit_to(0);  // every later push through this ring comes to push_to_successor
  moved_.store(true, std::memory_order_release);
}

void ring::continue_from(const ring& old, std::uint64_t h) noexcept {
  base_ = old.base_;
  head_.store(h, std::memory_order_relaxed);
  tail_.store(h, std::memory_order_relaxed);
  tail_cache_ = next_wake_ = consumed_ = h;
  unmarked_drops_ = old.unmarked_drops_;  // its gap record comes first here
  gap_owed_ = false;
  limit_to(unmarked_drops_ != 0 ? h : h + watermark_);
}

// One attempt of consume(): copies whole records, from the tail `t` up to
// `available` slots past it, into `out` from out[k] on. Always inlined into
// consume(): this is the flusher's inner loop.
struct ring::drain_pass {
  const std::uint64_t* words;
  std::uint64_t mask;
  event* out;
  std::size_t max;
  bool fuse_leaves;
  std::uint64_t t;
  std::uint64_t available;
  std::uint64_t taken;  // slots copied
  std::size_t k;        // events written

  PROFTRACE_ALWAYS_INLINE static std::uint64_t load(const std::uint64_t& w) noexcept {
    return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(w)).load(std::memory_order_relaxed);
  }
  PROFTRACE_ALWAYS_INLINE const std::uint64_t* slot(std::uint64_t index) const noexcept {
    return words + (index & mask) * words_per_slot;
  }

  // Whole records only: one cut by `max` (or, under drop_oldest, torn by an
  // overwrite, which consume()'s compare-and-swap then rejects) stays.
  PROFTRACE_ALWAYS_INLINE void copy_records() noexcept {
    while (taken < available && k < max) {
      const std::uint64_t index = t + taken;
      const std::uint64_t* s = slot(index);
      const std::uint64_t ticks = load(s[0]);
      const std::uint64_t tag_word = load(s[1]);
      const std::uint64_t tag = tag_word >> slot_tag_shift;
      if (tag == tag_short_begin) {
        copy_short_begin(index, ticks, tag_word);
      } else if (tag == tag_short_end) {
        out[k++] = event{ticks, 0, index - (tag_word & slot_low_bits), static_cast<std::uint32_t>(event_kind::end), 0};
        taken += 1;
      } else if (!copy_full(index, ticks, tag_word)) {
        break;
      }
    }
  }

  // A one-slot begin; with fuse_leaves, one followed at once by its end is a leaf.
  PROFTRACE_ALWAYS_INLINE void copy_short_begin(std::uint64_t index, std::uint64_t ticks,
                                                std::uint64_t tag_word) noexcept {
    if (fuse_leaves && taken + 1 < available) {
      const std::uint64_t* s1 = slot(index + 1);
      if (load(s1[1]) == leaf_end_word) {  // the end one slot after it
        out[k++] = event{ticks, tag_word & slot_low_bits, load(s1[0]), static_cast<std::uint32_t>(event_kind::leaf), 0};
        taken += 2;
        copy_leaf_run();
        return;
      }
    }
    out[k++] = event{ticks, tag_word & slot_low_bits, 0, static_cast<std::uint32_t>(event_kind::begin), 0};
    taken += 1;
  }
  static constexpr std::uint64_t leaf_end_word = std::uint64_t{tag_short_end} << slot_tag_shift | 1;

  // The leaves that follow a leaf, up to the ring's end: by pointer, not by
  // index (the drain's common case, about half the instructions per leaf).
  PROFTRACE_ALWAYS_INLINE void copy_leaf_run() noexcept {
    const std::uint64_t first = t + taken;
    const std::uint64_t to_ring_end = mask + 1 - (first & mask);
    const std::uint64_t pairs = std::min<std::uint64_t>(std::min(available - taken, to_ring_end) / 2, max - k);
    const std::uint64_t* s = slot(first);
    event* o = out + k;
    std::uint64_t i = 0;
    for (; i < pairs; ++i, s += 2 * words_per_slot) {
      const std::uint64_t tag_word = load(s[1]);
      if (tag_word >> slot_tag_shift != tag_short_begin || load(s[3]) != leaf_end_word) break;
      o[i] = event{load(s[0]), tag_word & slot_low_bits, load(s[2]), static_cast<std::uint32_t>(event_kind::leaf), 0};
    }
    k += i;
    taken += 2 * i;
  }

  // A full record and its extensions; false (nothing copied) when it is not
  // all published yet or does not fit in `out`.
  PROFTRACE_ALWAYS_INLINE bool copy_full(std::uint64_t index, std::uint64_t ticks, std::uint64_t tag_word) noexcept {
    const std::uint64_t slots = slots_of(tag_word);
    const std::uint32_t extra = static_cast<std::uint32_t>((slots - 2) / 2);
    if (taken + slots > available || k + 1 + extra > max) return false;
    const std::uint64_t* s1 = slot(index + 1);
    out[k++] = event{ticks, load(s1[0]), load(s1[1]), static_cast<std::uint32_t>(tag_word), extra};
    for (std::uint32_t x = 0; x < extra; ++x) {
      const std::uint64_t* a = slot(index + 2 + 2 * x);
      const std::uint64_t* b = slot(index + 3 + 2 * x);
      out[k++] = event{load(a[0]), load(a[1]), load(b[0]), static_cast<std::uint32_t>(event_kind::extension), 0};
    }
    taken += slots;
    return true;
  }
};

std::size_t ring::consume(event* out, std::size_t max, std::size_t* first, bool fuse_leaves) noexcept {
  *first = 0;
  if (max < 2) return 0;
  // A producer overwriting as fast as this copies could make it retry for
  // ever: a few rounds, then the next call goes on.
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::uint64_t t = tail_.load(std::memory_order_acquire);
    if (t != consumed_) {  // the producer freed records we had not read: they were overwritten
      gap_owed_ = true;
      consumed_ = t;
    }
    const std::size_t at = gap_owed_ ? 1 : 0;  // out[0] is kept for the gap record
    drain_pass pass{words_, mask_, out, max, fuse_leaves, t, head_.load(std::memory_order_acquire) - t, 0, at};
    pass.copy_records();
    if (pass.taken == 0) return 0;
    // Fails only when the producer overwrote records below t + taken
    // meanwhile: what was copied may be torn, so copy again from the new tail.
    if (!tail_.compare_exchange_strong(t, t + pass.taken, std::memory_order_seq_cst, std::memory_order_acquire)) continue;
    consumed_ = t + pass.taken;
    if (producer_sleeps_.load(std::memory_order_seq_cst) != 0 &&
        consumed_ >= resume_tail_.load(std::memory_order_relaxed)) {
      room_epoch_.fetch_add(1, std::memory_order_release);
      futex_wake_all(room_epoch_);
    }
    if (!gap_owed_) return pass.k;
    gap_owed_ = false;
    out[0] = event{out[1].ticks, 0, t, static_cast<std::uint32_t>(event_kind::gap), 0};  // payload: where the survivors start
    return pass.k;
  }
  return 0;
}

}  // namespace proftrace::detail
