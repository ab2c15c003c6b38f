// json_events_scanner, the splitter under kineto_json_reader: the byte
// offsets of each element and member at every chunk size, and its check of
// the structure around the pieces (check_structure), which together with a
// parse of each piece must refuse exactly what a parse of the whole text
// refuses.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <cstdint>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "formats/kineto_json/json_events_scanner.hpp"
#include "kineto_json_sample.hpp"

using proftrace::detail::json_events_scanner;

namespace {

// kineto_json_sample with one more member after a space before its comma.
const std::string sample = [] {
  std::string s = kineto_json_sample;
  return s.replace(s.rfind("\n}\n"), 3, " , \"empty\": {}\n}\n");
}();

// What a scan of `text`, `chunk` bytes at a time, found.
struct scan {
  std::vector<std::string> elements, members;  // a member as its key, '\0', its value
  std::vector<std::uint64_t> begins, ends, member_ends;
  bool cut = false;
  bool failed = false;
  json_events_scanner::error::kind kind{};
  std::string error;
};

scan run(const std::string& text, std::size_t chunk, bool check) {
  scan out;
  json_events_scanner* self = nullptr;
  json_events_scanner s(
      [&](std::string_view e) {
        out.elements.emplace_back(e);
        out.begins.push_back(self->element_begin());
        out.ends.push_back(self->element_end());
      },
      [&](std::string_view k, std::string_view v) {
        out.members.push_back(std::string(k) + '\0' + std::string(v));
        out.member_ends.push_back(self->member_end());
      },
      std::size_t{64} << 20, check);
  self = &s;
  try {
    for (std::size_t at = 0; at < text.size(); at += chunk) s.feed(std::string_view(text).substr(at, chunk));
    out.cut = s.finish();
  } catch (const json_events_scanner::error& e) {
    out.failed = true;
    out.kind = e.what_kind;
    out.error = e.what();
  }
  return out;
}

bool parses(std::string_view text) {
  boost::system::error_code ec;
  boost::json::parse(text, ec);
  return !ec;
}

// Whether the scan with the check, and a parse of each piece it handed over
// (elements, member values, keys as strings), accept the whole text.
bool accepted_piecewise(const std::string& text) {
  const scan s = run(text, 7, true);
  if (s.failed || s.cut) return false;
  for (const auto& e : s.elements)
    if (!parses(e)) return false;
  for (const auto& m : s.members) {
    const std::size_t zero = m.find('\0');
    if (!parses("\"" + m.substr(0, zero) + "\"") || !parses(m.substr(zero + 1))) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("json_events_scanner: each element's and member's offsets in the text, at every chunk size") {
  for (std::size_t chunk = 1; chunk <= sample.size(); ++chunk) {
    CAPTURE(chunk);
    const scan s = run(sample, chunk, false);
    REQUIRE_FALSE(s.failed);
    REQUIRE(s.elements.size() == 2);
    for (std::size_t i = 0; i < s.elements.size(); ++i)
      CHECK(sample.substr(s.begins[i], s.ends[i] - s.begins[i]) == s.elements[i]);
    REQUIRE(s.members.size() == 4);
    for (std::size_t i = 0; i < s.members.size(); ++i) {
      const std::string value = s.members[i].substr(s.members[i].find('\0') + 1);
      CHECK(sample.substr(0, s.member_ends[i]).ends_with(value));
    }
    CHECK(sample.substr(0, s.member_ends[2]).ends_with("1700000000000000000"));
  }
}

TEST_CASE("json_events_scanner: the structure check accepts a trace, and is off unless asked for") {
  for (std::size_t chunk = 1; chunk <= sample.size(); ++chunk) {
    const scan checked = run(sample, chunk, true), plain = run(sample, chunk, false);
    CHECK_FALSE(checked.failed);
    CHECK(checked.elements == plain.elements);
    CHECK(checked.members == plain.members);
  }
  CHECK(run("{}", 1, true).failed);  // no traceEvents: not a trace, checked or not
  CHECK_FALSE(run(" {\"traceEvents\": [ ] } \n\t", 3, true).failed);
  const std::string missing_comma = "{\"traceEvents\": [{}\n {}]}";
  CHECK_FALSE(run(missing_comma, 4, false).failed);  // as the converter and merge read today
  const scan refused = run(missing_comma, 4, true);
  REQUIRE(refused.failed);
  CHECK(refused.kind == json_events_scanner::error::kind::invalid_structure);
  CHECK(refused.error == "unexpected '{' in \"traceEvents\" (at byte 22)");
}

TEST_CASE("json_events_scanner: what the check refuses, named at its byte") {
  const std::pair<const char*, const char*> cases[] = {
      {"{\"traceEvents\": [{},]}", "unexpected ']' in \"traceEvents\" (at byte 21)"},
      {"{\"traceEvents\": [,{}]}", "unexpected ',' in \"traceEvents\" (at byte 18)"},
      {"{\"traceEvents\": [{}]} x", "data after the top-level object (at byte 23)"},
      {"{\"a\" 1, \"traceEvents\": []}", "unexpected '1' (at byte 6)"},
      {"{\"a\": 1 \"traceEvents\": []}", "unexpected '\"' (at byte 9)"},
      {"{\"traceEvents\": [],}", "unexpected '}' (at byte 20)"},
      {"{, \"traceEvents\": []}", "unexpected ',' (at byte 2)"},
      {"{\"a\": , \"traceEvents\": []}", "unexpected ',' (at byte 7)"},
      {"{\"traceEvents\": [] \"a\": 1}", "unexpected '\"' (at byte 20)"},
      {"{\"a\": {} [], \"traceEvents\": []}", "unexpected '[' (at byte 10)"},
  };
  for (const auto& [text, message] : cases) {
    CAPTURE(text);
    CHECK_FALSE(parses(text));
    for (std::size_t chunk = 1; chunk <= 5; ++chunk) {
      const scan s = run(text, chunk, true);
      REQUIRE(s.failed);
      CHECK(s.kind == json_events_scanner::error::kind::invalid_structure);
      CHECK(s.error == message);
    }
  }
}

// The property a reader that parses element by element relies on: the
// check plus a parse of each piece refuses exactly the texts a parse of the
// whole refuses, for every text one byte away from a trace (a byte left
// out, or one of the structural ones put in).
TEST_CASE("json_events_scanner: checked pieces that parse make a text that parses, one byte away from a trace") {
  std::vector<std::string> texts;
  for (std::size_t at = 0; at < sample.size(); ++at) {
    texts.push_back(sample.substr(0, at) + sample.substr(at + 1));
    for (const char c : std::string(",:{}[]\"x 1"))
      texts.push_back(sample.substr(0, at) + c + sample.substr(at));
  }
  std::size_t refused = 0;
  for (const auto& text : texts) {
    CAPTURE(text);
    const bool whole = parses(text);
    const bool piecewise = accepted_piecewise(text);
    if (!whole) ++refused;
    // A whole that parses may still not be a trace (traceEvents no array,
    // an element not an object): only acceptance must imply it.
    if (piecewise) CHECK(whole);
    if (whole && text.find("\"traceEvents\": [") != std::string::npos && !piecewise) {
      const scan s = run(text, 7, true);
      CHECK(s.failed);
      CHECK(s.kind != json_events_scanner::error::kind::invalid_structure);
    }
  }
  CHECK(refused > texts.size() / 2);
}

namespace {

// A string's JSON text of `length` pieces, each a letter, a bracket, a
// space, an escaped quote or an escaped backslash: brackets and quotes the
// splitter must see as a string's, escapes falling anywhere in its blocks.
std::string random_json_string(std::mt19937& random, std::size_t length) {
  static const char* const pieces[] = {"a", "b", "[", "]", "{", "}", " ", ",", "\\\"", "\\\\"};
  std::string s = "\"";
  for (std::size_t i = 0; i < length; ++i) s += pieces[random() % std::size(pieces)];
  return s + "\"";
}

// Events longer than the splitter's 64-byte blocks, strings of every
// length and content above, nested arrays and objects across blocks.
std::string long_events_trace() {
  std::mt19937 random(37);
  std::string t = "{\"traceEvents\": [\n";
  for (int i = 0; i < 300; ++i) {
    const auto str = [&] { return random_json_string(random, random() % (i < 100 ? 8 : 140)); };
    if (i) t += ",\n";
    t += "{\"name\": " + str() + ", \"args\": {\"Input Dims\": [[1, 2], [" + std::to_string(i) + "]], \"s\": " + str() +
         ", \"o\": {\"x\": [{}, [" + str() + "]]}}, \"pad\": " + str() + "}";
  }
  return t + "\n], \"after\": {\"k\": [" + random_json_string(random, 200) + "]}}\n";
}

}  // namespace

TEST_CASE("json_events_scanner: long events with brackets, quotes and escapes in strings, at any chunking") {
  const std::string text = long_events_trace();
  const boost::json::value whole = boost::json::parse(text);
  const auto& events = whole.at("traceEvents").as_array();
  for (const std::size_t chunk : {std::size_t{1}, std::size_t{7}, std::size_t{63}, std::size_t{64}, std::size_t{65},
                                  std::size_t{200}, std::size_t{4096}, text.size()}) {
    CAPTURE(chunk);
    const scan s = run(text, chunk, true);
    REQUIRE_FALSE(s.failed);
    REQUIRE(s.elements.size() == events.size());
    for (std::size_t i = 0; i < events.size(); ++i) {
      CHECK(boost::json::parse(s.elements[i]) == events[i]);
      CHECK(text.substr(s.begins[i], s.ends[i] - s.begins[i]) == s.elements[i]);
    }
    REQUIRE(s.members.size() == 1);
    CHECK(boost::json::parse(s.members[0].substr(s.members[0].find('\0') + 1)) == whole.at("after"));
  }
}

// A cut anywhere in long events: exactly the events that end before it are
// handed over, as they are in the whole text.
TEST_CASE("json_events_scanner: a cut anywhere in long events keeps the complete ones") {
  const std::string text = long_events_trace();
  const scan full = run(text, text.size(), false);
  const std::size_t events_end = text.find("\n], \"after\"");
  for (std::size_t cut = text.find('[') + 1; cut < events_end; cut += 97) {
    CAPTURE(cut);
    const scan s = run(text.substr(0, cut), 4096, false);
    REQUIRE_FALSE(s.failed);
    CHECK(s.cut);
    std::size_t complete = 0;
    while (complete < full.ends.size() && full.ends[complete] <= cut) ++complete;
    REQUIRE(s.elements.size() == complete);
    if (complete) CHECK(s.elements.back() == full.elements[complete - 1]);
  }
}
