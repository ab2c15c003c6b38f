// Internal: walks the fields of one protobuf message held in memory, with
// every length checked against the bytes that are there (the input may be
// anything: a cut file, garbage, a fuzzer's).
//
//   proto::field_reader r(bytes);
//   proto::field f;
//   while (r.next(f))
//     if (f.number == 8 && f.type == proto::varint) ts = f.value;
//   if (r.error()) throw std::runtime_error(r.error());
#pragma once

#include "proftrace/config.hpp"
#include "proto_encoder.hpp"

#include <cstdint>
#include <cstring>
#include <string_view>

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail::proto {

struct field {
  std::uint32_t number = 0;
  wire type = varint;
  std::uint64_t value = 0;  // varint, fixed64 and fixed32 fields
  std::string_view bytes;   // length-delimited fields

  double as_double() const noexcept {
    double d;
    std::memcpy(&d, &value, sizeof d);
    return d;
  }
};

// Reads a varint at `p`; nullptr when it runs past `end` or over 10 bytes.
PROFTRACE_ALWAYS_INLINE const char* get_varint(const char* p, const char* end, std::uint64_t& v) noexcept {
  if (p < end && !(static_cast<unsigned char>(*p) & 0x80)) {  // most keys and small values: one byte
    v = static_cast<unsigned char>(*p);
    return p + 1;
  }
  v = 0;
  for (int shift = 0; shift < 70 && p < end; shift += 7) {
    const auto b = static_cast<unsigned char>(*p++);
    v |= std::uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) return p;
  }
  return nullptr;
}

class field_reader {
 public:
  explicit field_reader(std::string_view message) noexcept : p_(message.data()), end_(p_ + message.size()) {}

  // The next field; false at the end of the message or on malformed input
  // (then error() is not null).
  PROFTRACE_ALWAYS_INLINE bool next(field& f) noexcept {
    if (p_ == end_ || error_) return false;
    std::uint64_t key = 0;
    p_ = get_varint(p_, end_, key);
    if (!p_ || (key >> 3) == 0 || (key >> 3) > 0x1fffffff) return fail("a malformed field key");
    f.number = static_cast<std::uint32_t>(key >> 3);
    f.type = static_cast<wire>(key & 7);
    switch (f.type) {
      case varint:
        p_ = get_varint(p_, end_, f.value);
        return p_ ? true : fail("a varint cut short");
      case fixed64: return fixed(f, 8);
      case fixed32: return fixed(f, 4);
      case length_delimited: {
        std::uint64_t len = 0;
        p_ = get_varint(p_, end_, len);
        if (!p_ || len > static_cast<std::uint64_t>(end_ - p_)) return fail("a length beyond the message's end");
        f.bytes = std::string_view(p_, static_cast<std::size_t>(len));
        p_ += len;
        return true;
      }
    }
    return fail("an unknown wire type");
  }

  const char* error() const noexcept { return error_; }

 private:
  bool fixed(field& f, int n) noexcept {
    if (end_ - p_ < n) return fail("a fixed-size field cut short");
    f.value = 0;
    for (int i = 0; i < n; ++i) f.value |= std::uint64_t{static_cast<unsigned char>(p_[i])} << (8 * i);
    p_ += n;
    return true;
  }
  bool fail(const char* why) noexcept {
    error_ = why;
    p_ = nullptr;
    return false;
  }

  const char* p_;
  const char* end_;
  const char* error_ = nullptr;
};

}  // namespace detail::proto
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
