// Internal: the few JSON writing helpers the trace writer needs, tuned for
// the flusher (no allocation beyond the output string).
#pragma once

#include "proftrace/config.hpp"

#include <bit>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// The length of the ill-formed or well-formed UTF-8 sequence at the start of
// `s` (s not empty, s[0] >= 0x80), per the Unicode Standard's table 3-7:
// {n, true} for a well-formed sequence of n bytes, {n, false} for a maximal
// ill-formed subpart of n bytes (replaced by one U+FFFD).
struct utf8_sequence {
  std::size_t length;
  bool valid;
};
inline utf8_sequence scan_utf8_sequence(std::string_view s) noexcept {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(0);
  std::size_t continuation = 0;
  unsigned char second_min = 0x80, second_max = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) continuation = 1;
  else if (lead >= 0xe0 && lead <= 0xef) continuation = 2;
  else if (lead >= 0xf0 && lead <= 0xf4) continuation = 3;
  else return {1, false};
  if (lead == 0xe0) second_min = 0xa0;       // overlong
  else if (lead == 0xed) second_max = 0x9f;  // UTF-16 surrogates
  else if (lead == 0xf0) second_min = 0x90;  // overlong
  else if (lead == 0xf4) second_max = 0x8f;  // above U+10FFFF
  for (std::size_t i = 1; i <= continuation; ++i) {
    const unsigned char min = i == 1 ? second_min : 0x80, max = i == 1 ? second_max : 0xbf;
    if (i >= s.size() || byte(i) < min || byte(i) > max) return {i, false};
  }
  return {continuation + 1, true};
}

// `s` as a JSON string. JSON text must be UTF-8, so bytes that are not (a
// name cut in the middle of a character, a Latin-1 file name) become U+FFFD,
// one per maximal ill-formed subpart as Unicode recommends: one bad name
// must not make the whole trace unreadable to a strict parser.
inline void append_json_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out.push_back('"');
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const auto seq = scan_utf8_sequence(s.substr(i));
      if (seq.valid) out.append(s.data() + i, seq.length);
      else out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      i += seq.length;
      continue;
    }
    ++i;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\u00";
          out.push_back(hex[c >> 4]);
          out.push_back(hex[c & 15]);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
}

template <class Int>
inline void append_int(std::string& out, Int v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, static_cast<std::size_t>(r.ptr - buf));  // (pointer, count): GCC 12's -Wrestrict misfires on (first, last)
}

// The eight decimal digits of v < 10^8, leading zeros included, as eight
// ASCII bytes in memory order (little-endian host): two lanes of four
// digits, then of two, then of one, each split by a multiply and a shift
// that are exact in this range (json_text_test checks).
inline std::uint64_t eight_digits(std::uint32_t v) noexcept {
  const std::uint64_t fours = v / 10000 | static_cast<std::uint64_t>(v % 10000) << 32;
  const std::uint64_t hi2 = ((fours * 10486) >> 20) & 0x0000007f0000007full;  // each lane / 100
  const std::uint64_t twos = ((fours - 100 * hi2) << 16) + hi2;
  std::uint64_t tens = ((twos * 103) >> 10) & 0x000f000f000f000full;  // each lane / 10
  tens += (twos - 10 * tens) << 8;
  return tens | 0x3030303030303030ull;
}

// v < 10^8 in decimal, no leading zeros, at `p`, which has room for 8
// characters; returns the end. One eight_digits and a shift.
inline char* put_below_1e8(char* p, std::uint32_t v) noexcept {
  const std::uint64_t d = eight_digits(v);
  const int zeros = std::countr_zero((d - 0x3030303030303030ull) | std::uint64_t{1} << 56) / 8;  // at most 7
  const std::uint64_t digits = d >> (8 * zeros);
  std::memcpy(p, &digits, 8);
  return p + 8 - zeros;
}

// put_us3 for 0 <= ns < 10^8 at `p`, which has room for 16 characters.
inline char* put_us3_below_1e8(char* p, std::uint32_t ns) noexcept {
  const std::uint64_t d = eight_digits(ns);  // "iiiiifff"
  const int zeros = std::countr_zero((d - 0x3030303030303030ull) | std::uint64_t{1} << 32) / 8;  // one digit stays
  const std::uint64_t integer = d >> (8 * zeros);
  std::memcpy(p, &integer, 8);
  p += 5 - zeros;
  const std::uint64_t fraction = (d >> 40) << 8 | '.';
  std::memcpy(p, &fraction, 8);
  return p + 4;
}

// Nanoseconds as microseconds with exactly three decimals ("12.345") at
// `p`, which has room for 32 characters; returns the end.
inline char* put_us3(char* p, std::int64_t ns) noexcept {
  std::uint64_t magnitude = static_cast<std::uint64_t>(ns);
  if (ns < 0) {
    *p++ = '-';
    magnitude = 0 - magnitude;  // INT64_MIN too: its magnitude fits unsigned
  }
  p = std::to_chars(p, p + 24, magnitude / 1000).ptr;
  const auto frac = static_cast<int>(magnitude % 1000);
  p[0] = '.';
  p[1] = static_cast<char>('0' + frac / 100);
  p[2] = static_cast<char>('0' + frac / 10 % 10);
  p[3] = static_cast<char>('0' + frac % 10);
  return p + 4;
}

// The same appended to `out`, formatted on the stack and appended once.
inline void append_us3(std::string& out, std::int64_t ns) {
  char buf[32];
  out.append(buf, static_cast<std::size_t>(put_us3(buf, ns) - buf));
}

// A metadata ("ph": "M") event at ts 0 up to the opening of its args:
// {"name": "<what>", "ph": "M", "ts": 0.000, "pid": P, "tid": T, "args": {
// The caller writes the args and closes with "}}".
template <class Pid, class Tid>
inline void open_metadata_event(std::string& out, std::string_view what, Pid pid, Tid tid, std::int64_t ts_ns = 0) {
  out += "{\"name\": \"";
  out += what;
  out += "\", \"ph\": \"M\", \"ts\": ";
  append_us3(out, ts_ns);
  out += ", \"pid\": ";
  append_int(out, pid);
  out += ", \"tid\": ";
  append_int(out, tid);
  out += ", \"args\": {";
}

// The time base of every trace ("baseTimeNanoseconds"), as Kineto's: one
// fixed Unix time shared by every process, so that `ts` of traces from
// different processes and hosts compare directly (HTA aligns ranks on `ts`
// and ignores the base). It is the last multiple of trace_base_period_ns
// (2^51 ns, about 26 days) before the process's first trace: every `ts` is
// then below 2^53 ns for runs shorter than about 78 days, so a reader that
// parses `ts` as a double keeps its nanoseconds exact. Processes that start
// on either side of a period boundary (about 26 days apart) get bases one
// period apart; PROFTRACE_TRACE_BASE_NS (Unix ns, an integer) pins the base
// for every process that sees it. Chosen once per process.
inline constexpr std::int64_t trace_base_period_ns = std::int64_t{1} << 51;
inline std::int64_t trace_base_ns(std::int64_t first_unix_ns) {
  static const std::int64_t base = [first_unix_ns] {
    if (const char* v = std::getenv("PROFTRACE_TRACE_BASE_NS"); v && *v) {
      std::int64_t pinned = 0;
      const char* end = v + std::char_traits<char>::length(v);
      if (auto [p, ec] = std::from_chars(v, end, pinned); ec == std::errc() && p == end && pinned >= 0) return pinned;
    }
    return first_unix_ns - first_unix_ns % trace_base_period_ns;
  }();
  return base;
}

// JSON has no NaN or infinity: those become null.
inline void append_double(std::string& out, double v) {
  if (v != v || v - v != 0) {
    out += "null";
    return;
  }
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, static_cast<std::size_t>(r.ptr - buf));  // (pointer, count): GCC 12's -Wrestrict misfires on (first, last)
}


// A scope's input shapes (open_scope::shapes) as the trace's "Input Dims"
// and the table's key: "[[2, 3], [3]]"; nothing for no shapes record.
inline void append_shapes_json(std::string& out, std::span<const std::int64_t> shapes) {
  if (shapes.empty()) return;
  out += '[';
  for (std::size_t i = 1; i < shapes.size();) {
    if (i > 1) out += ", ";
    out += '[';
    const auto rank = static_cast<std::size_t>(shapes[i++]);
    for (std::size_t d = 0; d < rank && i < shapes.size(); ++d) {
      if (d) out += ", ";
      append_int(out, shapes[i++]);
    }
    out += ']';
  }
  out += ']';
}
inline std::string shapes_json(std::span<const std::int64_t> shapes) {
  std::string out;
  append_shapes_json(out, shapes);
  return out;
}
}  // namespace proftrace::detail
