// Internal: splits a Kineto/Chrome trace's JSON text, fed in chunks of any
// size, into the elements of its top-level "traceEvents" array (each
// object's text, for boost::json::parse) and its other top-level members
// (key and value text), without parsing the rest: memory stays at one
// element, whatever the file's layout (one event per line, or torch's
// pretty-printed multi-line events). Strings and their escapes are
// respected; the JSON itself is checked only by whoever parses the pieces.
//
//   json_events_scanner s([](std::string_view event) { ... },
//                         [](std::string_view key, std::string_view value) { ... });
//   while (n = read(buf)) s.feed({buf, n});
//   const bool cut = s.finish();  // throws std::runtime_error when the text is not a trace
#pragma once

#include "proftrace/config.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

class json_events_scanner {
 public:
  using element_fn = std::function<void(std::string_view object_text)>;
  using member_fn = std::function<void(std::string_view key, std::string_view value_text)>;
  // An element or member value longer than this is refused.
  static constexpr std::size_t max_piece = std::size_t{64} << 20;

  json_events_scanner(element_fn on_element, member_fn on_member);
  void feed(std::string_view chunk);  // throws std::runtime_error on text that is not a trace object
  // Throws when the text had no traceEvents array or ended before it;
  // returns true when it ended inside traceEvents (a cut trace: every
  // complete element was delivered).
  bool finish();

  std::uint64_t elements() const noexcept { return elements_; }

 private:
  enum class state : std::uint8_t { expect_key, expect_colon, expect_value, in_value, after_value };
  void structural(char c);
  void open(char c);
  void close(char c);
  void start_value(char c);
  void end_member();
  [[noreturn]] void fail(const std::string& why) const;

  element_fn on_element_;
  member_fn on_member_;
  int depth_ = 0;
  bool in_string_ = false, escaped_ = false, started_ = false, done_ = false;
  state state_ = state::expect_key;  // of the top-level member being read (depth 1)
  bool reading_key_ = false;
  bool in_events_ = false;  // inside the traceEvents array
  bool seen_events_ = false;
  bool capturing_ = false;  // collecting an element or a member value into piece_
  int piece_depth_ = 0;     // the depth the piece started at
  std::string key_, piece_;
  std::uint64_t offset_ = 0, elements_ = 0;
};

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
