// Internal: splits a Kineto/Chrome trace's JSON text, fed in chunks of any
// size, into the elements of its top-level "traceEvents" array (each
// object's text, for boost::json::parse) and its other top-level members
// (key and value text), without parsing the rest: memory stays at one
// element, whatever the file's layout (one event per line, or torch's
// pretty-printed multi-line events). Strings and their escapes are
// respected; the JSON itself is checked only by whoever parses the pieces
// (text after the top-level object is ignored). The splitting of
// kineto_json_reader, which the converter to Perfetto and `proftrace merge`
// read through.
//
//   json_events_scanner s([](std::string_view event) { ... },
//                         [](std::string_view key, std::string_view value) { ... });
//   while (n = read(buf)) s.feed({buf, n});
//   const bool cut = s.finish();  // throws std::runtime_error when the text is not a trace
#pragma once

#include "proftrace/config.hpp"

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

class json_events_scanner {
 public:
  using element_fn = std::function<void(std::string_view object_text)>;
  using member_fn = std::function<void(std::string_view key, std::string_view value_text)>;

  // What feed() and finish() throw; what() is one line ending with the byte offset.
  class error : public std::runtime_error {
   public:
    enum class kind : std::uint8_t {
      not_a_trace,         // not an object, no traceEvents, ended before it, a top-level key over max_piece bytes
      element_not_object,  // `found` names what it is ("a string")
      too_long,            // an element or member value over max_piece bytes
    };
    error(kind k, std::uint64_t element, const char* found, const std::string& message)
        : std::runtime_error(message), what_kind(k), element(element), found(found) {}
    kind what_kind;
    std::uint64_t element;  // the index in traceEvents it concerns
    const char* found;
  };

  // An element, member value or top-level key longer than `max_piece` bytes is refused
  // (nothing longer is ever held).
  json_events_scanner(element_fn on_element, member_fn on_member, std::size_t max_piece = std::size_t{64} << 20);
  void feed(std::string_view chunk);  // throws error on text that is not a trace object
  // Throws when the text had no traceEvents array or ended before it;
  // returns true when it ended inside traceEvents (a cut trace: every
  // complete element was delivered).
  bool finish();

  std::uint64_t elements() const noexcept { return elements_; }

 private:
  enum class state : std::uint8_t { expect_key, expect_colon, expect_value, in_value, after_value };
  const char* skip_string(const char* p, const char* end);
  void structural(const char* p);
  void open(const char* p);
  void close(const char* p);
  void start_value(const char* p);
  void end_member(const char* p);
  std::string_view captured(const char* last);
  void check_piece(const char* upto);
  void check_key(const char* upto);
  [[noreturn]] void fail(const std::string& why, error::kind k = error::kind::not_a_trace,
                         const char* found = nullptr) const;

  element_fn on_element_;
  member_fn on_member_;
  std::size_t max_piece_;
  int depth_ = 0;
  bool in_string_ = false, escaped_ = false, started_ = false, done_ = false;
  state state_ = state::expect_key;  // of the top-level member being read (depth 1)
  bool reading_key_ = false;
  bool in_events_ = false;  // inside the traceEvents array
  bool seen_events_ = false;
  bool capturing_ = false;  // collecting an element or a member value into piece_
  // piece_ and key_ hold what earlier chunks gave; the current chunk's part
  // begins at capture_from_ and key_from_.
  std::string key_, piece_;
  const char* capture_from_ = nullptr;
  const char* key_from_ = nullptr;
  const char* chunk_ = nullptr;  // the chunk being fed, which begins at byte chunk_offset_
  std::uint64_t chunk_offset_ = 0;
  std::uint64_t offset_ = 0, elements_ = 0;
};

}  // namespace proftrace::detail
