// proftrace/detail/ring.hpp — one thread's single-producer single-consumer
// event ring. Not API.
//
// The producer (the instrumented thread, and only it) writes whole records
// and publishes them with a store-release of `head_`; the consumer (whoever
// holds the flusher's lock) copies them out and frees their slots by moving
// `tail_` with a compare-and-swap. Head and tail live on separate cache
// lines. Slots are written and read word by word with relaxed atomics: on
// x86 these are plain moves, and they keep the drop_oldest overwrite
// race-free. Under drop_oldest the producer frees the oldest unread records
// itself, whole records at a time, by moving `tail_` with a compare-and-swap
// before it overwrites them, and counts them; a consumer whose own
// compare-and-swap then fails discards what it copied and copies again. So
// every record is either consumed or counted as overwritten, exactly once.
//
// Losses are marked where they happened: after `drop` refused records, the
// next record that fits is preceded by a `gap` record; after drop_oldest
// overwrote records, the consumer hands out a `gap` record before the first
// survivor. The flusher uses them to close, as truncated, the scopes whose
// end a loss may have taken.
//
// Waits are marked too: a producer that waited for room under `block`
// writes, in the same push, a `complete` record of the wait (ring_wait_site)
// before a record that opens a scope (which then starts when the wait ended)
// or after any other record, so the wait is never part of a user's scope.
#pragma once

#include <atomic>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../config.hpp"
#include "../overflow.hpp"
#include "clock.hpp"
#include "event.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

class ring {
 public:
  // Allocates room for `capacity` (a power of two >= 64) two-slot records,
  // 32 bytes each (so as many plain scopes), and touches every page, so the
  // hot path never takes a first-touch fault.
  explicit ring(std::uint32_t capacity);
  ~ring();
  ring(const ring&) = delete;
  ring& operator=(const ring&) = delete;

  std::uint32_t capacity() const noexcept { return static_cast<std::uint32_t>((mask_ + 1) / 2); }

  // Back to empty with zeroed counters and a fresh uid, for reuse by another
  // thread. Only while no producer is attached and nobody consumes.
  void reset() noexcept;

  // This ring's uid since its last reset (see begin_index in event.hpp).
  std::uint64_t uid() const noexcept { return ring_uid_of(base_); }

  // ---- producer side (the owning thread only) ----

  // The time stamp: the clock choice sits in this ring's read-only line,
  // which the push touches anyway.
  PROFTRACE_ALWAYS_INLINE std::uint64_t now() const noexcept {
#if PROFTRACE_DETAIL_HAS_TSC
    if (PROFTRACE_LIKELY(tsc_)) return __rdtsc();
#endif
    return fallback_clock_ns();
  }

  // Returns the record's index (what an end names its begin by), or no_begin
  // when the record was dropped. A plain scope's begin and end take one
  // 16-byte slot each, other records two (takes_one_slot in event.hpp).
  // A push from a signal handler that interrupted this thread's own push
  // is dropped and counted (reentered()), never written over the
  // interrupted record nor left waiting for it.
  PROFTRACE_ALWAYS_INLINE std::uint64_t push(std::uint64_t ticks, std::uint64_t where, std::uint64_t payload,
                                             event_kind kind) noexcept {
    if (PROFTRACE_UNLIKELY(!enter_push())) return no_begin;
    const std::uint64_t at = push_unguarded(ticks, where, payload, kind);
    leave_push();
    return at;
  }

  // The commonest records on their own fast path: a plain begin of the site
  // `where`, and an end naming `begin` in this ring, each in one slot, when
  // nothing asks for push()'s other work (the TSC is the clock, no push of
  // this thread is under way, the slot lies below the limit). Returns the
  // record's index; otherwise what `otherwise()` returns (the caller's full
  // path through push()). Anything else, a marked or dropped scope's token
  // included, fails the end's range test. A site's address always fits a
  // short begin where the TSC is read: x86-64 gives user space at most 56
  // bits of address (five-level paging).
  template <class Otherwise>
  PROFTRACE_ALWAYS_INLINE std::uint64_t push_short_begin_or(std::uint64_t where, const Otherwise& otherwise) noexcept {
    return push_short_or(
        [where](std::uint64_t) { return std::uint64_t{tag_short_begin} << slot_tag_shift | where; },
        [](std::uint64_t) { return true; }, otherwise);
  }
  template <class Otherwise>
  PROFTRACE_ALWAYS_INLINE void push_short_end_or(std::uint64_t begin, const Otherwise& otherwise) noexcept {
    push_short_or([begin](std::uint64_t h) { return std::uint64_t{tag_short_end} << slot_tag_shift | (h - begin); },
                  [this, begin](std::uint64_t h) { return begin >= base_ && begin < h; }, otherwise);
  }

  // A record with n_ext extension events: the head, then `ext_words`
  // (n_ext * 4 words, the fourth of each unused) in two slots each.
  // Published all at once. Returns its index, or no_begin.
  std::uint64_t push_record(std::uint64_t ticks, std::uint64_t where, std::uint64_t payload, event_kind kind,
                            const std::uint64_t* ext_words, std::uint32_t n_ext) noexcept;

  // An event a signal handler recorded while this thread was inside the
  // recorder (a push, a name's interning), dropped: counted in dropped().
  void count_reentered() noexcept { reentered_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t reentered() const noexcept { return reentered_.load(std::memory_order_relaxed); }

  // Events this producer discarded (drop policy, or block without a flusher,
  // or block on the flusher's own thread).
  std::uint64_t dropped() const noexcept {
    return dropped_.load(std::memory_order_relaxed) + reentered_.load(std::memory_order_relaxed);
  }

  // ---- growth: the flusher offers a larger ring, the producer moves to it ----
  // The flusher offers `larger` (this ring owns it until handed over). The
  // producer moves at its next visit to the slow path: the larger ring goes
  // on with this ring's indices (an end there names a begin here as in one
  // ring) and loss counts, and becomes this_thread_ring; this ring takes no
  // record after that. False (and `larger` deleted) when one was offered.
  bool offer_successor(ring* larger) noexcept;
  bool successor_offered() const noexcept { return successor_.load(std::memory_order_relaxed) != nullptr; }
  // The producer moved: what this ring holds is all it will hold.
  bool moved() const noexcept { return moved_.load(std::memory_order_acquire); }
  // Once moved and drained: the successor, now the caller's, with the
  // losses counted here after the move carried onto it. This ring keeps
  // forwarding a push made through a reference taken before the move, so it
  // lives as long as the successor does.
  ring* hand_over_successor() noexcept;

  // ---- consumer side (the flusher lock holder only) ----

  // Copies the unread records (at most `max` events, whole records only)
  // into `out` as 32-byte events, frees their slots and returns how many
  // events start at `out + *first` (*first is always 0 now; kept for
  // callers). When records were overwritten under drop_oldest since the last
  // call, the first event handed out is a `gap` record. Records overwritten
  // are counted, in records, in overwritten(). `fuse_leaves`: a plain begin
  // followed at once by the end that names it (a leaf scope, the commonest
  // pair) is handed out as one `leaf` event.
  std::size_t consume(event* out, std::size_t max, std::size_t* first, bool fuse_leaves = false) noexcept;
  std::uint64_t overwritten() const noexcept { return overwritten_.load(std::memory_order_relaxed); }
  // Slots (16 bytes) published and not yet consumed (or overwritten).
  std::uint64_t unread() const noexcept {
    return head_.load(std::memory_order_acquire) - tail_.load(std::memory_order_relaxed);
  }
  bool empty() const noexcept { return unread() == 0; }
  // The index the producer's next record gets, and the one up to which this
  // consumer took records: a drain takes what was published when it came.
  std::uint64_t published() const noexcept { return head_.load(std::memory_order_acquire); }
  std::uint64_t taken() const noexcept { return consumed_; }
  // True while the producer sleeps for room under `block` (it wakes each
  // millisecond to look again): a test knows its wait has begun.
  bool producer_asleep() const noexcept { return producer_sleeps_.load(std::memory_order_seq_cst) != 0; }

 private:
  // The reentrancy guard around a push: only this thread and its signal
  // handlers touch pushing_ (a volatile sig_atomic_t, as a flag shared with
  // a signal handler should be), and signal fences order it.
  PROFTRACE_ALWAYS_INLINE bool enter_push() noexcept {
    if (PROFTRACE_LIKELY(enter_push_quietly())) return true;
    count_reentered();
    return false;
  }
  PROFTRACE_ALWAYS_INLINE void leave_push() noexcept {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    pushing_ = 0;
  }

  template <class Word, class Fits, class Otherwise>
  PROFTRACE_ALWAYS_INLINE auto push_short_or(const Word& second_word, const Fits& fits,
                                             const Otherwise& otherwise) noexcept {
#if PROFTRACE_DETAIL_HAS_TSC
    if (PROFTRACE_UNLIKELY(!enter_push_quietly())) return otherwise();
    const std::uint64_t h = head_.load(std::memory_order_relaxed);
    if (PROFTRACE_LIKELY(h < short_limit_ && fits(h))) {
      store_words(h, __rdtsc(), second_word(h));
      head_.store(h + 1, std::memory_order_release);
      leave_push();
      if constexpr (std::is_void_v<decltype(otherwise())>) return;
      else return h;
    }
    leave_push();
#else
    (void)second_word;
    (void)fits;
#endif
    return otherwise();
  }
  // enter_push() without counting: the caller's push() counts a reentered push.
  PROFTRACE_ALWAYS_INLINE bool enter_push_quietly() noexcept {
    if (PROFTRACE_UNLIKELY(pushing_ != 0)) return false;
    pushing_ = 1;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    return true;
  }

  PROFTRACE_ALWAYS_INLINE std::uint64_t push_unguarded(std::uint64_t ticks, std::uint64_t where,
                                                       std::uint64_t payload, event_kind kind) noexcept {
    const std::uint64_t h = head_.load(std::memory_order_relaxed);
    // takes_one_slot, with an end's test as one compare: its begin lies in
    // [base_, h), which has this ring's uid (and the stale indices of
    // not_yet_written fail it).
    if (kind == event_kind::begin ? payload == 0 && where <= slot_low_bits
                                  : kind == event_kind::end && payload - base_ < h - base_) {
      if (PROFTRACE_UNLIKELY(h >= limit_)) return push_record_unguarded(ticks, where, payload, kind, nullptr, 0);
      store_short(h, ticks, where, payload, kind);
      head_.store(h + 1, std::memory_order_release);
      return h;
    }
    if (PROFTRACE_UNLIKELY(not_yet_written(kind, payload, h))) payload = no_begin;
    if (PROFTRACE_UNLIKELY(h + 1 >= limit_)) return push_record_unguarded(ticks, where, payload, kind, nullptr, 0);
    store_full(h, ticks, where, payload, static_cast<std::uint64_t>(kind));
    head_.store(h + 2, std::memory_order_release);
    return h;
  }
  std::uint64_t push_record_unguarded(std::uint64_t ticks, std::uint64_t where, std::uint64_t payload,
                                      event_kind kind, const std::uint64_t* ext_words, std::uint32_t n_ext) noexcept;

  PROFTRACE_ALWAYS_INLINE void store_words(std::uint64_t slot, std::uint64_t w0, std::uint64_t w1) noexcept {
    std::uint64_t* s = words_ + (slot & mask_) * words_per_slot;
    std::atomic_ref<std::uint64_t>(s[0]).store(w0, std::memory_order_relaxed);
    std::atomic_ref<std::uint64_t>(s[1]).store(w1, std::memory_order_relaxed);
  }
  // A one-slot record (takes_one_slot): a begin keeps its site, an end the
  // distance back to its begin.
  PROFTRACE_ALWAYS_INLINE void store_short(std::uint64_t index, std::uint64_t ticks, std::uint64_t where,
                                           std::uint64_t payload, event_kind kind) noexcept {
    store_words(index, ticks,
                kind == event_kind::begin ? std::uint64_t{tag_short_begin} << slot_tag_shift | where
                                          : std::uint64_t{tag_short_end} << slot_tag_shift | (index - payload));
  }
  // A two-slot head; `kind_word`: the kind | its extension count << 32.
  PROFTRACE_ALWAYS_INLINE void store_full(std::uint64_t index, std::uint64_t ticks, std::uint64_t where,
                                          std::uint64_t payload, std::uint64_t kind_word) noexcept {
    store_words(index, ticks, std::uint64_t{tag_full} << slot_tag_shift | kind_word);
    store_words(index + 1, where, payload);
  }
  // How many slots the record at `index` takes (the producer's own, or a
  // consumer's copy of its first slot's second word).
  static std::uint64_t slots_of(std::uint64_t tag_word) noexcept {
    const std::uint64_t tag = tag_word >> slot_tag_shift;
    if (tag == tag_short_begin || tag == tag_short_end) return 1;
    return 2 + 2 * ((tag_word >> 32) & 0xffffff);
  }
  // Writes the record at `h` (one slot or two, then its extensions).
  std::uint64_t store_record(std::uint64_t h, std::uint64_t ticks, std::uint64_t where, std::uint64_t payload,
                             event_kind kind, const std::uint64_t* ext_words, std::uint32_t n_ext) noexcept;
  std::uint64_t record_slots(std::uint64_t where, std::uint64_t payload, event_kind kind,
                             std::uint32_t n_ext) const noexcept {
    return takes_one_slot(kind, where, payload, n_ext, ring_uid_of(base_)) ? 1 : 2 + 2 * std::uint64_t{n_ext};
  }
  // An end naming an index of this ring's uid that this ring has not
  // written (at `h`): a stale index of a former ring with the same uid
  // (uids wrap). It names no begin here: written as no_begin (unpaired), in
  // two slots, so no distance back is ever negative.
  bool not_yet_written(event_kind kind, std::uint64_t payload, std::uint64_t h) const noexcept {
    return kind == event_kind::end && ring_uid_of(payload) == ring_uid_of(base_) && payload >= h;
  }

  // The kinds that open a scope: a wait for room goes before them.
  static constexpr bool opens_scope(event_kind k) noexcept {
    return k == event_kind::begin || k == event_kind::shapes || k == event_kind::comm ||
           k == event_kind::async_begin || k == event_kind::dynamic_begin;
  }

  // Slow path, taken past the watermark: refreshes the cached tail, wakes the
  // flusher, and when there is no room for `n` slots applies the overflow
  // policy. Writes the gap record owed after a drop (with `ticks`, the next
  // record's; two slots). After a wait under `block` it also writes the
  // wait's record (two slots), at `h` before a record of a `kind` that opens
  // a scope, else at the slot after the record's n, and sets wait_end_.
  // Returns where the record goes, or no_begin: the record is dropped (and
  // counted).
  PROFTRACE_NOINLINE std::uint64_t make_room(std::uint64_t h, std::uint32_t n, std::uint64_t ticks,
                                             event_kind kind) noexcept;
  // Where the fast path next leaves for make_room(), for a producer at `h`.
  void set_limit(std::uint64_t h) noexcept;
  void limit_to(std::uint64_t limit) noexcept {
    limit_ = limit;
    short_limit_ = tsc_ ? limit : 0;
  }
  // block: waits until `need` slots fit at `h` (asleep, until half the
  // ring is free); false when no flusher runs to make room.
  bool wait_for_room(std::uint64_t h, std::uint32_t need) noexcept;
  // Sleeps until the consumer frees slots (or 1 ms passes) unless `resume`
  // slots already fit at `h`.
  void sleep_until_consumed(std::uint64_t h, std::uint64_t resume) noexcept;
  // drop_oldest: frees the oldest whole records until `n` slots fit at `h`.
  void overwrite_oldest(std::uint64_t h, std::uint32_t n) noexcept;
  // One attempt of consume(): copies whole records from the tail (ring.cpp).
  struct drain_pass;
  // The producer's side of a move (offer_successor): the push at `h` goes
  // to the successor, moving there first if it has not yet.
  std::uint64_t push_to_successor(std::uint64_t h, std::uint64_t ticks, std::uint64_t where, std::uint64_t payload,
                                  event_kind kind, const std::uint64_t* ext_words, std::uint32_t n_ext) noexcept;
  void move_to(ring& next, std::uint64_t h) noexcept;
  void continue_from(const ring& old, std::uint64_t h) noexcept;

  // Producer cache line.
  alignas(64) std::atomic<std::uint64_t> head_{0};
  std::uint64_t limit_ = 0;  // past it, make_room() looks again (set_limit)
  std::uint64_t short_limit_ = 0;  // the same for push_short_or(); 0 without the TSC (limit_to)
  std::uint64_t tail_cache_ = 0;
  std::uint64_t next_wake_ = 0;
  std::uint64_t unmarked_drops_ = 0;  // dropped since the last gap record
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<std::uint64_t> overwritten_{0};  // records, counted by the producer that overwrote them
  std::uint64_t wait_end_ = 0;  // the end of a wait whose record make_room wrote; the push reads and clears it
  volatile std::sig_atomic_t pushing_ = 0;     // this thread is inside a push (enter_push)
  std::atomic<std::uint64_t> reentered_{0};    // pushes dropped by enter_push
  std::atomic<ring*> successor_{nullptr};      // offered by the flusher (offer_successor)
  std::atomic<bool> moved_{false};             // the producer moved to successor_
  std::uint64_t carried_dropped_ = 0;          // dropped() of the ring moved from, when it moved here

  // Consumer cache line.
  alignas(64) std::atomic<std::uint64_t> tail_{0};
  std::uint64_t consumed_ = 0;  // the tail this consumer last set: a tail moved past it was overwritten
  bool gap_owed_ = false;       // a gap record goes before the next record handed out
  // A producer asleep under `block` (1 while it sleeps), and the count of
  // consumes that woke it: a futex word.
  std::atomic<std::uint32_t> producer_sleeps_{0};
  std::atomic<std::uint32_t> room_epoch_{0};
  std::atomic<std::uint64_t> resume_tail_{0};  // the tail at which the sleeping producer resumes

  // Read-only while a producer is attached.
  alignas(64) std::uint64_t* words_ = nullptr;
  std::uint64_t mask_ = 0;
  std::uint64_t watermark_ = 0;
  std::uint64_t base_ = 0;  // uid << ring_uid_shift: the first index
  bool tsc_ = false;
  bool owns_successor_ = false;  // the flusher's: until hand_over_successor()
};

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
