// The streaming reader: boost::json::basic_parser with a SAX handler that
// keeps only the event being read.
#include "trace_reader.hpp"

#include <unistd.h>

#include <boost/json/basic_parser_impl.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "event_handover.hpp"
#include "trace_input.hpp"
#include "trace_pftrace.hpp"
#include <proftrace_trace_io/perfetto_reader.hpp>
#include <proftrace_trace_io/trace_formats.hpp>
#include <proftrace_trace_io/kineto_event_keys.hpp>

namespace proftrace::tools {

std::int64_t saturated_int64(double d) {
  if (d != d) return 0;
  if (d >= 9223372036854775807.0) return INT64_MAX;
  if (d <= -9223372036854775807.0) return INT64_MIN;
  return static_cast<std::int64_t>(d);
}

std::optional<std::int64_t> integer_value(const metadata_entry& m, std::int64_t lo, std::int64_t hi) {
  if (m.type != json_type::number) return std::nullopt;
  std::int64_t v = 0;
  const char* end = m.value.data() + m.value.size();
  const auto [stop, err] = std::from_chars(m.value.data(), end, v);
  if (err != std::errc{} || stop != end || v < lo || v > hi) return std::nullopt;
  return v;
}

const char* to_string(json_type t) noexcept {
  switch (t) {
    case json_type::absent: return "absent";
    case json_type::string: return "a string";
    case json_type::number: return "a number";
    case json_type::boolean: return "a boolean";
    case json_type::null: return "null";
    case json_type::object: return "an object";
    case json_type::array: return "an array";
  }
  return "?";
}

void trace_event::clear() {
  // Member by member (a new member must be added here): the strings keep
  // their buffers, as readers reuse one event, and nothing is moved or copied.
  index = 0;
  type = json_type::object;
  for (std::string* s : {&ph, &cat, &name, &pid, &tid, &input_dims}) s->clear();
  ph_type = cat_type = name_type = ts_type = dur_type = pid_type = tid_type = json_type::absent;
  ts = dur = 0;
  has_args = has_stream = has_input_dims = has_external_id = has_bytes = false;
  external_id = flops = bytes = device_type = 0;
}

namespace {

namespace json = boost::json;
namespace pd = proftrace::detail;
using json::error_code;
using json::string_view;

constexpr std::size_t max_kept_string = std::size_t{1} << 16;  // longer names are cut (memory bound)

std::string number_text(double d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

struct sax {
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);

  const read_options* opts = nullptr;
  read_result* res = nullptr;
  event_batcher* batcher = nullptr;  // set: events go to a consumer thread

  int depth = 0;          // containers currently open
  int skip_from = 0;      // >0: ignoring everything at depth >= skip_from
  bool top_is_object = false;
  bool in_events = false;  // inside the traceEvents array (depth 2)
  bool in_event = false;   // inside an event object (depth 3)
  bool in_args = false;    // inside its args (depth 4)
  bool in_meta = false;    // inside a top-level object other than traceEvents (depth 2)
  int dims_from = 0;       // >0: capturing Input Dims, opened at this depth
  std::vector<bool> dims_first;
  bool stopped = false;
  bool muted = false;   // events are read but not handed to on_event
  std::string refusal;  // why a value that parses was refused (the parse stops there)

  std::string top_key, meta_key, key_buf, str_buf;
  // The keys this reader acts on, recognised once per key.
  using key_id = pd::event_key;
  key_id field_id = key_id::other, arg_id = key_id::other;
  trace_event own_ev;            // the event being read, when no batcher takes it
  trace_event* ev = &own_ev;     // the event being read
  decoded_item* item = nullptr;  // the batcher's item `ev` is, filled in place

  // ---- values ----
  // Every value (scalar, or a container at its opening) comes through here
  // with `depth` the depth of the container holding it.
  void value(json_type t, const std::string& text, double num) {
    if (dims_from) {
      dims_append(text);
      return;
    }
    if (depth == 1 && top_is_object) {
      top_level_value(t, text);
    } else if (depth == 2 && in_meta) {  // a field of a metadata object: "distributedInfo.rank"
      if (res->metadata.size() < 4096) res->metadata.push_back({top_key + "." + meta_key, t, text});
    } else if (depth == 2 && in_events) {
      if (t != json_type::object && begin_event()) {
        ev->type = t;
        deliver();
      }
    } else if (depth == 3 && in_event) {
      event_field(t, text, num);
    } else if (depth == 4 && in_args) {
      event_arg(t, text, num);
    }
  }

  // A value under the top-level object: traceEvents, or a metadata entry.
  void top_level_value(json_type t, const std::string& text) {
    if (top_key == "traceEvents") {
      res->has_trace_events = true;
      res->trace_events_is_array = t == json_type::array;
      return;
    }
    metadata_entry m{top_key, t, t == json_type::object ? "{...}" : t == json_type::array ? "[...]" : text};
    if (res->metadata.size() < 4096) res->metadata.push_back(std::move(m));
  }

  // A string field's text (into the buffer it has: no temporary), empty for another type.
  static void assign_string(std::string& field, json_type t, const std::string& text) {
    if (t == json_type::string) field.assign(text);
    else field.clear();
  }

  // A field of the event being read (field_id names it).
  void event_field(json_type t, const std::string& text, double num) {
    switch (field_id) {
      case key_id::ph: ev->ph_type = t, assign_string(ev->ph, t, text); break;
      case key_id::cat: ev->cat_type = t, assign_string(ev->cat, t, text); break;
      case key_id::name: ev->name_type = t, assign_string(ev->name, t, text); break;
      case key_id::ts: ev->ts_type = t, ev->ts = num; break;
      case key_id::dur: ev->dur_type = t, ev->dur = num; break;
      case key_id::pid: ev->pid_type = t, ev->pid = text; break;
      case key_id::tid: ev->tid_type = t, ev->tid = text; break;
      case key_id::args: ev->has_args = t == json_type::object; break;
      default: break;
    }
  }

  // A value in the event's args (arg_id names it).
  void event_arg(json_type t, const std::string& text, double num) {
    if (arg_id == key_id::flops && t == json_type::number) {
      ev->flops = num > 0 ? saturated_int64(num) : 0;
    } else if (arg_id == key_id::external_id && t == json_type::number) {
      ev->has_external_id = true;
      ev->external_id = saturated_int64(num);
    } else if (arg_id == key_id::bytes && t == json_type::number) {
      ev->has_bytes = true;
      ev->bytes = saturated_int64(num);
    } else if (arg_id == key_id::device_type && t == json_type::number) {
      ev->device_type = saturated_int64(num);
    } else if (arg_id == key_id::stream) {
      ev->has_stream = true;
    } else if (arg_id == key_id::input_dims) {
      ev->has_input_dims = true;
      if (t != json_type::array) ev->input_dims = text;
    }
  }

  void dims_append(const std::string& text) {
    if (!dims_first.empty()) {
      if (!dims_first.back()) ev->input_dims += ", ";
      dims_first.back() = false;
    }
    if (ev->input_dims.size() < max_kept_string) ev->input_dims += text;
  }

  // A new element of traceEvents, read into the batcher's next item (handed
  // over without a copy) or into own_ev; false once the consumer stopped.
  bool begin_event() {
    item = batcher && !muted ? batcher->reserve() : nullptr;
    if (batcher && !muted && !item) stopped = true;
    ev = item ? &item->event : &own_ev;
    ev->clear();
    ev->index = res->events++;
    return !stopped;
  }

  // The event read to on_event, or counted in the batch a consumer thread takes it from.
  void deliver() {
    if (muted) return;
    if (item) {
      item->elements_after = ev->index + 1;
      item->metadata = res->metadata.size();
      batcher->commit();
      item = nullptr;
    } else if (opts->on_event && !opts->on_event(*ev)) {
      stopped = true;
    }
  }

  bool container_begin(json_type t, error_code& ec) {
    if (skip_from) {
      ++depth;
      return true;
    }
    if (depth == 0) {
      top_is_object = res->top_level_object = t == json_type::object;
      ++depth;
      if (!top_is_object) skip_from = depth;
      if (!top_is_object && opts->stop_at_events) {
        stopped = true;
        ec = json::error::syntax;
        return false;
      }
      return true;
    }
    const int parent = depth;
    if (dims_from && t == json_type::array) {
      dims_append("[");
      dims_first.push_back(true);
      ++depth;
      return true;
    }
    if (dims_from) {  // an object inside Input Dims: kept as {}
      dims_append("{}");
      ++depth;
      skip_from = depth;
      return true;
    }
    value(t, {}, 0);
    ++depth;
    if (parent == 1 && top_is_object && top_key == "traceEvents" && t == json_type::array) {
      in_events = true;
      if (opts->stop_at_events) {
        stopped = true;
        ec = json::error::syntax;
        return false;
      }
    } else if (parent == 1 && top_is_object && t == json_type::object && top_key != "traceEvents") {
      in_meta = true;
    } else if (parent == 2 && in_events && t == json_type::object) {
      in_event = true;
      if (!begin_event()) {
        ec = json::error::syntax;
        return false;
      }
    } else if (parent == 3 && in_event && field_id == key_id::args && t == json_type::object) {
      in_args = true;
    } else if (parent == 4 && in_args && arg_id == key_id::input_dims && t == json_type::array) {
      dims_from = depth;
      ev->input_dims = "[";
      dims_first.assign(1, true);
    } else {
      skip_from = depth;
    }
    return true;
  }

  bool container_end(error_code& ec) {
    --depth;
    if (skip_from) {
      if (depth < skip_from) skip_from = 0;
      return true;
    }
    if (dims_from) {
      ev->input_dims += "]";
      dims_first.pop_back();
      if (depth < dims_from) dims_from = 0;
      return true;
    }
    if (in_args && depth == 3) {
      in_args = false;
    } else if (in_event && depth == 2) {
      in_event = false;
      deliver();
      if (stopped) {
        ec = json::error::syntax;
        return false;
      }
    } else if (in_events && depth == 1) {
      in_events = false;
    } else if (in_meta && depth == 1) {
      in_meta = false;
    }
    if (stopped) {
      ec = json::error::syntax;
      return false;
    }
    return true;
  }

  bool scalar(json_type t, const std::string& text, double num, error_code& ec) {
    if (skip_from) return true;
    if (depth == 0) {
      res->top_level_object = false;
      return true;
    }
    value(t, text, num);
    if (stopped) {
      ec = json::error::syntax;
      return false;
    }
    return true;
  }

  // ---- the handler interface ----
  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_array_begin(error_code& ec) { return container_begin(json_type::array, ec); }
  bool on_array_end(std::size_t, error_code& ec) { return container_end(ec); }
  bool on_object_begin(error_code& ec) { return container_begin(json_type::object, ec); }
  bool on_object_end(std::size_t, error_code& ec) { return container_end(ec); }
  bool on_string_part(string_view s, std::size_t, error_code&) {
    if (!skip_from && str_buf.size() < max_kept_string) str_buf.append(s.data(), std::min(s.size(), max_kept_string));
    return true;
  }
  bool on_string(string_view s, std::size_t, error_code& ec) {
    if (skip_from) {
      str_buf.clear();
      return true;
    }
    if (str_buf.size() < max_kept_string) str_buf.append(s.data(), std::min(s.size(), max_kept_string));
    if (dims_from) str_buf = "'" + str_buf + "'";
    // str_buf keeps its capacity for the next string: no allocation per value.
    const bool ok = scalar(json_type::string, str_buf, 0, ec);
    str_buf.clear();
    return ok;
  }
  bool on_key_part(string_view s, std::size_t, error_code&) {
    if (!skip_from && key_buf.size() < 256) key_buf.append(s.data(), std::min<std::size_t>(s.size(), 256));
    return true;
  }
  bool on_key(string_view s, std::size_t, error_code&) {
    if (skip_from) {
      key_buf.clear();
      return true;
    }
    // Most keys arrive whole: recognise them straight from the parser's
    // buffer; only a key split across reads goes through key_buf.
    std::string_view key(s.data(), std::min<std::size_t>(s.size(), 256));
    if (!key_buf.empty()) {
      if (key_buf.size() < 256) key_buf.append(s.data(), std::min<std::size_t>(s.size(), 256));
      key = key_buf;
    }
    if (depth == 1) top_key.assign(key);
    else if (depth == 2 && in_meta) meta_key.assign(key);
    else if (depth == 3 && in_event) field_id = pd::identify_event_key(key);
    else if (depth == 4 && in_args) arg_id = pd::identify_event_key(key);
    key_buf.clear();
    return true;
  }

  bool on_number_part(string_view, error_code&) { return true; }
  // Event times are the bulk of a trace and are only ever used as numbers:
  // formatting them as text too would double the cost of reading a trace.
  bool number_needs_text() const {
    if (skip_from || dims_from) return true;
    if (depth == 3 && in_event) return field_id != key_id::ts && field_id != key_id::dur;
    if (depth == 4 && in_args) return arg_id == key_id::input_dims;
    return true;
  }
  bool on_int64(std::int64_t i, string_view, error_code& ec) {
    return scalar(json_type::number, number_needs_text() ? std::to_string(i) : std::string(), static_cast<double>(i), ec);
  }
  bool on_uint64(std::uint64_t u, string_view, error_code& ec) {
    return scalar(json_type::number, number_needs_text() ? std::to_string(u) : std::string(), static_cast<double>(u), ec);
  }
  bool on_double(double d, string_view, error_code& ec) {
    if (!std::isfinite(d)) return refuse_infinity(ec);
    return scalar(json_type::number, number_needs_text() ? number_text(d) : std::string(), d, ec);
  }
  // JSON has no infinity: a number past a double's range (1e400) parses as
  // one. Every command refuses it (merge could not write it back, a
  // conversion would have to invent a value).
  bool refuse_infinity(error_code& ec) {
    const key_id k = depth == 3 && in_event ? field_id : depth == 4 && in_args ? arg_id : key_id::other;
    refusal = (in_event ? "event " + std::to_string(ev->index) + ": " : std::string()) +
              (k == key_id::ts ? "\"ts\" is" : k == key_id::dur ? "\"dur\" is" : "a number") +
              " beyond the range of a double";
    ec = json::error::syntax;
    return false;
  }
  bool on_bool(bool b, error_code& ec) { return scalar(json_type::boolean, b ? "true" : "false", 0, ec); }
  bool on_null(error_code& ec) { return scalar(json_type::null, "null", 0, ec); }
  bool on_comment_part(string_view, error_code&) { return true; }
  bool on_comment(string_view, error_code&) { return true; }
};

json::parse_options trace_parse_options() {
  json::parse_options popts;
  popts.allow_comments = false;
  popts.allow_trailing_commas = false;
  popts.allow_invalid_utf8 = true;  // names are cut at arbitrary bytes by some writers; not our concern here
  return popts;
}

// One streaming read of a Kineto JSON trace: its input, the parser, and
// how far it got.
class json_trace_read {
 public:
  json_trace_read(const std::filesystem::path& path, const read_options& options, event_batcher* batcher = nullptr)
      : file_name_(path.string()), in_(path), options_(options), parser_(trace_parse_options()) {
    std::error_code fs_ec;
    file_size_ = std::filesystem::file_size(path, fs_ec);
    progress_ = options.progress && file_size_ > 0;
    parser_.handler().opts = &options;
    parser_.handler().res = &result_;
    parser_.handler().batcher = batcher;
  }

  // What was read so far (once run() returned or threw).
  read_result so_far() const {
    read_result r = result_;
    r.bytes = offset_;
    return r;
  }

  read_result run() {
    buf_.resize(in_.buffer_size(options_.chunk_size));
    for (;;) {
      const std::size_t got = in_.read(buf_.data(), buf_.size());
      if (in_.status() == trace_input::state::corrupt || in_.status() == trace_input::state::cut_off) {
        if (parse_before_damage(got)) return result_;
        fail_on_damaged_input(got);
      }
      const bool more = in_.status() == trace_input::state::reading;
      // Always told more may follow: told it is the last chunk, the parser
      // calls a number cut after its '.' or 'e' a syntax error, not a cut.
      const std::size_t used = parser_.write_some(true, buf_.data(), got, ec_);
      if (ec_) {
        offset_ += used;
        break;
      }
      offset_ += static_cast<std::uint64_t>(got);
      if (progress_) show_progress();
      if (!more) break;
    }
    if (progress_) std::fputs("\r\033[K", stderr);
    result_.bytes = offset_;
    return finish();
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw trace_error(file_name_ + ": " + what); }

  // What decoded before the damage (the last `got` bytes) is parsed before
  // the damage is reported. A probe decides by it: a trace cut after its
  // "traceEvents" opened is a trace (and its read an error); true then,
  // with the result stopped. A value it refuses (1e400) is refused as in
  // any other chunk, wherever the decompressor's chunks happen to end.
  // The callbacks see what they saw before this chunk: their caller gets
  // the damage, or the refusal, as an error either way.
  bool parse_before_damage(std::size_t got) {
    if (got == 0) return false;
    sax& h = parser_.handler();
    h.muted = !options_.stop_at_events;
    const std::size_t used = parser_.write_some(true, buf_.data(), got, ec_);
    if (options_.stop_at_events && h.stopped) {
      result_.bytes = offset_;
      result_.stopped = true;
      return true;
    }
    if (!h.refusal.empty()) {
      if (progress_) std::fputs("\r\033[K", stderr);
      const std::uint64_t at = offset_ + used;
      throw refused_value_error(file_name_ + ": " + h.refusal + " at byte " + std::to_string(at), at);
    }
    return false;
  }

  // The input's decompression failed or stopped short after `got` more bytes.
  [[noreturn]] void fail_on_damaged_input(std::size_t got) const {
    if (progress_) std::fputs("\r\033[K", stderr);
    const char* codec = in_.codec();
    const std::string kind = codec ? codec : "read";
    if (in_.status() == trace_input::state::cut_off)
      fail(kind + " stream cut off after " + std::to_string(offset_ + got) + " uncompressed bytes (truncated " + kind +
           " data; 'proftrace validate --repair' keeps its complete events)");
    fail(kind + " error after " + std::to_string(offset_ + got) + " uncompressed bytes (corrupt " +
         (codec ? kind + " data" : std::string("file")) + "): " + in_.error());
  }

  void show_progress() {
    const int pct = static_cast<int>(100.0 * static_cast<double>(std::min<std::uint64_t>(in_.file_bytes_read(), file_size_)) /
                                     static_cast<double>(file_size_));
    if (pct != last_pct_) {
      std::fprintf(stderr, "\rproftrace: reading %s: %3d%%", file_name_.c_str(), pct);
      last_pct_ = pct;
    }
  }

  // The result once the input is read: stopped, cut inside traceEvents, or
  // an error.
  read_result finish() {
    const sax& h = parser_.handler();
    if (h.stopped) {
      result_.stopped = true;
      return result_;
    }
    if (ec_ == json::error::incomplete || (!ec_ && !parser_.done())) {
      if (h.in_events) {
        result_.truncated = true;
        if (h.in_event && result_.events > 0) --result_.events;  // the cut one was never delivered
        return result_;
      }
      std::string why = offset_ == 0 ? " (empty file)" : "";
      fail("unexpected end of input at byte " + std::to_string(offset_) + why);
    }
    if (!h.refusal.empty())
      throw refused_value_error(file_name_ + ": " + h.refusal + " at byte " + std::to_string(offset_), offset_);
    if (ec_) fail("invalid JSON at byte " + std::to_string(offset_) + ": " + ec_.message());
    return result_;
  }

  std::string file_name_;
  trace_input in_;
  const read_options& options_;
  std::uintmax_t file_size_ = 0;
  bool progress_ = false;
  int last_pct_ = -1;
  read_result result_;
  json::basic_parser<sax> parser_;
  std::vector<char> buf_;  // the chunk being parsed
  std::uint64_t offset_ = 0;
  error_code ec_;
};

std::string not_kineto_trace(std::string why) { return "not a Kineto trace (" + std::move(why) + ")"; }

// A Perfetto trace is decided by content as JSON is: its first
// (decompressed) byte starts a packet.
trace_probe probe_perfetto_trace(const std::filesystem::path& path) {
  trace_probe p;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    p.reason = "cannot be read: not a regular file";
    return p;
  }
  try {
    trace_input in(path);
    unsigned char first = 0;
    if (in.read(reinterpret_cast<char*>(&first), 1) != 1) {
      p.reason = "not a Perfetto trace (" + std::string(in.status() == trace_input::state::corrupt
                                                           ? "not " + std::string(in.codec() ? in.codec() : "") + " data"
                                                           : "empty") + ")";
      return p;
    }
    if (!proftrace::detail::looks_like_perfetto(first)) {
      p.reason = "not a Perfetto trace (its first byte is not a Trace.packet's)";
      return p;
    }
  } catch (const trace_error& e) {
    p.reason = std::string("cannot be read: ") + e.what();
    return p;
  }
  p.is_trace = true;
  return p;
}

// The first byte of the (decompressed) text that is not white space.
struct leading_byte {
  char first = 0;             // 0: there is none
  std::uint64_t leading = 0;  // the bytes before it
  std::string reason;         // set when the input cannot be read: probe_trace's reason
};

leading_byte first_text_byte(const std::filesystem::path& path) {
  leading_byte b;
  try {
    trace_input in(path);
    char buf[4096];
    for (bool found = false; !found;) {
      const std::size_t got = in.read(buf, sizeof buf);
      if (in.status() == trace_input::state::corrupt || (got == 0 && in.status() == trace_input::state::cut_off)) {
        const std::string codec = in.codec() ? in.codec() : "file";
        b.reason = not_kineto_trace(in.status() == trace_input::state::cut_off ? "an empty or cut " + codec + " stream"
                                                                               : "not " + codec + " data: " + in.error());
        return b;
      }
      for (std::size_t i = 0; i < got && !found; ++i, ++b.leading) {
        const char c = buf[i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') b.first = c, found = true;
      }
      if (got == 0) break;
    }
  } catch (const trace_error& e) {
    b.reason = std::string("cannot be read: ") + e.what();
  }
  return b;
}

}  // namespace

read_result read_trace(const std::filesystem::path& path, const read_options& options) {
  refuse_export_only(path);
  if (is_perfetto_trace(path)) return read_perfetto_trace(path, options);
  return read_json_trace(path, options, event_batching{});
}

// Parsed on a thread of its own while the caller's takes the events, as a
// .pftrace is decoded; a read that hands over no event stays on this thread.
read_result read_json_trace(const std::filesystem::path& path, const read_options& options,
                            const event_batching& batching) {
  if (!options.on_event || options.stop_at_events) return json_trace_read(path, options).run();
  item_queue queue(batching.batch_events, batching.batches);
  event_batcher batcher(queue);
  json_trace_read read(path, options, &batcher);
  read_result result;
  const handover_end end = decode_ahead(
      queue, options, [&] { result = read.run(); },
      [&] { batcher.hand_over(); });  // the events before a failure are delivered before it is thrown
  if (end.stop.stopped) {  // as if the parser had stopped there: what it read past it is not reported
    result = read.so_far();
    result.stopped = true, result.truncated = false, result.events = end.stop.elements;
    result.metadata.resize(end.stop.metadata);
  } else if (end.failure) {
    std::rethrow_exception(end.failure);
  }
  return result;
}

trace_probe probe_trace(const std::filesystem::path& path) {
  trace_probe p;
  if (p.reason = export_only_reason(path); !p.reason.empty()) return p;
  if (is_perfetto_trace(path)) return probe_perfetto_trace(path);
  const auto not_trace = [&](std::string why) {
    p.reason = not_kineto_trace(std::move(why));
    return p;
  };
  // A trace is an object.
  const leading_byte b = first_text_byte(path);
  if (!b.reason.empty()) {
    p.reason = b.reason;
    return p;
  }
  if (b.first == 0) return not_trace(b.leading == 0 ? "an empty file" : "only white space");
  if (b.first == '[') return not_trace("a JSON array, not an object: a memory timeline?");
  if (b.first != '{') return not_trace("not JSON");
  read_options opts;
  opts.stop_at_events = true;
  read_result r;
  try {
    r = read_trace(path, opts);
  } catch (const trace_error& e) {
    // Broken or cut before any traceEvents: nothing says it is a trace.
    return not_trace("a JSON object that ends or breaks before any \"traceEvents\": " + e.reason(path));
  }
  p.metadata = std::move(r.metadata);
  for (const auto& m : p.metadata)
    if (m.key == "proftraceMerged") p.merged = true;
  if (!r.has_trace_events) return not_trace("a JSON object without \"traceEvents\"");
  if (!r.trace_events_is_array) return not_trace("\"traceEvents\" is not an array");
  p.is_trace = true;
  return p;
}

std::vector<std::filesystem::path> list_traces(const std::filesystem::path& dir, std::vector<skipped_file>& skipped,
                                               const std::vector<std::filesystem::path>& exclude) {
  std::vector<std::filesystem::path> candidates;
  std::vector<skipped_file> unreadable;
  std::error_code ec;
  // Incremented through the error_code overload: a failure while listing is
  // this function's trace_error, never a raw filesystem_error.
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto& entry = *it;
    if (pd::parse_trace_name(entry.path().filename().native()).format == nullptr) continue;
    std::error_code type_ec;
    const bool regular = entry.is_regular_file(type_ec);
    if (type_ec) {  // a symbolic link loop, a dangling link, no permission: named, not fatal
      std::string why = type_ec.message();
      if (type_ec == std::errc::too_many_symbolic_link_levels) why = "a symbolic link loop (" + why + ")";
      else if (type_ec == std::errc::no_such_file_or_directory) why = "a dangling symbolic link";
      unreadable.push_back({entry.path(), "cannot be read: " + why});
      continue;
    }
    if (!regular) continue;
    bool excluded = false;
    for (const auto& x : exclude) {
      std::error_code eq_ec;
      excluded |= std::filesystem::equivalent(entry.path(), x, eq_ec);
    }
    if (!excluded) candidates.push_back(entry.path());
  }
  if (ec) throw trace_error(dir.string() + ": cannot read the directory: " + ec.message());
  std::sort(candidates.begin(), candidates.end());
  std::sort(unreadable.begin(), unreadable.end(), [](const skipped_file& a, const skipped_file& b) { return a.file < b.file; });
  for (auto& u : unreadable) skipped.push_back(std::move(u));
  std::vector<std::filesystem::path> traces;
  for (auto& c : candidates) {
    auto p = probe_trace(c);
    if (p.is_trace && p.merged)
      skipped.push_back({c, "a merged trace written by 'proftrace merge' (its ranks' own traces are read instead)"});
    else if (p.is_trace)
      traces.push_back(std::move(c));
    else
      skipped.push_back({c, std::move(p.reason)});
  }
  return traces;
}

}  // namespace proftrace::tools
