// Internal: protobuf wire format, appended straight into a std::string.
//
// Scalars are written in place; a nested message reserves one byte for its
// length, is written after it, and is closed by backpatching the length
// (moving the body up when the length needs more bytes: 128 bytes or more),
// so no scratch buffer and no allocation beyond the output's own growth. ../shared/reference/perfetto-trace-format.md has the wire types.
//
//   std::string out;
//   const auto packet = proto::open(out, 1);   // Trace.packet
//   proto::put_uint(out, 10, sequence_id);     // trusted_packet_sequence_id
//   proto::put_string(out, 23, "step");
//   proto::close(out, packet);
#pragma once

#include "proftrace/config.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail::proto {

enum wire : std::uint32_t { varint = 0, fixed64 = 1, length_delimited = 2, fixed32 = 5 };

inline void put_varint(std::string& out, std::uint64_t v) {
  if (v < 0x80) {  // keys, types, small ids: most varints here
    out.push_back(static_cast<char>(v));
    return;
  }
  char buf[10];
  std::size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out.append(buf, n);
}

inline void put_key(std::string& out, std::uint32_t field, wire type) {
  put_varint(out, (std::uint64_t{field} << 3) | type);
}

inline void put_uint(std::string& out, std::uint32_t field, std::uint64_t v) {
  put_key(out, field, varint);
  put_varint(out, v);
}

// int32/int64 fields: two's complement, so a negative takes ten bytes.
inline void put_int(std::string& out, std::uint32_t field, std::int64_t v) {
  put_uint(out, field, static_cast<std::uint64_t>(v));
}

inline void put_fixed64(std::string& out, std::uint32_t field, std::uint64_t v) {
  put_key(out, field, fixed64);
  char buf[8];
  for (int i = 0; i < 8; ++i) buf[i] = static_cast<char>(v >> (8 * i));
  out.append(buf, 8);
}

inline void put_double(std::string& out, std::uint32_t field, double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  put_fixed64(out, field, bits);
}

inline void put_string(std::string& out, std::uint32_t field, std::string_view s) {
  put_key(out, field, length_delimited);
  put_varint(out, s.size());
  out.append(s);
}

// The same varints written at `p` (room for ten bytes), for packets built in
// place; return the byte after. A Unix-ns timestamp (2^56 to 2^63 ns: 1972
// to 2262) is a nine-byte varint: its low 56 bits spread 7 to a byte, each
// with the continuation bit, in three halving steps (no loop, no BMI2),
// then the top byte.
inline char* write_varint9(char* p, std::uint64_t v) noexcept {
  std::uint64_t x = v & 0x00ffffffffffffffull;
  x = (x & 0x000000000fffffffull) | ((x << 4) & 0x0fffffff00000000ull);
  x = (x & 0x00003fff00003fffull) | ((x << 2) & 0x3fff00003fff0000ull);
  x = (x & 0x007f007f007f007full) | ((x << 1) & 0x7f007f007f007f00ull);
  x |= 0x8080808080808080ull;
  std::memcpy(p, &x, 8);  // little-endian host: byte i holds bits 7i..7i+6
  p[8] = static_cast<char>(v >> 56);
  return p + 9;
}

inline char* write_varint(char* p, std::uint64_t v) noexcept {
  if (v < 0x80) {  // the commonest: a leaf's duration, a delta between close events
    *p = static_cast<char>(v);
    return p + 1;
  }
  if (v >> 56 != 0 && v >> 63 == 0) return write_varint9(p, v);
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

// Opens a nested message; returns the position its close() needs. One
// byte is reserved for the length: most messages here (an annotation, an
// event, a whole packet) are under 128 bytes, so closing them moves nothing.
[[nodiscard]] inline std::size_t open(std::string& out, std::uint32_t field) {
  put_key(out, field, length_delimited);
  out.push_back('\0');
  return out.size() - 1;
}

inline void close(std::string& out, std::size_t at) {
  std::uint64_t len = out.size() - (at + 1);
  if (len < 0x80) {
    out[at] = static_cast<char>(len);
    return;
  }
  char buf[10];
  std::size_t n = 0;
  while (len >= 0x80) {
    buf[n++] = static_cast<char>((len & 0x7f) | 0x80);
    len >>= 7;
  }
  buf[n++] = static_cast<char>(len);
  out[at] = buf[0];
  out.insert(at + 1, buf + 1, n - 1);  // the body moves up by the extra length bytes
}

// Each (a, b) of `pairs` as a repeated message `item` holding the fields
// `first` and `second` (an integer as a varint, text as a string).
template <class Pairs>
void put_pair_messages(std::string& out, std::uint32_t item, std::uint32_t first, std::uint32_t second,
                       const Pairs& pairs) {
  const auto put = [&out](std::uint32_t f, const auto& v) {
    if constexpr (std::is_integral_v<std::decay_t<decltype(v)>>) put_uint(out, f, v);
    else put_string(out, f, v);
  };
  for (const auto& [a, b] : pairs) {
    const std::size_t message = open(out, item);
    put(first, a);
    put(second, b);
    close(out, message);
  }
}

}  // namespace detail::proto
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
