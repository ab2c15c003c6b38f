// Internal: the layouts of multi-slot ring records, written by the recorder
// (lib/recording/recorder.cpp) and read by pairing — one place for each.
//
// A record is a head event and `extra` extension events, as the ring's
// consumer hands them out (in the ring each takes two 16-byte slots). An
// extension event keeps its kind in word 3 (a drained event is told from a
// head by it), so only words 0..2 of each carry data: `data_words` skips
// word 3.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "proftrace/detail/event.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// Appends `v` at data word `used` of an extension area of `capacity`
// words, skipping each slot's kind word. False (nothing written) when full.
inline bool put_data_word(std::uint64_t* words, std::uint32_t capacity, std::uint32_t& used, std::int64_t v) noexcept {
  if (used % words_per_event == 3) ++used;
  if (used >= capacity) return false;
  words[used++] = static_cast<std::uint64_t>(v);
  return true;
}
inline std::uint32_t slots_for_words(std::uint32_t used) noexcept {
  return (used + words_per_event - 1) / words_per_event;
}

// ---- comm: one slot, word 0 the bytes, word 1 the peer rank + 1 (0: none) ----
struct comm_args {
  std::int64_t bytes = -1;  // -1: none
  std::int32_t peer = -1;
};
// Both stored plus one: 0 is "unknown" (-1 given: a wait's bytes, a collective's peer).
inline void encode_comm(std::uint64_t (&words)[words_per_event], std::int64_t bytes, int peer) noexcept {
  words[0] = bytes < 0 ? 0 : static_cast<std::uint64_t>(std::min<std::int64_t>(bytes, INT64_MAX - 1)) + 1;
  words[1] = static_cast<std::uint64_t>(peer < 0 ? 0 : peer + 1);
}
inline comm_args decode_comm(const event& head) noexcept {
  if (head.extra == 0) return {};
  const event& slot = (&head)[1];
  return {static_cast<std::int64_t>(slot.ticks) - 1, static_cast<std::int32_t>(slot.where) - 1};
}

// ---- a step's begin: payload the step number, word 0 of one slot the CUDA
// external id it pushed; any other begin carries that id as its payload ----
inline std::uint64_t pushed_external_id(const event& head, bool is_step) noexcept {
  if (!is_step) return head.payload;
  return head.extra > 0 ? (&head)[1].ticks : 0;
}

// ---- shapes: [count, ndim0, dims0..., ndim1, dims1...] in data words ----
// Into `out`: the number of inputs, then per input its rank and its dims
// (open_scope::shapes).
inline void decode_shapes(const event& head, std::vector<std::int64_t>& out) {
  out.clear();
  const auto* w = reinterpret_cast<const std::uint64_t*>(&head + 1);
  const std::size_t n_words = std::size_t{head.extra} * words_per_event;
  std::size_t pos = 0;
  const auto next = [&](std::int64_t& v) {
    if (pos % words_per_event == 3) ++pos;
    if (pos >= n_words) return false;
    v = static_cast<std::int64_t>(w[pos++]);
    return true;
  };
  std::int64_t count = 0, ndim = 0, dim = 0;
  next(count);
  out.push_back(0);
  for (std::int64_t s = 0; s < count && next(ndim); ++s) {
    const std::size_t rank_at = out.size();
    out.push_back(0);
    ++out[0];
    for (std::int64_t d = 0; d < ndim && next(dim); ++d) {
      out.push_back(dim);
      ++out[rank_at];
    }
  }
}

// ---- text in extension slots: a dynamic_begin's name, a string arg's value ----
// Data word 0: the byte count, with bit 32 set when the text was cut; the
// bytes follow, 8 per data word. At most max_text_bytes: longer text is cut
// on a UTF-8 character boundary (and the cut counted by pairing).
inline constexpr std::uint32_t max_text_slots = 11;  // 33 data words: the count and 256 bytes
inline constexpr std::uint32_t max_text_words = max_text_slots * words_per_event;
inline constexpr std::size_t max_text_bytes = 256;
inline constexpr std::uint64_t text_cut_bit = std::uint64_t{1} << 32;

// How much of `text` fits: at most max_text_bytes, never inside a UTF-8 character.
inline std::size_t text_fit(std::string_view text) noexcept {
  if (text.size() <= max_text_bytes) return text.size();
  std::size_t n = max_text_bytes;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;  // text[n] continues a character
  return n;
}

// Writes `text` (cut as text_fit says) into `words`; returns the slots used.
inline std::uint32_t encode_text(std::uint64_t (&words)[max_text_words], std::string_view text) noexcept {
  const std::size_t n = text_fit(text);
  std::uint32_t used = 0;
  put_data_word(words, max_text_words, used,
                static_cast<std::int64_t>(n | (n < text.size() ? text_cut_bit : 0)));
  for (std::size_t i = 0; i < n; i += 8) {
    std::uint64_t w = 0;
    std::memcpy(&w, text.data() + i, std::min<std::size_t>(8, n - i));
    put_data_word(words, max_text_words, used, static_cast<std::int64_t>(w));
  }
  const std::uint32_t slots = slots_for_words(used);
  for (std::uint32_t i = used; i < slots * words_per_event; ++i) words[i] = 0;  // the last slot's unused words
  return slots;
}

// Reads the text of a record whose extension slots follow `head` into `out`;
// true when it was cut at record time. Text that claims more than its slots
// hold is read only as far as they go.
inline bool decode_text(const event& head, std::string& out) {
  out.clear();
  if (head.extra == 0) return false;
  const auto* w = reinterpret_cast<const std::uint64_t*>(&head + 1);
  const std::size_t n_words = std::size_t{head.extra} * words_per_event;
  const std::uint64_t count = w[0];
  std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(count & 0xffffffffu, max_text_bytes));
  std::size_t pos = 1;
  while (want > 0) {
    if (pos % words_per_event == 3) ++pos;
    if (pos >= n_words) break;
    char bytes[8];
    std::memcpy(bytes, &w[pos++], 8);
    const std::size_t k = std::min<std::size_t>(8, want);
    out.append(bytes, k);
    want -= k;
  }
  return (count & text_cut_bit) != 0;
}

// ---- arg (arg_type in event.hpp): where = the key's site | arg_type; payload = the value's bits ----
inline constexpr std::uint64_t arg_type_mask = 3;
inline std::uint64_t encode_arg_where(const void* key_site, arg_type t) noexcept {
  return reinterpret_cast<std::uintptr_t>(key_site) | static_cast<std::uint64_t>(t);
}

}  // namespace proftrace::detail
