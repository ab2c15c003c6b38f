// Internal: the reader of Kineto JSON trace text that the converter to
// Perfetto (kineto_to_perfetto) and `proftrace merge` share. It reads a
// stream in chunks and hands over each element of the top-level
// "traceEvents" array as the text of one object, with its index, and each
// other top-level member as its key and value text; whether the text was
// cut inside traceEvents is decided once it has all been read.
//
//   kineto_json_reader reader({.on_event = [](std::uint64_t index, std::string_view object) { ... },
//                              .on_member = [](std::string_view key, std::string_view value) { ... }});
//   kineto_json_text text(path);
//   if (!reader.read(text.stream())) ...  // the stream failed (corrupt or cut compressed data)
//   const bool cut = reader.finish();       // ended inside traceEvents
//
// Memory holds one chunk and one element, whatever the file's layout. The
// splitting is json_events_scanner's (strings and nesting only: each
// element's JSON is checked by whoever parses it, one at a time), and
// whatever fails is thrown as its json_events_scanner::error. An element's
// text is valid during its on_event only (a view of the chunk, or of the
// scanner's copy when it spans chunks). Callers see elements, never the
// splitting: a faster splitter can replace the scanner behind feed(), and
// decoding on several threads can batch the elements of a chunk, without
// changing them.
#pragma once

#include "proftrace/config.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <istream>
#include <string_view>
#include <vector>

#include "json_events_scanner.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

struct kineto_json_handlers {
  std::function<void(std::uint64_t index, std::string_view object_text)> on_event;
  std::function<void(std::string_view key, std::string_view value_text)> on_member;  // may be empty
};

struct kineto_json_limits {
  // An element, member value or top-level key longer than this is refused
  // (json_events_scanner::error::kind::too_long / not_a_trace).
  std::size_t max_piece = std::size_t{64} << 20;
  std::size_t chunk = std::size_t{1} << 20;  // bytes read at a time
  // Also check the structure around the pieces (json_events_scanner's
  // check_structure): invalid_structure thrown at the first byte it refuses.
  bool check_structure = false;
};

class kineto_json_reader {
 public:
  explicit kineto_json_reader(kineto_json_handlers handlers, kineto_json_limits limits = {});

  // Reads `text` to its end. False when the stream failed (badbit: a
  // decompressor's error): what came before was read. Throws
  // json_events_scanner::error on text that is not a trace object.
  bool read(std::istream& text);
  // The next piece of the text, from any source (a chunk may end anywhere:
  // inside a string, a number, an escape). Throws as read() does.
  void feed(std::string_view chunk) { scanner_.feed(chunk); }
  // Throws json_events_scanner::error when the text had no traceEvents
  // array or ended before it; true when it ended inside traceEvents (every
  // complete element was delivered).
  bool finish() { return scanner_.finish(); }

  std::uint64_t events() const noexcept { return scanner_.elements(); }
  // During on_event: the element's byte offsets ('{' and past '}'); during
  // on_member: past its value's last byte.
  std::uint64_t event_begin() const noexcept { return scanner_.element_begin(); }
  std::uint64_t event_end() const noexcept { return scanner_.element_end(); }
  std::uint64_t member_end() const noexcept { return scanner_.member_end(); }

 private:
  kineto_json_handlers handlers_;
  json_events_scanner scanner_;
  std::vector<char> chunk_;
};

// The whole Kineto JSON file at `input` (compressed by its name) read
// through a reader with `handlers`: true when it ended inside traceEvents.
// Throws std::runtime_error whose message starts with the file's name.
bool read_kineto_json_file(const std::filesystem::path& input, kineto_json_handlers handlers);

}  // namespace proftrace::detail
