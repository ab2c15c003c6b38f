#include "json_events_scanner.hpp"

#include <array>
#include <bit>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

json_events_scanner::json_events_scanner(element_fn on_element, member_fn on_member, std::size_t max_piece,
                                         bool check_structure)
    : on_element_(std::move(on_element)),
      on_member_(std::move(on_member)),
      max_piece_(max_piece),
      check_structure_(check_structure) {}

void json_events_scanner::fail(const std::string& why, error::kind k, const char* found) const {
  throw error(k, elements_, found, why + " (at byte " + std::to_string(offset_) + ")");
}

namespace {
// What a value straight inside traceEvents is when it opens no object.
const char* non_object(char c) {
  return c == '"'                          ? "a string"
         : c == 't' || c == 'f'            ? "a boolean"
         : c == 'n'                        ? "null"
         : c == '['                        ? "an array"
         : c == '-' || (c >= '0' && c <= '9') ? "a number"
                                           : nullptr;
}

// The characters that matter outside strings inside an element (depth 3 and
// more): the rest (numbers, literals, separators, space) is skipped at once.
constexpr auto nested_structural = [] {
  std::array<bool, 256> t{};
  for (const unsigned char c : {'"', '{', '}', '[', ']'}) t[c] = true;
  return t;
}();

// Bit i of each mask: whether byte i of a 64-byte block is that character.
struct block_masks {
  std::uint64_t quote = 0, backslash = 0, open = 0, close = 0;  // open: '{' '[', close: '}' ']'
};

block_masks masks_of(const char* p) {
  block_masks m;
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), lower = _mm_set1_epi8(0x20),
                open = _mm_set1_epi8('{'), close = _mm_set1_epi8('}');
  for (int i = 0; i < 4; ++i) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
    const __m128i folded = _mm_or_si128(v, lower);  // '[' as '{', ']' as '}': they differ by 0x20 alone
    const auto bits = [i](__m128i eq) {
      return std::uint64_t{static_cast<std::uint16_t>(_mm_movemask_epi8(eq))} << (16 * i);
    };
    m.quote |= bits(_mm_cmpeq_epi8(v, quote));
    m.backslash |= bits(_mm_cmpeq_epi8(v, backslash));
    m.open |= bits(_mm_cmpeq_epi8(folded, open));
    m.close |= bits(_mm_cmpeq_epi8(folded, close));
  }
#else
  for (int i = 0; i < 64; ++i) {
    const std::uint64_t bit = std::uint64_t{1} << i;
    const char c = p[i];
    if (c == '"') m.quote |= bit;
    if (c == '\\') m.backslash |= bit;
    if (c == '{' || c == '[') m.open |= bit;
    if (c == '}' || c == ']') m.close |= bit;
  }
#endif
  return m;
}

// Bit i: the parity of the bits up to i (included): with quotes, whether
// byte i is an opening quote or inside the string it opens.
std::uint64_t prefix_xor(std::uint64_t x) {
  for (int shift = 1; shift < 64; shift *= 2) x ^= x << shift;
  return x;
}
}  // namespace

// Inside an element (depth 3 and more) only strings and brackets matter:
// 64 bytes at a time, the brackets outside strings are found by masks, a
// string's extent being the running parity of its quotes. Stops before the
// bracket that closes depth 3 (structural() ends the element), and leaves
// to the byte loop, through `byte_loop_until`, a block with a backslash
// (escapes) and the chunk's last bytes short of a block.
const char* json_events_scanner::skip_nested(const char* p, const char* end, const char*& byte_loop_until) {
  for (; end - p >= 64; p += 64) {
    const block_masks m = masks_of(p);
    if (m.backslash) {
      byte_loop_until = p + 64;
      return p;
    }
    const std::uint64_t inside = prefix_xor(m.quote) ^ (in_string_ ? ~std::uint64_t{0} : 0);
    for (std::uint64_t b = (m.open | m.close) & ~inside; b; b &= b - 1) {
      const int i = std::countr_zero(b);
      if (m.open >> i & 1) {
        ++depth_;
      } else if (depth_ == 3) {
        in_string_ = false;
        return p + i;
      } else {
        --depth_;
      }
    }
    in_string_ = inside >> 63;
  }
  byte_loop_until = end;
  return p;
}

// Ranges are copied, not characters: an element or member value that lies
// within one chunk is handed over without a copy. The length bounds are
// checked where a piece ends, at each chunk's end and before any other
// failure, and reported at the byte that passed them.
void json_events_scanner::feed(std::string_view chunk) {
  const char* const begin = chunk.data();
  const char* const end = begin + chunk.size();
  chunk_ = begin;
  chunk_offset_ = offset_;
  capture_from_ = begin;
  key_from_ = begin;
  const char* byte_loop_until = begin;
  for (const char* p = begin; p < end;) {
    if (depth_ > 2 && !escaped_ && p >= byte_loop_until) p = skip_nested(p, end, byte_loop_until);
    if (in_string_) {
      p = skip_string(p, end);
      continue;
    }
    if (depth_ > 2) {
      while (p < end && !nested_structural[static_cast<unsigned char>(*p)]) ++p;
      if (p == end) break;
      if (*p == '"') {  // a string inside an element: nothing for structural() to do but skip it
        in_string_ = true;
        p = skip_string(p + 1, end);
        continue;
      }
    }
    offset_ = chunk_offset_ + static_cast<std::uint64_t>(p - begin) + 1;
    structural(p++);
  }
  offset_ = chunk_offset_ + chunk.size();
  if (reading_key_) {
    check_key(end);
    key_.append(key_from_, end);
  }
  if (capturing_) {
    check_piece(end);
    piece_.append(capture_from_, end);
  }
}

// Past a string's characters up to its closing quote (consumed), or to `end`.
const char* json_events_scanner::skip_string(const char* p, const char* end) {
  while (p < end) {
    if (escaped_) {
      escaped_ = false;
      ++p;
      continue;
    }
    while (p < end && *p != '"' && *p != '\\') ++p;
    if (p == end) break;
    if (*p++ == '\\') {
      escaped_ = true;
      continue;
    }
    in_string_ = false;
    if (reading_key_) {
      reading_key_ = false;
      check_key(p - 1);
      key_.append(key_from_, p - 1);
    }
    return p;
  }
  return p;
}

// Fails when the piece being captured is past max_piece bytes by `upto`.
void json_events_scanner::check_piece(const char* upto) {
  const std::uint64_t held = piece_.size() + static_cast<std::uint64_t>(upto - capture_from_);
  if (held <= max_piece_) return;
  offset_ = chunk_offset_ + static_cast<std::uint64_t>(upto - chunk_) - (held - max_piece_) + 1;
  fail("event " + std::to_string(elements_) + " (or a member) is longer than " + std::to_string(max_piece_ >> 20) +
           " MiB of JSON text",
       error::kind::too_long);
}

void json_events_scanner::check_key(const char* upto) {
  const std::uint64_t held = key_.size() + static_cast<std::uint64_t>(upto - key_from_);
  if (held <= max_piece_) return;
  offset_ = chunk_offset_ + static_cast<std::uint64_t>(upto - chunk_) - (held - max_piece_) + 1;
  fail("a top-level key is longer than " + std::to_string(max_piece_ >> 20) + " MiB of JSON text",
       error::kind::not_a_trace);
}

// The piece captured through `last` (included): a view of the chunk when it began in it.
std::string_view json_events_scanner::captured(const char* last) {
  check_piece(last + 1);
  if (piece_.empty()) return {capture_from_, static_cast<std::size_t>(last + 1 - capture_from_)};
  piece_.append(capture_from_, last + 1);
  return piece_;
}

void json_events_scanner::structural(const char* p) {
  const char c = *p;
  if (c == ' ' || c == '\n' || c == '\r' || c == '\t') return;
  if (!started_) {
    if (c != '{') fail("not a JSON object");
    started_ = true;
    depth_ = 1;
    return;
  }
  if (done_) {
    if (check_structure_) fail_structure(c);
    return;
  }
  if (in_events_ && depth_ == 2) {
    if (const char* what = non_object(c))
      fail("event " + std::to_string(elements_) + " is " + what + ", not an object", error::kind::element_not_object, what);
    if (check_structure_) check_in_events(c);
  } else if (depth_ == 1 && check_structure_) {
    check_top_level(c);
  }
  switch (c) {
    case '"':
      in_string_ = true;
      if (depth_ == 1 && state_ == state::expect_key) {
        ++members_;
        reading_key_ = true;
        key_.clear();
        key_from_ = p + 1;
        state_ = state::expect_colon;
      } else if (depth_ == 1 && state_ == state::expect_value) {
        start_value(p);
      }
      return;
    case ':':
      if (depth_ == 1 && state_ == state::expect_colon) state_ = state::expect_value;
      return;
    case '{': case '[': return open(p);
    case '}': case ']': return close(p);
    case ',':
      if (depth_ == 1) {
        if (capturing_) end_member(p);
        state_ = state::expect_key;
      }
      return;
    default:
      if (depth_ == 1 && state_ == state::expect_value) start_value(p);
      return;
  }
}

void json_events_scanner::open(const char* p) {
  if (depth_ == 1 && state_ == state::expect_value) {
    if (key_ == "traceEvents" && *p == '[') {
      in_events_ = seen_events_ = true;
      events_state_ = events_state::element_or_close;
      state_ = state::in_value;
    } else {
      start_value(p);
    }
  } else if (in_events_ && depth_ == 2 && *p == '{') {
    capturing_ = true;
    piece_.clear();
    capture_from_ = p;
    element_begin_ = offset_of(p);
  }
  ++depth_;
}

void json_events_scanner::close(const char* p) {
  --depth_;
  if (depth_ == 0) {
    if (capturing_) check_piece(p + 1);
    if (*p != '}') fail("a top-level object closed by ']'");
    if (capturing_) end_member(p);
    done_ = true;
  } else if (in_events_ && depth_ == 2 && capturing_ && *p == '}') {
    const std::string_view element = captured(p);
    capturing_ = false;
    ++elements_;
    element_end_ = offset_of(p) + 1;
    events_state_ = events_state::comma_or_close;
    on_element_(element);
    if (piece_.capacity() > (std::size_t{1} << 20)) std::string().swap(piece_);  // a large event's memory back
  } else if (in_events_ && depth_ == 1) {
    in_events_ = false;
    state_ = state::after_value;
    member_end_ = offset_of(p) + 1;
  }
}

void json_events_scanner::start_value(const char* p) {
  capturing_ = true;
  piece_.clear();
  capture_from_ = p;
  state_ = state::in_value;
}

// `p`: the ',' or '}' that ended the member value, left out with the space before it.
void json_events_scanner::end_member(const char* p) {
  std::string_view value = captured(p);
  capturing_ = false;
  value.remove_suffix(1);
  std::uint64_t end = offset_of(p);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\n' || value.back() == '\r' || value.back() == '\t'))
    value.remove_suffix(1), --end;
  member_end_ = end;
  if (on_member_) on_member_(key_, value);
}

// check_structure: a byte straight inside the top-level object (depth 1)
// where its grammar allows it; what a member's value holds is its parser's
// to check. A ']' here closes the object, which close() refuses.
void json_events_scanner::check_top_level(char c) const {
  const bool after_value = state_ == state::in_value || state_ == state::after_value;
  bool ok = false;
  switch (c) {
    case '"': ok = state_ == state::expect_key || state_ == state::expect_value; break;
    case ':': ok = state_ == state::expect_colon; break;
    case ',': ok = after_value; break;
    case '}': ok = after_value || (state_ == state::expect_key && members_ == 0); break;
    case ']': ok = true; break;
    case '{': case '[': ok = state_ == state::expect_value; break;
    default: ok = state_ == state::expect_value || state_ == state::in_value; break;
  }
  if (!ok) fail_structure(c);
}

// check_structure: a byte straight inside traceEvents (depth 2) that
// opens no value: an element begins, a comma or the array's end follows.
void json_events_scanner::check_in_events(char c) {
  switch (c) {
    case '{':
      if (events_state_ != events_state::comma_or_close) return;
      break;
    case ']':
      if (events_state_ != events_state::element) return;
      break;
    case ',':
      if (events_state_ == events_state::comma_or_close) {
        events_state_ = events_state::element;
        return;
      }
      break;
    default: break;
  }
  fail_structure(c);
}

void json_events_scanner::fail_structure(char c) const {
  const std::string what = c >= 0x20 && c < 0x7f ? std::string("'") + c + "'"
                                                 : "byte " + std::to_string(static_cast<unsigned char>(c));
  fail(done_ ? "data after the top-level object" : "unexpected " + what + (in_events_ ? " in \"traceEvents\"" : ""),
       error::kind::invalid_structure);
}

bool json_events_scanner::finish() {
  if (!started_) fail("not a JSON object (empty input)");
  if (done_) {
    if (!seen_events_) fail("no \"traceEvents\" array");
    return false;
  }
  if (seen_events_) return true;
  fail("the text ends before any \"traceEvents\" array");
}

}  // namespace proftrace::detail
