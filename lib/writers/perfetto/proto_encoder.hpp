// Internal: protobuf wire format, appended straight into a std::string.
//
// Scalars are written in place; a nested message reserves room for its
// length, is written after it, and is closed by backpatching the length
// (moving the body back when the varint turns out shorter than the room
// reserved), so no scratch buffer and no allocation beyond the output's own
// growth. ../shared/reference/perfetto-trace-format.md has the wire types.
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

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail::proto {

enum wire : std::uint32_t { varint = 0, fixed64 = 1, length_delimited = 2, fixed32 = 5 };

inline void put_varint(std::string& out, std::uint64_t v) {
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

// Room reserved for a nested message's length: 4 varint bytes, 256 MiB.
inline constexpr std::size_t length_room = 4;

// Opens a nested message; returns the position its close() needs.
[[nodiscard]] inline std::size_t open(std::string& out, std::uint32_t field) {
  put_key(out, field, length_delimited);
  const std::size_t at = out.size();
  out.append(length_room, '\0');
  return at;
}

inline void close(std::string& out, std::size_t at) {
  const std::size_t body = at + length_room;
  std::uint64_t len = out.size() - body;
  char buf[10];
  std::size_t n = 0;
  while (len >= 0x80) {
    buf[n++] = static_cast<char>((len & 0x7f) | 0x80);
    len >>= 7;
  }
  buf[n++] = static_cast<char>(len);
  if (n <= length_room) {
    std::memcpy(out.data() + at, buf, n);
    if (n < length_room) {
      std::memmove(out.data() + at + n, out.data() + body, out.size() - body);
      out.resize(out.size() - (length_room - n));
    }
  } else {
    out.insert(at + length_room, buf + length_room, n - length_room);  // over 256 MiB: rare, so simply grown
    std::memcpy(out.data() + at, buf, length_room);
  }
}

}  // namespace detail::proto
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
