// append_json_string, the escaping behind every name in a trace: quotes,
// backslashes and control characters escaped, valid UTF-8 kept as is, and
// bytes that are not UTF-8 replaced by U+FFFD so that the trace stays JSON
// a strict parser accepts.
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "formats/json_text.hpp"

namespace {

using proftrace::detail::append_json_string;

std::string escaped(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

// What a strict parser (invalid UTF-8 is an error) reads back.
std::string parsed(const std::string& json) {
  boost::json::error_code ec;
  boost::json::parse_options strict;
  strict.allow_invalid_utf8 = false;
  const auto v = boost::json::parse(json, ec, {}, strict);
  REQUIRE_MESSAGE(!ec, json << ": " << ec.message());
  REQUIRE(v.is_string());
  return std::string(v.as_string());
}

const std::string replacement = "\xEF\xBF\xBD";

}  // namespace

TEST_CASE("quotes, backslashes, newlines and control characters are escaped and read back") {
  CHECK(escaped("plain name") == "\"plain name\"");
  CHECK(escaped("say \"hi\"") == R"("say \"hi\"")");
  CHECK(escaped("a\\b") == R"("a\\b")");
  CHECK(escaped("line\nnext\ttab\rret\bbs\ffeed") == R"("line\nnext\ttab\rret\bbs\ffeed")");
  CHECK(escaped(std::string("nul\0one\x01 esc\x1b del\x7f", 18)) == R"("nul\u0000one\u0001 esc\u001b del\u007f")");
  for (const std::string& s : {std::string("say \"hi\"\\"), std::string("\n\t\r\b\f"), std::string("\0\x01\x1f\x7f", 4)})
    CHECK(parsed(escaped(s)) == s);
}

TEST_CASE("valid UTF-8 is kept byte for byte") {
  for (const std::string s : {"caf\xC3\xA9", "\xE4\xB8\xAD\xE6\x96\x87", "\xF0\x9F\x98\x80 emoji", "\xEF\xBF\xBD",
                              "\xF4\x8F\xBF\xBF", "\xED\x9F\xBF"}) {
    CAPTURE(s);
    CHECK(escaped(s) == "\"" + s + "\"");
    CHECK(parsed(escaped(s)) == s);
  }
}

TEST_CASE("bytes that are not UTF-8 become U+FFFD, one per maximal ill-formed subpart") {
  struct example {
    std::string in, out;
  };
  const example examples[] = {
      {"\x80", replacement},                                          // a lone continuation byte
      {"ab\xE2\x82", "ab" + replacement},                             // a name cut inside a character
      {"\xE2\x82" "A", replacement + "A"},                            // ... followed by more text
      {"\xF0\x9F\x98", replacement},                                  // a 4-byte character cut after 3
      {"\xC0\xAF", replacement + replacement},                        // overlong '/': C0 is never valid
      {"\xE0\x80\xAF", replacement + replacement + replacement},      // overlong 3-byte form
      {"\xED\xA0\x80", replacement + replacement + replacement},      // a UTF-16 surrogate
      {"\xF4\x90\x80\x80", replacement + replacement + replacement + replacement},  // above U+10FFFF
      {"\xF5\xFF", replacement + replacement},                        // never in UTF-8
      {"caf\xE9", "caf" + replacement},                               // Latin-1
      {"\xC3\xA9\xC3", "\xC3\xA9" + replacement},                     // valid, then cut
  };
  for (const auto& e : examples) {
    CAPTURE(e.in);
    CHECK(escaped(e.in) == "\"" + e.out + "\"");
    CHECK(parsed(escaped(e.in)) == e.out);
  }
  // Escapes and replacements together still make one valid string.
  const std::string mixed = "q\"\xFF\n\xE2\x82\\\x01";
  CHECK(parsed(escaped(mixed)) == "q\"" + replacement + "\n" + replacement + "\\\x01");
}

// The times behind every "ts" and "dur": put_us3 against printf.
TEST_CASE("put_us3 writes microseconds with three decimals as printf does") {
  using proftrace::detail::put_us3;
  char want[32], got[32];
  const std::int64_t samples[] = {0, 1, 999, 1000, 99'999'999, 100'000'000, 100'000'001, 123'456'789'012,
                                  999'999'999'999'999, 1'000'000'000'000'000, 2'251'799'813'685'247,
                                  9'999'999'999'999'999, 10'000'000'000'000'000, -5, -123'456'789'012,
                                  std::int64_t{1} << 62};
  for (const std::int64_t ns : samples) {
    const std::int64_t a = ns < 0 ? -ns : ns;
    std::snprintf(want, sizeof want, "%s%lld.%03lld", ns < 0 ? "-" : "", static_cast<long long>(a / 1000),
                  static_cast<long long>(a % 1000));
    CHECK(std::string(got, put_us3(got, ns)) == std::string(want));
  }
  // The extremes (a crafted trace's wrapped duration): exact, no overflow.
  CHECK(std::string(got, put_us3(got, INT64_MIN)) == "-9223372036854775.808");
  CHECK(std::string(got, put_us3(got, INT64_MAX)) == "9223372036854775.807");
}

// The eight digits behind every "ts": against printf for every value below
// 10^8 in a stride that visits every last digit and every carry position.
TEST_CASE("eight_digits writes the same eight digits as printf") {
  using proftrace::detail::eight_digits;
  char want[16], got[8];
  const auto check = [&](std::uint32_t v) {
    const std::uint64_t e = eight_digits(v);
    std::memcpy(got, &e, 8);
    std::snprintf(want, sizeof want, "%08u", static_cast<unsigned>(v));
    return std::string_view(got, 8) == std::string_view(want, 8);
  };
  for (std::uint32_t v = 0; v < 100'000'000; v += (v < 1'000'000 ? 1 : 997))
    if (!check(v)) FAIL("eight_digits(" << v << ")");
  for (std::uint32_t v : {9'999'999u, 10'000'000u, 99'999'999u, 99'990'000u, 10'009'999u}) CHECK(check(v));
}

// The short forms behind the common scope's "dur" and "External id".
TEST_CASE("put_us3_below_1e8 and put_below_1e8 write what put_us3 and printf write") {
  using proftrace::detail::put_below_1e8;
  using proftrace::detail::put_us3;
  using proftrace::detail::put_us3_below_1e8;
  char want[32], got[32];
  const auto check = [&](std::uint32_t v) {
    std::snprintf(want, sizeof want, "%u", static_cast<unsigned>(v));
    if (std::string(got, put_below_1e8(got, v)) != want) return false;
    const std::string us3(want, put_us3(want, v));
    return std::string(got, put_us3_below_1e8(got, v)) == us3;
  };
  for (std::uint32_t v = 0; v < 100'000'000; v += (v < 100'000 ? 1 : 9973))
    if (!check(v)) FAIL("v = " << v);
  for (std::uint32_t v : {9u, 10u, 99u, 100u, 999u, 1000u, 9'999'999u, 10'000'000u, 99'999'999u}) CHECK(check(v));
}
