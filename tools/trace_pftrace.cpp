// read_trace's events from a .pftrace, through the library's decoder.
#include <boost/json.hpp>

#include <algorithm>
#include <exception>
#include <memory>
#include <tuple>
#include <climits>
#include <istream>
#include <optional>
#include <ostream>
#include <streambuf>
#include <string_view>
#include <unordered_map>

#include "event_handover.hpp"
#include "json_array_text.hpp"
#include "perfetto_input.hpp"
#include "trace_input.hpp"
#include "trace_pftrace.hpp"
#include <proftrace_trace_io/trace_formats.hpp>
#include <proftrace_trace_io/perfetto_reader.hpp>
#include <proftrace_trace_io/format_converters.hpp>

namespace proftrace::tools {

namespace {

namespace json = boost::json;
namespace pd = proftrace::detail;

// "Input Dims" as the JSON reader gives them: "[[64, 128], ['float']]".
void append_dims(std::string& out, const json::value& v) {
  switch (v.kind()) {
    case json::kind::array:
      append_json_array(out, v.get_array(), [](std::string& o, const json::value& x) { append_dims(o, x); });
      return;
    case json::kind::string: out += "'" + std::string(v.get_string()) + "'"; return;
    case json::kind::object: out += "{}"; return;
    default: out += json::serialize(v); return;
  }
}

// append_dims' text for `json` when it is compact nested arrays of small
// non-negative integers (what the writers make of "Input Dims"), without
// building a json::value; false (and `out` as it was) for anything else.
bool append_int_dims(std::string& out, std::string_view json) {
  const std::size_t kept = out.size();
  int depth = 0;
  bool value_next = true;  // at the start, after '[' and after ','
  bool closable = false;   // ']' may come: after a value, or right after '['
  std::size_t i = 0;
  while (i < json.size() && (value_next || depth > 0)) {
    const char c = json[i];
    std::size_t n = 0;
    while (i + n < json.size() && json[i + n] >= '0' && json[i + n] <= '9') ++n;
    if (value_next && n > 0) {
      if (n > 18 || (n > 1 && c == '0')) break;  // past int64, or not JSON
      out.append(json, i, n), i += n, value_next = false, closable = true;
    } else if (value_next && c == '[') {
      if (++depth > 16) break;  // deep ones to json::parse, which has its own limit
      out += c, ++i, closable = true;
    } else if (c == ']' && depth > 0 && closable) {
      out += c, ++i, --depth, value_next = false;
    } else if (c == ',' && depth > 0 && !value_next) {
      out += ", ", ++i, value_next = true, closable = false;
    } else {
      break;
    }
  }
  if (i == json.size() && depth == 0 && !value_next) return true;
  out.resize(kept);
  return false;
}

void read_input_dims(const pd::decoded_value& v, trace_event& e) {
  e.has_input_dims = true;
  const auto* text = std::get_if<pd::decoded_json>(&v);
  if (!text || append_int_dims(e.input_dims, text->text)) return;
  boost::system::error_code ec;
  const json::value parsed = json::parse(text->text, ec);
  if (!ec) append_dims(e.input_dims, parsed);
}

// As the JSON reader reads the same arg: beyond int64's range its ends.
std::int64_t int_of(const pd::decoded_value& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return *i;
  if (const auto* u = std::get_if<std::uint64_t>(&v)) return *u > INT64_MAX ? INT64_MAX : static_cast<std::int64_t>(*u);
  if (const auto* d = std::get_if<double>(&v)) return saturated_int64(*d);
  return 0;
}

void read_args(const pd::decoded_event& d, trace_event& e) {
  e.has_args = !d.args.empty() || d.type == pd::decoded_event::kind::counter;
  using namespace std::string_view_literals;
  for (const auto& a : d.args) {
    const std::string_view name = a.name;
    if (name == "External id"sv) e.has_external_id = true, e.external_id = int_of(a.value);
    else if (name == "Input Dims"sv) read_input_dims(a.value, e);
    else if (name == "stream"sv) e.has_stream = true;
    else if (name == "flops"sv) e.flops = std::max<std::int64_t>(int_of(a.value), 0);
    else if (name == "Bytes"sv) e.has_bytes = true, e.bytes = int_of(a.value);
    else if (name == "Device Type"sv) e.device_type = int_of(a.value);
  }
}

// A track's pid and tid as trace_event text.
struct track_text {
  std::string pid, tid;
  json_type tid_type = json_type::number;

  explicit track_text(const pd::decoded_track& t) : pid(std::to_string(t.has_pid ? t.pid : 0)) {
    if (t.is_thread) tid = std::to_string(t.tid);
    else if (t.is_process) tid = pid;
    else tid = t.name, tid_type = json_type::string;
  }
};

// Each track's text, made once (the decoder keeps its tracks, so their
// addresses identify them); events alternate between tracks.
class track_texts {
 public:
  const track_text& operator[](const pd::decoded_track& t) {
    if (&t != last_track_) last_track_ = &t, last_ = &texts_.try_emplace(&t, t).first->second;
    return *last_;
  }

 private:
  std::unordered_map<const pd::decoded_track*, track_text> texts_;
  const pd::decoded_track* last_track_ = nullptr;
  const track_text* last_ = nullptr;
};

void to_trace_event(const pd::decoded_event& d, std::int64_t base_ns, track_texts& texts, trace_event& e) {
  static constexpr std::string_view ph[] = {"X", "i", "C"};
  e.ph = ph[static_cast<int>(d.type)];
  e.name = d.name;
  e.cat = d.category;
  e.ph_type = e.name_type = e.cat_type = json_type::string;
  e.ts_type = e.pid_type = e.tid_type = json_type::number;
  e.ts = static_cast<double>(pd::ns_after(d.start_ns, base_ns)) / 1e3;
  if (d.type == pd::decoded_event::kind::slice) e.dur_type = json_type::number, e.dur = static_cast<double>(d.dur_ns) / 1e3;
  const track_text& where = texts[*d.track];
  e.pid = where.pid;
  e.tid = where.tid;
  e.tid_type = where.tid_type;
  read_args(d, e);
}

// A trace-wide entry, as the JSON reader gives a top-level key: the key
// (an object's or array's value as "{...}" / "[...]"), and an object's
// scalar fields as "key.field" (distributedInfo.rank).
metadata_entry scalar_entry(std::string key, const json::value& v) {
  switch (v.kind()) {
    case json::kind::string: return {std::move(key), json_type::string, std::string(v.get_string())};
    case json::kind::bool_: return {std::move(key), json_type::boolean, v.get_bool() ? "true" : "false"};
    case json::kind::null: return {std::move(key), json_type::null, "null"};
    case json::kind::object: return {std::move(key), json_type::object, "{...}"};
    case json::kind::array: return {std::move(key), json_type::array, "[...]"};
    default: return {std::move(key), json_type::number, json::serialize(v)};
  }
}

void add_metadata(read_result& result, const std::string& name, const std::string& text) {
  boost::system::error_code ec;
  const json::value v = json::parse(text, ec);
  if (ec) return;  // not JSON: nothing a reader of top-level keys could use
  result.metadata.push_back(scalar_entry(name, v));
  if (!v.is_object()) return;
  for (const auto& [field, x] : v.get_object())
    if (!x.is_object() && !x.is_array()) result.metadata.push_back(scalar_entry(name + "." + std::string(field), x));
}

}  // namespace

bool named_perfetto_trace(const std::filesystem::path& path) {
  return pd::trace_name_of(path).format->format == trace_format::pftrace;  // the rule exports follow
}

std::string format_suffix_of(const std::filesystem::path& path) {
  return std::string(pd::row_of(is_perfetto_trace(path) ? trace_format::pftrace : trace_format::json).suffix);
}

bool named_json(const std::filesystem::path& path) {
  const pd::trace_name n = pd::parse_trace_name(path.filename().native());
  return n.format != nullptr && n.format->format == trace_format::json;
}

bool named_export_only(const std::filesystem::path& path) {
  const pd::trace_name n = pd::parse_trace_name(path.filename().native());
  return n.format != nullptr && n.format->export_only;
}

bool is_perfetto_trace(const std::filesystem::path& path) {
  if (named_perfetto_trace(path)) return true;
  try {
    trace_input in(path);
    char head[256];
    std::size_t got = 0;
    while (got < sizeof head)
      if (const std::size_t n = in.read(head + got, sizeof head - got)) got += n;
      else break;
    if (got == 0 || !pd::looks_like_perfetto(static_cast<unsigned char>(head[0]))) return false;
    // 0x0a is also a newline: JSON when the first other character is '{'.
    for (std::size_t i = 0; i < got; ++i)
      if (head[i] != ' ' && head[i] != '\t' && head[i] != '\n' && head[i] != '\r') return head[i] != '{';
    return false;
  } catch (const trace_error&) {
    return false;
  }
}

namespace {

// trace_input as a std::streambuf, for the library's reader.
class input_buffer : public std::streambuf {
 public:
  explicit input_buffer(trace_input& in) : in_(in), buf_(in.buffer_size(std::size_t{1} << 20)) {}
  std::uint64_t total() const noexcept { return total_; }  // bytes handed out so far

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const std::size_t n = in_.read(buf_.data(), buf_.size());
    if (n == 0) return traits_type::eof();
    total_ += n;
    setg(buf_.data(), buf_.data(), buf_.data() + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  trace_input& in_;
  std::vector<char> buf_;
  std::uint64_t total_ = 0;
};

}  // namespace

// `user`'s callbacks, each followed by the converter's.
pd::perfetto_callbacks counted_by(const pd::perfetto_callbacks& user, pd::decoded_json_writer& json) {
  pd::perfetto_callbacks cb;
  cb.on_track = [&user, &json](const pd::decoded_track& t) {
    if (user.on_track) user.on_track(t);
    json.track(t);
  };
  cb.on_event = [&user, &json](const pd::decoded_event& e) {
    const bool go_on = !user.on_event || user.on_event(e);
    json.event(e);
    return go_on;
  };
  cb.on_metadata = [&user, &json](const std::string& name, const std::string& text) {
    if (user.on_metadata) user.on_metadata(name, text);
    json.metadata(name, text);
  };
  return cb;
}

pd::perfetto_read_result read_perfetto_file(const std::filesystem::path& path, const pd::perfetto_callbacks& callbacks,
                                            bool* compressed_damage, pd::decoded_json_writer* json) {
  std::optional<pd::decoded_json_writer> counter;
  if (!json) json = &counter.emplace();
  trace_input in(path);
  input_buffer buf(in);
  std::istream stream(&buf);
  pd::perfetto_read_result r;
  try {
    r = pd::read_perfetto(stream, counted_by(callbacks, *json));
  } catch (const pd::perfetto_error& e) {
    throw trace_error(path.string() + ": " + e.what());
  }
  r.events = json->elements();
  const bool damaged = in.status() == trace_input::state::cut_off || in.status() == trace_input::state::corrupt;
  if (compressed_damage) *compressed_damage = damaged;
  if (damaged && !r.stopped) {
    const std::string codec = in.codec() ? in.codec() : "compressed";
    r.truncated = true;
    r.truncation = (in.status() == trace_input::state::cut_off ? codec + " stream cut off"
                                                                : "corrupt " + codec + " data (" + in.error() + ")") +
                   " after " + std::to_string(buf.total()) + " uncompressed bytes, " + std::to_string(r.packets) +
                   " whole packets before it";
  }
  return r;
}

void refuse_packetless(const std::filesystem::path& path, const pd::perfetto_read_result& r) {
  if (r.packets != 0 || r.stopped) return;
  throw trace_error(path.string() + ": " + (r.truncated ? "nothing before the cut: " + r.truncation
                                                        : std::string("empty: no Perfetto packet")));
}

namespace {

void check_whole(const std::filesystem::path& path, const pd::perfetto_read_result& r, bool compressed_damage) {
  if (compressed_damage)
    throw trace_error(path.string() + ": " + r.truncation +
                      " ('proftrace validate --repair' keeps its complete packets)");
  refuse_packetless(path, r);
}

}  // namespace

namespace {

// The decoding thread's side: each event converted into the batch being
// filled; a batch's last item counts the JSON elements when it is handed over.
class event_producer {
 public:
  event_producer(item_queue& q, const pd::decoded_json_writer& json, const std::vector<metadata_entry>& metadata)
      : batcher_(q), json_(json), metadata_(metadata) {}

  // false: the consumer stopped.
  bool add(const pd::decoded_event& d, std::int64_t base_ns) {
    if (batcher_.full()) batcher_.last().elements_after = json_.elements();  // handed over by slot()
    decoded_item* item = batcher_.slot();
    if (!item) return false;
    item->event.clear();
    item->event.index = json_.elements();
    item->metadata = metadata_.size();
    to_trace_event(d, base_ns, where_, item->event);
    return true;
  }
  // Hands over what was filled; false: the consumer stopped.
  bool hand_over() {
    if (!batcher_.empty()) batcher_.last().elements_after = json_.elements();
    return batcher_.hand_over();
  }

 private:
  event_batcher batcher_;
  const pd::decoded_json_writer& json_;
  const std::vector<metadata_entry>& metadata_;
  track_texts where_;
};

// The decoder's callbacks: metadata into `result`, events to `producer`.
pd::perfetto_callbacks decoding_callbacks(read_result& result, event_producer& producer, std::int64_t& base_ns) {
  pd::perfetto_callbacks cb;
  auto has_base = std::make_shared<bool>(false);
  cb.on_metadata = [&result, &base_ns, has_base](const std::string& name, const std::string& text) {
    if (name == "baseTimeNanoseconds" && !*has_base) {  // the writer's own base: times as in its JSON trace
      boost::system::error_code ec;
      const json::value v = json::parse(text, ec);
      if (!ec && v.is_int64()) base_ns = v.get_int64(), *has_base = true;
      return;
    }
    if (result.metadata.size() < 4096) add_metadata(result, name, text);
  };
  cb.on_event = [&producer, &base_ns, has_base](const pd::decoded_event& d) {
    if (!*has_base) base_ns = d.start_ns - d.start_ns % (std::int64_t{1} << 51), *has_base = true;
    return producer.add(d, base_ns);
  };
  return cb;
}

void take_read(read_result& result, const pd::perfetto_read_result& r) {
  std::tie(result.events, result.truncated, result.cut_inside_packet, result.stopped, result.unplaced_events,
           result.skipped_open_slices, result.bytes) =
      std::tie(r.events, r.truncated, r.truncation, r.stopped, r.unplaced, r.skipped_open, r.bytes);
}

}  // namespace

read_result read_perfetto_trace(const std::filesystem::path& path, const read_options& options) {
  return read_perfetto_trace(path, options, event_batching{});
}

// Decoded on a thread of its own while the caller's takes the events: the
// two halves of the work on two cores, through a few batches of reused events.
read_result read_perfetto_trace(const std::filesystem::path& path, const read_options& options,
                                const event_batching& batching) {
  read_result result;
  result.top_level_object = result.has_trace_events = result.trace_events_is_array = true;
  if (options.stop_at_events) {
    result.stopped = true;
    return result;
  }
  item_queue queue(batching.batch_events, batching.batches);
  pd::decoded_json_writer json;  // numbers the events as its JSON's elements, writing nothing
  event_producer producer(queue, json, result.metadata);
  std::int64_t base_ns = 0;
  pd::perfetto_read_result r;
  bool damaged = false;
  const handover_end end = decode_ahead(
      queue, options, [&] { r = read_perfetto_file(path, decoding_callbacks(result, producer, base_ns), &damaged, &json); },
      [&] { producer.hand_over(); });  // the events before a failure are delivered before it is thrown
  const consumer_stop& stop = end.stop;
  if (stop.stopped) {  // as if the decoder had stopped there: what it read past it is not reported
    r.stopped = true, r.events = stop.elements, r.truncated = false, damaged = false;
    result.metadata.resize(stop.metadata);
  } else if (end.failure) {
    std::rethrow_exception(end.failure);
  }
  take_read(result, r);
  check_whole(path, r, damaged);
  result.metadata.push_back({"baseTimeNanoseconds", json_type::number, std::to_string(base_ns)});
  return result;
}

}  // namespace proftrace::tools
