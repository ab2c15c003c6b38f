// libFuzzer target: append_json_string (every name in a trace goes through
// it) on arbitrary bytes must give one JSON string that Boost.JSON's strict
// parser accepts; valid UTF-8 must read back unchanged, and otherwise the
// valid sequences must survive, in order, with U+FFFD in place of the rest.
#include <boost/json.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "formats/json_text.hpp"

namespace {

// An independent UTF-8 decoder (by code point value rather than by the
// byte ranges json_text.hpp uses): the length of the well-formed sequence
// at `s`, or 0 when there is none.
std::size_t valid_sequence_length(std::string_view s) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  std::size_t n = 0;
  std::uint32_t cp = 0;
  if (b(0) < 0x80) return 1;
  if ((b(0) & 0xe0) == 0xc0) n = 2, cp = b(0) & 0x1f;
  else if ((b(0) & 0xf0) == 0xe0) n = 3, cp = b(0) & 0x0f;
  else if ((b(0) & 0xf8) == 0xf0) n = 4, cp = b(0) & 0x07;
  else return 0;
  if (s.size() < n) return 0;
  for (std::size_t i = 1; i < n; ++i) {
    if ((b(i) & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (b(i) & 0x3f);
  }
  static constexpr std::uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < smallest[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

const std::string replacement = "\xEF\xBF\xBD";

std::string without_replacements(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    if (s.substr(i, 3) == replacement) i += 3;
    else out.push_back(s[i++]);
  }
  return out;
}

[[noreturn]] void fail(const char* what, const std::string& json) {
  std::fprintf(stderr, "json_string_fuzzer: %s: %s\n", what, json.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string json;
  proftrace::detail::append_json_string(json, in);

  boost::json::parse_options strict;
  strict.allow_invalid_utf8 = false;
  boost::json::error_code ec;
  const auto value = boost::json::parse(json, ec, {}, strict);
  if (ec) fail(ec.message().c_str(), json);
  if (!value.is_string()) fail("not a JSON string", json);
  const std::string_view back = value.as_string();

  std::string valid_only;
  bool all_valid = true;
  for (std::size_t i = 0; i < in.size();) {
    const std::size_t n = valid_sequence_length(in.substr(i));
    if (n == 0) {
      all_valid = false;
      ++i;
      continue;
    }
    valid_only.append(in.substr(i, n));
    i += n;
  }
  if (all_valid && back != in) fail("valid UTF-8 did not read back unchanged", json);
  if (!all_valid && without_replacements(back) != without_replacements(valid_only))
    fail("the valid sequences did not survive", json);
  return 0;
}
