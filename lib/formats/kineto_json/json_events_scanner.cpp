#include "json_events_scanner.hpp"


namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

json_events_scanner::json_events_scanner(element_fn on_element, member_fn on_member, std::size_t max_piece)
    : on_element_(std::move(on_element)), on_member_(std::move(on_member)), max_piece_(max_piece) {}

void json_events_scanner::fail(const std::string& why, error::kind k, const char* found) const {
  throw error(k, elements_, found, why + " (at byte " + std::to_string(offset_) + ")");
}

namespace {
// What a value straight inside traceEvents is when it opens no object.
const char* non_object(char c) {
  return c == '"'                          ? "a string"
         : c == 't' || c == 'f'            ? "a boolean"
         : c == 'n'                        ? "null"
         : c == '['                        ? "an array"
         : c == '-' || (c >= '0' && c <= '9') ? "a number"
                                           : nullptr;
}
}  // namespace

void json_events_scanner::feed(std::string_view chunk) {
  for (const char c : chunk) {
    ++offset_;
    if (capturing_) {
      piece_ += c;
      if (piece_.size() > max_piece_)
        fail("event " + std::to_string(elements_) + " (or a member) is longer than " + std::to_string(max_piece_ >> 20) +
                 " MiB of JSON text",
             error::kind::too_long);
    }
    if (!in_string_) {
      structural(c);
      continue;
    }
    const bool closing = c == '"' && !escaped_;
    escaped_ = !escaped_ && c == '\\';
    if (closing) in_string_ = reading_key_ = false;
    else if (reading_key_) {
      key_ += c;
      if (key_.size() > max_piece_)
        fail("a top-level key is longer than " + std::to_string(max_piece_ >> 20) + " MiB of JSON text");
    }
  }
}

void json_events_scanner::structural(char c) {
  if (c == ' ' || c == '\n' || c == '\r' || c == '\t') return;
  if (!started_) {
    if (c != '{') fail("not a JSON object");
    started_ = true;
    depth_ = 1;
    return;
  }
  if (done_) return;
  if (in_events_ && depth_ == 2)
    if (const char* what = non_object(c))
      fail("event " + std::to_string(elements_) + " is " + what + ", not an object", error::kind::element_not_object, what);
  switch (c) {
    case '"':
      in_string_ = true;
      if (depth_ == 1 && state_ == state::expect_key) {
        reading_key_ = true;
        key_.clear();
        state_ = state::expect_colon;
      } else if (depth_ == 1 && state_ == state::expect_value) {
        start_value(c);
      }
      return;
    case ':':
      if (depth_ == 1 && state_ == state::expect_colon) state_ = state::expect_value;
      return;
    case '{': case '[': return open(c);
    case '}': case ']': return close(c);
    case ',':
      if (depth_ == 1) {
        if (capturing_) end_member();
        state_ = state::expect_key;
      }
      return;
    default:
      if (depth_ == 1 && state_ == state::expect_value) start_value(c);
      return;
  }
}

void json_events_scanner::open(char c) {
  if (depth_ == 1 && state_ == state::expect_value) {
    if (key_ == "traceEvents" && c == '[') {
      in_events_ = seen_events_ = true;
      state_ = state::in_value;
    } else {
      start_value(c);
    }
  } else if (in_events_ && depth_ == 2 && c == '{') {
    capturing_ = true;
    piece_.assign(1, c);
  }
  ++depth_;
}

void json_events_scanner::close(char c) {
  --depth_;
  if (depth_ == 0) {
    if (c != '}') fail("a top-level object closed by ']'");
    if (capturing_) end_member();
    done_ = true;
  } else if (in_events_ && depth_ == 2 && capturing_ && c == '}') {
    capturing_ = false;
    ++elements_;
    on_element_(piece_);
    if (piece_.capacity() > (std::size_t{1} << 20)) std::string().swap(piece_);  // a large event's memory back
  } else if (in_events_ && depth_ == 1) {
    in_events_ = false;
    state_ = state::after_value;
  }
}

void json_events_scanner::start_value(char c) {
  capturing_ = true;
  piece_.assign(1, c);
  state_ = state::in_value;
}

void json_events_scanner::end_member() {
  capturing_ = false;
  piece_.pop_back();  // the ',' or '}' that ended it
  while (!piece_.empty() && (piece_.back() == ' ' || piece_.back() == '\n' || piece_.back() == '\r' || piece_.back() == '\t'))
    piece_.pop_back();
  if (on_member_) on_member_(key_, piece_);
}

bool json_events_scanner::finish() {
  if (!started_) fail("not a JSON object (empty input)");
  if (done_) {
    if (!seen_events_) fail("no \"traceEvents\" array");
    return false;
  }
  if (seen_events_) return true;
  fail("the text ends before any \"traceEvents\" array");
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
