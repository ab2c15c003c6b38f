// `proftrace validate --repair`: a trace cut off anywhere (a crash, SIGKILL,
// a full disk) made valid again by keeping the longest prefix that ends on a
// complete event or top-level member and closing what is open.
//
// The input is read twice, streaming: once by a byte-level JSON scanner that
// records where values end (Boost.JSON's SAX parser does not say at which
// byte a callback happens), once to copy the chosen prefix. The scanner
// accepts no more than the reader's parser does (same depth limit, strings
// without control characters, paired surrogate escapes), so what it keeps
// the reader reads back.
#include <unistd.h>

#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filter/zstd.hpp>
#include <boost/iostreams/filtering_stream.hpp>
#include <boost/json/parse_options.hpp>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <optional>
#include <vector>

#include "perfetto_input.hpp"
#include "trace_input.hpp"
#include "trace_repair.hpp"
#include <proftrace_trace_io/perfetto_reader.hpp>
#include <proftrace_trace_io/compression.hpp>

namespace proftrace::tools {

namespace {

namespace pd = proftrace::detail;

// Follows the JSON grammar one byte at a time and remembers the offsets a
// repair needs: the end of the last complete top-level member and of the
// last complete element of the top-level "traceEvents" array.
class json_prefix_scanner {
 public:
  enum class phase : std::uint8_t { before_events, in_events, after_events };

  // False at the first byte that cannot continue valid JSON (error() says
  // why, offset() is that byte's); feed must not be called again after.
  bool feed(const char* data, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i, ++offset_) {
      if (!step(static_cast<unsigned char>(data[i]))) return false;
    }
    return true;
  }

  std::uint64_t offset() const noexcept { return offset_; }
  const std::string& error() const noexcept { return error_; }
  bool started() const noexcept { return started_; }
  bool top_is_object() const noexcept { return top_is_object_; }
  bool finished() const noexcept { return finished_; }  // the top-level value is complete
  std::uint64_t top_end() const noexcept { return top_end_; }
  phase where() const noexcept { return phase_; }
  bool events_not_array() const noexcept { return events_not_array_; }
  std::uint64_t events() const noexcept { return events_; }
  bool inside_event() const noexcept { return element_open_; }
  // The prefix to keep: up to the last complete event (or the array's
  // opening) while in traceEvents; up to the last complete member (or the
  // object's opening) otherwise.
  std::uint64_t keep_end() const noexcept {
    if (phase_ == phase::in_events) return events_ ? last_event_end_ : events_open_end_;
    return members_ ? last_member_end_ : object_open_end_;
  }
  std::uint64_t members() const noexcept { return members_; }

  // Also remember the complete events that end at or before byte `limit`.
  void limit_events_to(std::uint64_t limit) noexcept { limit_ = limit; }
  std::uint64_t limited_events() const noexcept { return limited_events_; }
  std::uint64_t limited_end() const noexcept { return limited_events_ ? limited_end_ : events_open_end_; }
  // The offset named by a spool trailer in the white space right after the
  // top-level object, if one is there.
  bool has_trailer_after_end() const noexcept { return trailer_state_ == trailer_found; }
  std::uint64_t trailer_after_end() const noexcept { return trailer_value_; }
  // Whether a closing part written at byte `at` is the one this text has:
  // traceEvents closed, with nothing but white space between its last
  // element (or its opening) and `at`, and between `at` and its ']'.
  bool events_close_at(std::uint64_t at) const noexcept {
    if (!events_closed_) return false;
    const std::uint64_t last = events_ ? last_event_end_ : events_open_end_;
    return last <= at && at <= events_close_;
  }

 private:
  enum class expect : std::uint8_t { value, value_or_close, key_or_close, key, colon, comma_or_close, nothing };
  enum class lexeme : std::uint8_t { none, string, escape, hex, number, literal };
  enum class number_part : std::uint8_t { minus, zero, integer, dot, fraction, exp_mark, exp_sign, exponent };

  bool fail(std::string why) {
    error_ = std::move(why);
    return false;
  }

  bool step(unsigned char c) {
    switch (lexeme_) {
      case lexeme::string: return string_byte(c);
      case lexeme::escape: return escape_byte(c);
      case lexeme::hex: return hex_byte(c);
      case lexeme::literal:
        if (c != static_cast<unsigned char>(*literal_rest_)) return fail("invalid literal");
        if (*++literal_rest_ == '\0') {
          lexeme_ = lexeme::none;
          value_end(offset_ + 1);
        }
        return true;
      case lexeme::number:
        if (number_byte(c)) return true;
        if (!error_.empty()) return false;
        lexeme_ = lexeme::none;
        value_end(offset_);  // c is not part of the number: it is read next, as structure
        break;
      case lexeme::none: break;
    }
    return structure_byte(c);
  }

  bool structure_byte(unsigned char c) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (finished_) trailer_byte(c);
      return true;
    }
    const bool value_expected = expect_ == expect::value || expect_ == expect::value_or_close;
    switch (c) {
      case '{':
      case '[':
        if (value_expected) return open_container(c);
        break;
      case '}':
      case ']':
        if (may_close(c == ']')) return close_container();
        break;
      case ',':
        if (expect_ != expect::comma_or_close) break;
        expect_ = stack_.back() ? expect::value : expect::key;
        return true;
      case ':':
        if (expect_ != expect::colon) break;
        expect_ = expect::value;
        return true;
      case '"':
        if (expect_ == expect::key || expect_ == expect::key_or_close) return key_start();
        if (value_expected) return string_start(c);
        break;
      case 't':
      case 'f':
      case 'n':
        if (value_expected) return literal_start(c);
        break;
      default:
        if (value_expected && (c == '-' || (c >= '0' && c <= '9'))) return number_start(c);
        break;
    }
    return unexpected_byte(c);
  }

  bool unexpected_byte(unsigned char c) {
    if (expect_ == expect::nothing) return fail("data after the end of the JSON");
    return fail(std::string("unexpected ") + (c >= 0x20 && c < 0x7f ? std::string("'") + char(c) + "'" : "byte " + std::to_string(c)));
  }

  bool open_container(unsigned char c) {
    if (!value_start(c)) return false;
    if (stack_.size() >= max_depth_) return fail("nested too deep");
    stack_.push_back(c == '[');
    if (stack_.size() == 1) object_open_end_ = offset_ + 1;
    if (stack_.size() == 2 && key_is_trace_events_) {
      phase_ = phase::in_events;
      events_open_end_ = offset_ + 1;
    }
    expect_ = c == '[' ? expect::value_or_close : expect::key_or_close;
    return true;
  }

  bool may_close(bool closes_array) const {
    return expect_ == (closes_array ? expect::value_or_close : expect::key_or_close) ||
           (expect_ == expect::comma_or_close && !stack_.empty() && stack_.back() == closes_array);
  }

  bool close_container() {
    stack_.pop_back();
    value_end(offset_ + 1);
    return true;
  }

  bool key_start() {
    in_key_ = true;
    key_.clear();
    lexeme_ = lexeme::string;
    return true;
  }

  bool string_start(unsigned char c) {
    if (!value_start(c)) return false;
    in_key_ = false;
    lexeme_ = lexeme::string;
    return true;
  }

  bool literal_start(unsigned char c) {
    if (!value_start(c)) return false;
    literal_rest_ = c == 't' ? "rue" : c == 'f' ? "alse" : "ull";
    lexeme_ = lexeme::literal;
    return true;
  }

  bool number_start(unsigned char c) {
    if (!value_start(c)) return false;
    lexeme_ = lexeme::number;
    number_ = c == '-' ? number_part::minus : c == '0' ? number_part::zero : number_part::integer;
    exponent_ = 0;
    return true;
  }

  // A value begins at depth stack_.size(), with `c` its first byte.
  bool value_start(unsigned char c) {
    if (stack_.empty()) {
      started_ = true;
      top_is_object_ = c == '{';
      if (!top_is_object_) return fail("the top-level value is not an object");
      return true;
    }
    if (stack_.size() == 1 && key_is_trace_events_ && c != '[' && phase_ == phase::before_events) {
      events_not_array_ = true;
      return fail("\"traceEvents\" is not an array");
    }
    if (stack_.size() == 2 && phase_ == phase::in_events) element_open_ = true;
    return true;
  }

  // White space after the top-level object: a spool trailer (see
  // spool_trailer below) is '\t', 64 bits as ' '/'\t', "\t\n".
  void trailer_byte(unsigned char c) {
    if (trailer_state_ == trailer_none) {
      if (c != '\t') return;
      trailer_state_ = trailer_reading;
      trailer_length_ = 0;
      trailer_value_ = 0;
    }
    if (trailer_state_ != trailer_reading) return;
    const unsigned i = trailer_length_++;
    bool ok = true;
    if (i == 0 || i == 65) ok = c == '\t';
    else if (i <= 64) {
      ok = c == ' ' || c == '\t';
      if (c == '\t') trailer_value_ |= std::uint64_t{1} << (i - 1);
    } else ok = c == '\n';
    if (!ok) trailer_state_ = trailer_bad;
    else if (trailer_length_ == 67) trailer_state_ = trailer_found;
  }

  // The value that began at depth stack_.size() ends before byte `end`.
  void value_end(std::uint64_t end) {
    const std::size_t depth = stack_.size();
    if (depth == 0) {
      finished_ = true;
      top_end_ = end;
      expect_ = expect::nothing;
      return;
    }
    expect_ = expect::comma_or_close;
    if (depth == 1) {
      ++members_;
      last_member_end_ = end;
      if (phase_ == phase::in_events) {
        phase_ = phase::after_events;
        events_closed_ = true;
        events_close_ = end - 1;  // the ']'
      }
      key_is_trace_events_ = false;
    } else if (depth == 2 && phase_ == phase::in_events) {
      ++events_;
      last_event_end_ = end;
      element_open_ = false;
      if (end <= limit_) {
        limited_events_ = events_;
        limited_end_ = end;
      }
    }
  }

  bool string_byte(unsigned char c) {
    if (c == '"') {
      lexeme_ = lexeme::none;
      if (low_surrogate_due_) return fail("unpaired surrogate escape");
      if (in_key_) {
        if (stack_.size() == 1) key_is_trace_events_ = key_ == "traceEvents";
        expect_ = expect::colon;
      } else {
        value_end(offset_ + 1);
      }
      return true;
    }
    if (low_surrogate_due_ && c != '\\') return fail("unpaired surrogate escape");
    if (c == '\\') {
      lexeme_ = lexeme::escape;
      return true;
    }
    if (c < 0x20) return fail("control character in a string");
    key_char(static_cast<char>(c));
    return true;
  }

  // The reader compares top-level keys after unescaping: "trace\u0045vents"
  // is "traceEvents" to it, so it is here too.
  void key_char(char c) {
    if (in_key_ && stack_.size() == 1 && key_.size() < 16) key_.push_back(c);
  }

  bool escape_byte(unsigned char c) {
    if (low_surrogate_due_ && c != 'u') return fail("unpaired surrogate escape");
    switch (c) {
      case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
        key_char(c == 'b' ? '\b' : c == 'f' ? '\f' : c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : static_cast<char>(c));
        lexeme_ = lexeme::string;
        return true;
      case 'u':
        lexeme_ = lexeme::hex;
        hex_digits_ = 0;
        code_unit_ = 0;
        return true;
      default: return fail("invalid escape");
    }
  }

  bool hex_byte(unsigned char c) {
    unsigned digit = 0;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    else return fail("expected a hex digit");
    code_unit_ = code_unit_ << 4 | digit;
    if (++hex_digits_ < 4) return true;
    lexeme_ = lexeme::string;
    key_char(code_unit_ < 0x80 ? static_cast<char>(code_unit_) : '\x80');  // no key the reader acts on has non-ASCII
    const bool high = code_unit_ >= 0xd800 && code_unit_ <= 0xdbff;
    const bool low = code_unit_ >= 0xdc00 && code_unit_ <= 0xdfff;
    if (low_surrogate_due_) {
      if (!low) return fail("unpaired surrogate escape");
      low_surrogate_due_ = false;
    } else if (low) {
      return fail("unpaired surrogate escape");
    } else {
      low_surrogate_due_ = high;
    }
    return true;
  }

  // True when `c` continues the number; false when it ends it (error_ set
  // when the number is not complete there).
  bool number_byte(unsigned char c) {
    const bool digit = c >= '0' && c <= '9';
    switch (number_) {
      case number_part::minus:
        if (!digit) break;
        number_ = c == '0' ? number_part::zero : number_part::integer;
        return true;
      case number_part::zero:
      case number_part::integer:
        if (digit && number_ == number_part::integer) return true;
        if (c == '.') return number_ = number_part::dot, true;
        if (c == 'e' || c == 'E') return number_ = number_part::exp_mark, true;
        return false;
      case number_part::dot:
        if (!digit) break;
        return number_ = number_part::fraction, true;
      case number_part::fraction:
        if (digit) return true;
        if (c == 'e' || c == 'E') return number_ = number_part::exp_mark, true;
        return false;
      case number_part::exp_mark:
        if (c == '+' || c == '-') return number_ = number_part::exp_sign, true;
        [[fallthrough]];
      case number_part::exp_sign:
        if (!digit) break;
        number_ = number_part::exponent;
        exponent_ = c - '0';
        return true;
      case number_part::exponent:
        if (!digit) return false;
        // Far below the parser's own limit (INT_MAX), far above any double.
        if ((exponent_ = exponent_ * 10 + (c - '0')) > 100000000) return fail("exponent too large");
        return true;
    }
    fail("incomplete number");
    return false;
  }

  // The reader's parser allows as many nested containers as its default.
  const std::size_t max_depth_ = boost::json::parse_options{}.max_depth;
  std::vector<bool> stack_;  // open containers, true for an array
  expect expect_ = expect::value;
  lexeme lexeme_ = lexeme::none;
  number_part number_ = number_part::integer;
  std::uint32_t exponent_ = 0;
  const char* literal_rest_ = "";
  unsigned hex_digits_ = 0, code_unit_ = 0;
  bool low_surrogate_due_ = false;
  bool in_key_ = false, key_is_trace_events_ = false;
  std::string key_;  // the first bytes of the current top-level key

  std::uint64_t offset_ = 0;
  std::string error_;
  bool started_ = false, top_is_object_ = false, finished_ = false;
  std::uint64_t top_end_ = 0;
  phase phase_ = phase::before_events;
  bool events_not_array_ = false;
  bool element_open_ = false;
  std::uint64_t object_open_end_ = 0, events_open_end_ = 0;
  std::uint64_t members_ = 0, last_member_end_ = 0;
  std::uint64_t events_ = 0, last_event_end_ = 0;
  bool events_closed_ = false;
  std::uint64_t events_close_ = 0;
  std::uint64_t limit_ = UINT64_MAX, limited_events_ = 0, limited_end_ = 0;
  enum : std::uint8_t { trailer_none, trailer_reading, trailer_bad, trailer_found } trailer_state_ = trailer_none;
  unsigned trailer_length_ = 0;
  std::uint64_t trailer_value_ = 0;
};

// proftrace's spool (lib/spool/trace_file.cpp) ends every closing part with 67
// bytes of white space naming the offset where that closing part begins:
// '\t', the offset's 64 bits least significant first (' ' 0, '\t' 1),
// "\t\n". Sets `at` to that offset and returns true when the plain file
// `path` ends with such a trailer. A commit writes its events over the previous closing part, so a
// spool cut during a commit still ends with the previous part's trailer,
// after leftovers of that part; a file merely cut short does not.
bool spool_trailer(const std::filesystem::path& path, std::uint64_t& at) {
  constexpr std::size_t size = 67;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  char buf[size];
  const bool read = ::fseeko(f, -static_cast<off_t>(size), SEEK_END) == 0 && std::fread(buf, 1, size, f) == size;
  std::fclose(f);
  if (!read || buf[0] != '\t' || buf[65] != '\t' || buf[66] != '\n') return false;
  at = 0;
  for (int bit = 0; bit < 64; ++bit) {
    const char c = buf[1 + bit];
    if (c != ' ' && c != '\t') return false;
    if (c == '\t') at |= std::uint64_t{1} << bit;
  }
  return true;
}

std::string where_text(const json_prefix_scanner& s) {
  using phase = json_prefix_scanner::phase;
  if (s.finished()) return "after the end of the JSON";
  switch (s.where()) {
    case phase::before_events: return "before \"traceEvents\"";
    case phase::after_events: return "after \"traceEvents\"";
    case phase::in_events: break;
  }
  if (s.inside_event()) return "inside event " + std::to_string(s.events());
  return s.events() ? "between events" : "before the first event";
}

}  // namespace

// A Perfetto trace (a .pftrace spool a kill cut short): every whole packet
// before the cut is kept, and nothing needs closing. Empty: not Perfetto's.
std::optional<repair_plan> plan_perfetto_repair(const std::filesystem::path& path) {
  {
    trace_input probe(path);
    char first = 0;
    if (probe.read(&first, 1) != 1 || !proftrace::detail::looks_like_perfetto(static_cast<unsigned char>(first)))
      return std::nullopt;
  }
  proftrace::detail::perfetto_read_result r;
  try {
    r = read_perfetto_file(path, {});
  } catch (const trace_error& e) {
    std::string why = e.what();
    if (const std::string prefix = path.string() + ": "; why.starts_with(prefix)) why.erase(0, prefix.size());
    throw trace_error(path.string() + ": nothing to repair: " + why);
  }
  if (r.truncated && r.bytes == 0)
    throw trace_error(path.string() + ": nothing to repair: no whole packet before the cut (" + r.truncation + ")");
  repair_plan plan;
  plan.complete = !r.truncated;
  plan.bytes = plan.keep_bytes = r.bytes;
  plan.events_kept = r.events;
  if (r.truncated) plan.cut = r.truncation;
  return plan;
}

namespace {

// One pass of the scanner over a JSON trace, and how its input ended.
struct json_scan {
  json_prefix_scanner scanner;
  bool json_ok = true;
  trace_input::state status = trace_input::state::reading;
  bool trailer = false;  // the plain file ends with a spool trailer
  std::uint64_t trailer_at = 0;
  std::string reason;   // what ended the scan: a cut, invalid JSON, a cut or corrupt stream
  std::string byte_at;  // " at byte N": where
};

json_scan scan_json(const std::filesystem::path& path) {
  json_scan s;
  trace_input in(path);
  s.trailer = !in.codec() && spool_trailer(path, s.trailer_at);
  if (s.trailer) s.scanner.limit_events_to(s.trailer_at);
  std::vector<char> buf(in.buffer_size(std::size_t{1} << 20));
  for (;;) {
    const std::size_t got = in.read(buf.data(), buf.size());
    if (got == 0) break;
    if (!s.scanner.feed(buf.data(), got)) {
      s.json_ok = false;
      break;
    }
  }
  s.status = in.status();
  const std::string codec = in.codec() ? in.codec() : "";
  s.byte_at = (codec.empty() ? " at byte " : " at uncompressed byte ") + std::to_string(s.scanner.offset());
  s.reason = "cut";
  if (!s.json_ok) s.reason = "invalid JSON (" + s.scanner.error() + ")";
  else if (s.status == trace_input::state::cut_off) s.reason = codec + " stream cut";
  else if (s.status == trace_input::state::corrupt) s.reason = "corrupt " + (codec.empty() ? "file" : codec + " data") + " (" + in.error() + ")";
  return s;
}

[[noreturn]] void refuse_repair(const std::filesystem::path& path, const std::string& why) {
  throw trace_error(path.string() + ": nothing to repair: " + why);
}

// A text that is no trace's start has nothing to keep.
void refuse_non_trace(const std::filesystem::path& path, const json_scan& s) {
  if (!s.scanner.started()) {
    if (s.json_ok && s.status == trace_input::state::complete)
      refuse_repair(path, s.scanner.offset() == 0 ? "the file is empty" : "the file holds only white space");
    refuse_repair(path, s.reason + s.byte_at + " before any JSON");
  }
  if (!s.scanner.top_is_object()) refuse_repair(path, "the top-level value is not an object");
  if (s.scanner.events_not_array()) refuse_repair(path, "\"traceEvents\" is not an array");
}

// A spool whose last commit was cut short: it ends with the trailer of a
// closing part that its text no longer has (the new events overwrote the
// start of that part, the rest is left over). Everything before the
// offset the trailer names was written by complete commits; what follows
// mixes the cut commit's bytes with the old part's, and may even parse as
// "events". Keep only the events before that offset. (A whole spool's
// text closes exactly where its own trailer says.)
bool ends_with_cut_commit(const json_scan& s) {
  const json_prefix_scanner& scanner = s.scanner;
  const bool closes_as_its_trailer_says =
      scanner.finished() && scanner.has_trailer_after_end() && scanner.events_close_at(scanner.trailer_after_end());
  return s.trailer && !closes_as_its_trailer_says && scanner.where() != json_prefix_scanner::phase::before_events &&
         s.trailer_at <= scanner.offset() && !(scanner.finished() && scanner.events_close_at(s.trailer_at));
}

// The top-level object is whole: complete, or followed by a cut or damage.
void plan_whole_object(const std::filesystem::path& path, const json_scan& s, repair_plan& plan) {
  const json_prefix_scanner& scanner = s.scanner;
  plan.complete = s.json_ok && s.status == trace_input::state::complete;
  plan.keep_bytes = plan.complete ? scanner.offset() : scanner.top_end();  // a copy keeps the final newline
  if (plan.complete) return;
  if (scanner.where() == json_prefix_scanner::phase::before_events)
    refuse_repair(path, "the JSON object ends at byte " + std::to_string(scanner.top_end()) + " without \"traceEvents\", then " +
                            s.reason + s.byte_at);
  plan.cut = s.reason + " " + where_text(scanner) + s.byte_at;
}

repair_plan plan_json_repair(const std::filesystem::path& path) {
  const json_scan s = scan_json(path);
  refuse_non_trace(path, s);
  const json_prefix_scanner& scanner = s.scanner;
  repair_plan plan;
  plan.bytes = scanner.offset();
  plan.events_kept = scanner.events();
  using phase = json_prefix_scanner::phase;
  if (ends_with_cut_commit(s)) {
    plan.keep_bytes = scanner.limited_end();
    plan.events_kept = scanner.limited_events();
    plan.closing = "]}";
    plan.cut = "a commit cut short: the spool ends with leftovers of the closing part written at byte " +
               std::to_string(s.trailer_at) + "; kept the events of the commits before it";
    return plan;
  }
  if (scanner.finished()) {
    plan_whole_object(path, s, plan);
    return plan;
  }
  // Before traceEvents only the end of the data is a cut; damage there
  // leaves nothing that is recognisably a trace.
  if (scanner.where() == phase::before_events && (!s.json_ok || s.status == trace_input::state::corrupt))
    refuse_repair(path, s.reason + s.byte_at + " before \"traceEvents\"");
  plan.keep_bytes = scanner.keep_end();
  switch (scanner.where()) {
    case phase::before_events: plan.closing = scanner.members() ? ", \"traceEvents\": []}" : "\"traceEvents\": []}"; break;
    case phase::in_events: plan.closing = "]}"; break;
    case phase::after_events: plan.closing = "}"; break;
  }
  plan.cut = s.reason + " " + where_text(scanner) + s.byte_at;
  return plan;
}

// The byte scanner cannot tell a number beyond a double (1e400), which every
// command refuses: the reader reads the input to see whether the kept prefix
// holds one. Its other errors are the cut the plan already handles.
void refuse_unreadable_values(const std::filesystem::path& path, const repair_plan& plan) {
  try {
    (void)read_trace(path, {});
  } catch (const refused_value_error& e) {
    if (e.byte <= plan.keep_bytes) throw trace_error(path.string() + ": nothing to repair: " + e.reason(path));
  } catch (const trace_error&) {
  }
}

}  // namespace

repair_plan plan_repair(const std::filesystem::path& path) {
  if (auto perfetto = plan_perfetto_repair(path)) return *perfetto;
  repair_plan plan = plan_json_repair(path);
  refuse_unreadable_values(path, plan);
  return plan;
}

std::filesystem::path default_repair_output(const std::filesystem::path& input) {
  std::string stem = input.filename().string();
  const pd::trace_name n = pd::parse_trace_name(stem);
  std::string suffixes(pd::suffix_of(n.compressed));
  if (n.format != nullptr) suffixes.insert(0, n.format->suffix);
  if (stem.size() <= suffixes.size()) suffixes.clear();  // the whole name is a suffix: a stem of its own
  stem.resize(stem.size() - suffixes.size());
  return input.parent_path() / (stem + ".repaired" + suffixes);
}

void write_repaired(const std::filesystem::path& input, const repair_plan& plan, const std::filesystem::path& output) {
  namespace io = boost::iostreams;
  // Written aside and renamed at the end: a failed repair leaves no half
  // file, and the output may be the input itself.
  std::filesystem::path temp = output;
  temp += ".repairing-" + std::to_string(::getpid());
  const auto fail = [&](const std::string& what) {
    std::error_code ec;
    std::filesystem::remove(temp, ec);
    throw trace_error(what);
  };
  {
    trace_input in(input);
    std::ofstream file(temp, std::ios::binary | std::ios::trunc);
    if (!file) fail(output.string() + ": cannot write: " + std::strerror(errno ? errno : EIO));
    try {
      io::filtering_ostream out;
      pd::push_compressor(out, pd::compression_of(output));
      out.push(file);
      std::vector<char> buf(in.buffer_size(std::size_t{1} << 20));
      std::uint64_t left = plan.keep_bytes;
      while (left > 0) {
        const std::size_t got = in.read(buf.data(), static_cast<std::size_t>(std::min<std::uint64_t>(left, buf.size())));
        if (got == 0) break;
        out.write(buf.data(), static_cast<std::streamsize>(got));
        left -= got;
      }
      if (left != 0) fail(input.string() + ": changed while being repaired (" + std::to_string(left) + " bytes short)");
      out.write(plan.closing.data(), static_cast<std::streamsize>(plan.closing.size()));
      out.reset();
    } catch (const trace_error&) {
      throw;
    } catch (const std::exception& e) {
      fail(output.string() + ": cannot write: " + e.what());
    }
    file.flush();
    if (!file) fail(output.string() + ": cannot write: " + std::strerror(errno ? errno : EIO));
  }
  std::error_code ec;
  std::filesystem::rename(temp, output, ec);
  if (ec) fail(output.string() + ": cannot write: " + ec.message());
}

}  // namespace proftrace::tools
