// Internal: the layouts of multi-slot ring records, written by the recorder
// (lib/recorder.cpp) and read by pairing — one place for each.
//
// A record is a head event and `extra` extension slots. Extension slots keep
// their kind in word 3 (a drained slot is told from a head by it), so only
// words 0..2 of each slot carry data: `data_words` skips word 3.
#pragma once

#include <cstdint>
#include <string>

#include "json_text.hpp"
#include "proftrace/detail/event.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

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
inline void encode_comm(std::uint64_t (&words)[words_per_event], std::int64_t bytes, int peer) noexcept {
  words[0] = static_cast<std::uint64_t>(bytes < 0 ? 0 : bytes);
  words[1] = static_cast<std::uint64_t>(peer < 0 ? 0 : peer + 1);
}
inline comm_args decode_comm(const event& head) noexcept {
  if (head.extra == 0) return {};
  const event& slot = (&head)[1];
  return {static_cast<std::int64_t>(slot.ticks), static_cast<std::int32_t>(slot.where) - 1};
}

// ---- a step's begin: payload the step number, word 0 of one slot the CUDA
// external id it pushed; any other begin carries that id as its payload ----
inline std::uint64_t pushed_external_id(const event& head, bool is_step) noexcept {
  if (!is_step) return head.payload;
  return head.extra > 0 ? (&head)[1].ticks : 0;
}

// ---- shapes: [count, ndim0, dims0..., ndim1, dims1...] in data words ----
// As the trace's "Input Dims": "[[2, 3], [3]]".
inline std::string decode_shapes_json(const event& head) {
  const auto* w = reinterpret_cast<const std::uint64_t*>(&head + 1);
  const std::size_t n_words = std::size_t{head.extra} * words_per_event;
  std::size_t pos = 0;
  const auto next = [&](std::int64_t& v) {
    if (pos % words_per_event == 3) ++pos;
    if (pos >= n_words) return false;
    v = static_cast<std::int64_t>(w[pos++]);
    return true;
  };
  std::string out = "[";
  std::int64_t count = 0, ndim = 0, dim = 0;
  next(count);
  for (std::int64_t s = 0; s < count && next(ndim); ++s) {
    if (s) out += ", ";
    out += '[';
    for (std::int64_t d = 0; d < ndim && next(dim); ++d) {
      if (d) out += ", ";
      append_int(out, dim);
    }
    out += ']';
  }
  out += ']';
  return out;
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
