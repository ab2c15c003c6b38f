// tests/support/protobuf_wire.hpp — an independent decoder of protobuf's wire
// format for the tests, written from ../shared/reference/perfetto-trace-format.md
// (not the library's reader): fields of a message, by number.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace test_wire {

struct pb_field {
  std::uint32_t number = 0;
  int wire = 0;
  std::uint64_t value = 0;
  std::string_view bytes;
};

inline std::vector<pb_field> decode(std::string_view m) {
  std::vector<pb_field> out;
  std::size_t i = 0;
  const auto varint = [&] {
    std::uint64_t r = 0;
    for (int shift = 0;; shift += 7) {
      REQUIRE(i < m.size());
      REQUIRE(shift < 64);
      const auto b = static_cast<unsigned char>(m[i++]);
      r |= std::uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return r;
    }
  };
  while (i < m.size()) {
    const std::uint64_t key = varint();
    pb_field f;
    f.number = static_cast<std::uint32_t>(key >> 3);
    f.wire = static_cast<int>(key & 7);
    if (f.wire == 0) {
      f.value = varint();
    } else if (f.wire == 1 || f.wire == 5) {
      const std::size_t n = f.wire == 1 ? 8 : 4;
      REQUIRE(i + n <= m.size());
      std::memcpy(&f.value, m.data() + i, n);  // little endian host
      i += n;
    } else {
      REQUIRE(f.wire == 2);
      const std::uint64_t n = varint();
      REQUIRE(i + n <= m.size());
      f.bytes = m.substr(i, n);
      i += n;
    }
    out.push_back(f);
  }
  return out;
}

inline std::vector<pb_field> all(const std::vector<pb_field>& fs, std::uint32_t number) {
  std::vector<pb_field> r;
  for (const auto& f : fs)
    if (f.number == number) r.push_back(f);
  return r;
}
inline const pb_field* one(const std::vector<pb_field>& fs, std::uint32_t number) {
  for (const auto& f : fs)
    if (f.number == number) return &f;
  return nullptr;
}
inline double as_double(std::uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

}  // namespace test_wire
