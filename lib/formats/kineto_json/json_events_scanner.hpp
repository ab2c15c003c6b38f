// Internal: splits a Kineto/Chrome trace's JSON text, fed in chunks of any
// size, into the elements of its top-level "traceEvents" array (each
// object's text, for boost::json::parse) and its other top-level members
// (key and value text), without parsing the rest: memory stays at one
// element, whatever the file's layout (one event per line, or torch's
// pretty-printed multi-line events). Strings and their escapes are
// respected; the JSON itself is checked only by whoever parses the pieces
// (text after the top-level object is ignored), unless the scanner is
// asked to check the structure around them (check_structure: the top-level
// object's keys, colons and commas, the commas between the elements of
// traceEvents, nothing but white space after the object), which a reader
// that parses each element on its own needs to validate the whole text.
// Each element's and member's byte offsets are known while it is handed
// over (element_begin(), element_end(), member_end()). The splitting of
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
      invalid_structure,   // check_structure: a byte the structure around the pieces does not allow there
    };
    error(kind k, std::uint64_t element, const char* found, const std::string& message)
        : std::runtime_error(message), what_kind(k), element(element), found(found) {}
    kind what_kind;
    std::uint64_t element;  // the index in traceEvents it concerns
    const char* found;
  };

  // An element, member value or top-level key longer than `max_piece` bytes is refused
  // (nothing longer is ever held).
  json_events_scanner(element_fn on_element, member_fn on_member, std::size_t max_piece = std::size_t{64} << 20,
                      bool check_structure = false);
  void feed(std::string_view chunk);  // throws error on text that is not a trace object
  // Throws when the text had no traceEvents array or ended before it;
  // returns true when it ended inside traceEvents (a cut trace: every
  // complete element was delivered).
  bool finish();

  std::uint64_t elements() const noexcept { return elements_; }
  // During on_element: the offset of the element's '{' and the one after its
  // '}'. During on_member: the offset after its value's last byte (the ','
  // or '}' that ended it is not included). Afterwards: the last one's.
  std::uint64_t element_begin() const noexcept { return element_begin_; }
  std::uint64_t element_end() const noexcept { return element_end_; }
  std::uint64_t member_end() const noexcept { return member_end_; }

 private:
  enum class state : std::uint8_t { expect_key, expect_colon, expect_value, in_value, after_value };
  // Where traceEvents is (depth 2): after '[' or ',' or an element.
  enum class events_state : std::uint8_t { element_or_close, element, comma_or_close };
  const char* skip_string(const char* p, const char* end);
  const char* skip_nested(const char* p, const char* end, const char*& byte_loop_until);
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
  void check_top_level(char c) const;
  void check_in_events(char c);
  [[noreturn]] void fail_structure(char c) const;
  std::uint64_t offset_of(const char* p) const { return chunk_offset_ + static_cast<std::uint64_t>(p - chunk_); }

  element_fn on_element_;
  member_fn on_member_;
  std::size_t max_piece_;
  int depth_ = 0;
  bool in_string_ = false, escaped_ = false, started_ = false, done_ = false;
  bool check_structure_ = false;
  state state_ = state::expect_key;  // of the top-level member being read (depth 1)
  events_state events_state_ = events_state::element_or_close;
  std::uint64_t members_ = 0;  // top-level members begun
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
  std::uint64_t element_begin_ = 0, element_end_ = 0, member_end_ = 0;
};

}  // namespace proftrace::detail
