// proftrace/detail/event.hpp — what a hot path records, and how it lies in a
// ring's 16-byte slots. Not API.
#pragma once

#include <cstdint>

#include "../config.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

enum class event_kind : std::uint32_t {
  begin = 1,     // payload: step number for category::step, else a CUDA external id or 0
  end = 2,       // `where` repeats the begin's site; payload: the begin's index (see begin_index)
  complete = 3,  // payload: begin ticks; `ticks` is the end
  instant = 4,
  counter = 5,   // payload: the value's bits (double)
  shapes = 6,    // a begin with input shapes (payload as begin's); `extra` extension events follow
  extension = 7, // an event that continues the record before it (two ring slots)
  flops = 8,     // payload: a FLOP count for the enclosing scope; where: 1 if the estimate was invalid
  alloc = 9,     // where: the address; payload: bytes | category << 48 | (device + 1) << 56
  free = 10,     // where: the address; payload: (device + 1) << 56
  reserved = 11, // a pool's reserved size; payload: bytes | (device + 1) << 56
  comm = 12,     // a begin of a communication call (payload as begin's); one extension
                 // slot: word 0 the bytes, word 1 the peer rank + 1 (0: none)
  async_begin = 13,  // a range that may end on another thread; payload: its id
  async_end = 14,    // payload: the id of the async_begin it closes
  gap = 15,          // not recorded by a macro: events were lost right before the next record.
                     // where: how many (0 when the ring counted them elsewhere: drop_oldest)
  dynamic_begin = 16,  // a begin whose name is a runtime string (PROF_SCOPE_DYNAMIC, proftrace_push;
                       // payload as begin's); extension slots carry the name (record_layout.hpp)
  arg = 17,            // PROF_ARG: a value for the innermost open scope. where: the key's site | its
                       // arg_type (low 2 bits); payload: the value's bits; a string's bytes in
                       // extension slots (record_layout.hpp)
  leaf = 18            // not recorded by a macro: a plain begin and the end right after it that
                       // names it (two one-slot records), handed out as one by consume(.., fuse_leaves).
                       // ticks: the begin's; where: its site; payload: the end's ticks
};

// The type of a PROF_ARG value, in the low bits of an arg record's `where`.
enum class arg_type : std::uint32_t { integer = 0, floating = 1, string = 2, unsigned_integer = 3 };

// A record as the consumer hands it out (ring::consume), whatever the slots
// it took: four 64-bit words. In the ring, slots are written and read word by
// word with relaxed atomics (drop_oldest lets the producer overwrite a slot
// the flusher is reading; the flusher validates its copy afterwards).
struct event {
  std::uint64_t ticks;
  std::uint64_t where;    // const site* (or raw words in an extension event)
  std::uint64_t payload;
  std::uint32_t kind;     // event_kind
  std::uint32_t extra;    // number of extension events that follow
};

static_assert(sizeof(event) == 32, "an event is exactly 32 bytes: 2 per cache line");
static_assert(alignof(event) == 8);

inline constexpr std::uint32_t words_per_event = 4;

// Memory events: the device (-1 for host memory) rides in the top byte, the
// category in the byte below, and the size (saturated at 256 TiB) in the rest.
inline constexpr int device_shift = 56;
inline constexpr int category_shift = 48;
inline constexpr std::uint64_t bytes_mask = (std::uint64_t{1} << category_shift) - 1;

// A device the top byte holds is -1 (host) to max_memory_device; any other
// (proftrace_alloc(p, n, -5)) is written as invalid_memory_device, which the
// flusher refuses and counts ("invalid_memory_devices") instead of wrapping.
inline constexpr int max_memory_device = 253;
inline constexpr int invalid_memory_device = max_memory_device + 1;
constexpr std::uint64_t memory_payload(std::int64_t bytes, int device, std::uint8_t category = 0) noexcept {
  const std::uint64_t b = bytes <= 0 ? 0 : static_cast<std::uint64_t>(bytes) > bytes_mask ? bytes_mask : static_cast<std::uint64_t>(bytes);
  if (device < -1 || device > max_memory_device) device = invalid_memory_device;
  return b | (std::uint64_t{category} << category_shift) | (static_cast<std::uint64_t>(device + 1) << device_shift);
}
constexpr int payload_device(std::uint64_t payload) noexcept { return static_cast<int>(payload >> device_shift) - 1; }
constexpr std::uint8_t payload_category(std::uint64_t payload) noexcept {
  return static_cast<std::uint8_t>(payload >> category_shift);
}
constexpr std::int64_t payload_bytes(std::uint64_t payload) noexcept {
  return static_cast<std::int64_t>(payload & bytes_mask);
}

// An end whose payload is cancel_end closes its begin without writing it.
inline constexpr std::uint64_t cancel_end = 1;

// Every record has an index in its ring, returned by ring::push: the ring's
// uid (fresh each time a thread attaches a ring) in the top bits, the slot
// count since then below. An end carries its begin's index, so the flusher
// pairs them exactly whatever was lost between, and an end pushed on another
// thread's ring (a coroutine resumed elsewhere) still names its begin.
// Payloads 0 and cancel_end name no begin: such an end closes the innermost
// open begin of its site (profile::step()'s annotations).
inline constexpr int ring_uid_shift = 44;
inline constexpr std::uint64_t ring_uid_limit = std::uint64_t{1} << (63 - ring_uid_shift);
// The index of a begin that was not recorded (a full ring under `drop`).
inline constexpr std::uint64_t no_begin = ~std::uint64_t{0};
constexpr bool names_a_begin(std::uint64_t end_payload) noexcept {
  return end_payload > cancel_end && end_payload != no_begin;
}
constexpr std::uint64_t ring_uid_of(std::uint64_t index) noexcept { return index >> ring_uid_shift; }

// In its ring an event takes 16-byte slots, and indices count slots. A
// plain begin (payload 0) and an end that names a begin of the same ring,
// the two records of a plain scope, take one slot each: [ticks][tag | site]
// and [ticks][tag | how many slots back its begin is]. Every other record
// takes two, [ticks][tag | extra << 32 | kind] and [where][payload], and
// two more per extension slot. The consumer hands them out as 32-byte
// events all the same (an end's `where` then reads 0).
inline constexpr std::uint32_t words_per_slot = 2;
inline constexpr int slot_tag_shift = 56;
inline constexpr std::uint64_t slot_low_bits = (std::uint64_t{1} << slot_tag_shift) - 1;
enum slot_tag : std::uint64_t { tag_full = 0x80, tag_short_begin = 0x81, tag_short_end = 0x82 };

// Whether a record takes one slot: a pure function of the record, so that
// the consumer (pairing counts indices) agrees with the producer. `uid`:
// the ring's; `n_ext`: its extension events. (The producer writes an end
// that names an index of its ring it has not reached, a stale index of a
// former ring with the same uid, as no_begin: ring::push.)
constexpr bool takes_one_slot(event_kind kind, std::uint64_t where, std::uint64_t payload, std::uint32_t n_ext,
                              std::uint64_t uid) noexcept {
  if (n_ext != 0) return false;
  if (kind == event_kind::begin) return payload == 0 && where <= slot_low_bits;
  // No ring's uid is 0 (the uid of payloads 0 and cancel_end) nor all ones
  // (no_begin's): a matching uid names a begin.
  return kind == event_kind::end && ring_uid_of(payload) == uid;
}
// The slots a handed-out event took in a ring of `uid` (an extension: its
// two; a leaf: its begin's and end's; a head: its whole record's).
constexpr std::uint64_t ring_slots(const event& e, std::uint64_t uid) noexcept {
  const auto kind = static_cast<event_kind>(e.kind);
  if (kind == event_kind::extension || kind == event_kind::leaf) return 2;
  return takes_one_slot(kind, e.where, e.payload, e.extra, uid) ? 1 : 2 + 2 * std::uint64_t{e.extra};
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
