// Internal: the little-endian fields of a rank partial (rank_partial.hpp),
// written and read with bounds checked: a short or inconsistent buffer
// throws std::runtime_error, never reads past its end.
#pragma once

#include "proftrace/config.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

class partial_writer {
 public:
  explicit partial_writer(std::string& out) : out_(out) {}
  void u8(std::uint8_t v) { out_ += static_cast<char>(v); }
  void u32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out_ += static_cast<char>((v >> (8 * i)) & 0xFF);
  }
  void i32(std::int32_t v) { u32(static_cast<std::uint32_t>(v)); }
  void i64(std::int64_t v) {
    const auto u = static_cast<std::uint64_t>(v);
    for (int i = 0; i < 8; ++i) out_ += static_cast<char>((u >> (8 * i)) & 0xFF);
  }
  void text(std::string_view s) {
    u32(static_cast<std::uint32_t>(s.size()));
    out_ += s;
  }
  void raw(std::string_view s) { out_ += s; }

 private:
  std::string& out_;
};

class partial_reader {
 public:
  explicit partial_reader(std::string_view in) : in_(in) {}
  std::uint8_t u8() { return static_cast<std::uint8_t>(take(1)[0]); }
  std::uint32_t u32() {
    const std::string_view b = take(4);
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(static_cast<unsigned char>(b[i])) << (8 * i);
    return v;
  }
  std::int32_t i32() { return static_cast<std::int32_t>(u32()); }
  std::int64_t i64() {
    const std::string_view b = take(8);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(b[i])) << (8 * i);
    return static_cast<std::int64_t>(v);
  }
  std::string text() { return std::string(take(u32())); }
  std::string_view raw(std::size_t n) { return take(n); }
  // A count of items of at least `min_item_bytes` each: one the rest of the
  // buffer cannot hold is malformed (and would be a huge allocation).
  std::uint32_t count(std::size_t min_item_bytes) {
    const std::uint32_t n = u32();
    if (static_cast<std::uint64_t>(n) * min_item_bytes > left()) fail("a count past the end");
    return n;
  }
  std::size_t left() const noexcept { return in_.size() - pos_; }
  [[noreturn]] static void fail(const std::string& why) { throw std::runtime_error("malformed rank partial: " + why); }

 private:
  std::string_view take(std::size_t n) {
    if (n > left()) fail("cut short");
    const std::string_view s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }

  std::string_view in_;
  std::size_t pos_ = 0;
};

}  // namespace proftrace::detail
