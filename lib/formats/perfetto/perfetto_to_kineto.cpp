#include "perfetto_to_kineto.hpp"

#include <boost/json/parse.hpp>

#include "formats/json_text.hpp"
#include "spool/compressed_output.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {
constexpr std::size_t flush_bytes = std::size_t{1} << 16;

// legacy_json_value is trusted only once it parses: a bad one would make
// the whole file unreadable, so it is written as a string instead.
void append_json_text(std::string& out, const std::string& text) {
  boost::system::error_code ec;
  (void)boost::json::parse(text, ec);
  if (ec) append_json_string(out, text);
  else out += text;
}

void append_value(std::string& out, const decoded_value& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) out += x ? "true" : "false";
        else if constexpr (std::is_same_v<T, double>) append_double(out, x);
        else if constexpr (std::is_same_v<T, std::string>) append_json_string(out, x);
        else if constexpr (std::is_same_v<T, decoded_json>) append_json_text(out, x.text);
        else append_int(out, x);
      },
      v);
}
}  // namespace

decoded_json_writer::decoded_json_writer(std::ostream& out) : out_(&out) {}

std::uint64_t decoded_json_writer::metadata_events_of(const decoded_track& t) {
  if (!t.is_process && !t.is_thread) return 0;
  const std::string& name = t.is_thread ? t.thread_name : t.process_name;
  return std::uint64_t{!name.empty()} + std::uint64_t{t.is_process && !t.process_labels.empty()} +
         std::uint64_t{t.sort_index.has_value()};
}

bool decoded_json_writer::is_duplicate_closing_instant(const decoded_event& e) const {
  return has_counters_key_ && e.type == decoded_event::kind::instant && e.category == "proftrace" &&
         e.name == "proftrace" && !e.track->has_pid;
}

perfetto_callbacks decoded_json_writer::callbacks() {
  return {[this](const decoded_track& t) { track(t); },
          [this](const decoded_event& e) {
            event(e);
            return true;
          },
          [this](const std::string& name, const std::string& json) { metadata(name, json); }};
}

void decoded_json_writer::metadata(const std::string& name, const std::string& json) {
  if (name == "baseTimeNanoseconds") {  // the writer's own base, so that times read as in its JSON trace
    boost::system::error_code ec;
    const boost::json::value v = boost::json::parse(json, ec);
    if (!ec && v.is_int64() && !has_base_) base_ns_ = v.get_int64(), has_base_ = true;
    return;
  }
  if (name == "traceEvents" || name == "displayTimeUnit") return;  // this writer's own keys
  if (name == "proftrace") has_counters_key_ = true;
  if (!out_) return;
  // Kineto's keys after the first event: the head has its defaults already
  // (one key twice would be invalid JSON to many readers).
  if ((name == "schemaVersion" && opened_ && !has_schema_) || (name == "deviceProperties" && opened_ && !has_devices_))
    return;
  if (name == "schemaVersion") has_schema_ = true;
  if (name == "deviceProperties") has_devices_ = true;
  std::string& into = opened_ ? tail_keys_ : head_keys_;
  into += "  ";
  append_json_string(into, name);
  into += ": ";
  append_json_text(into, json);
  into += ",\n";
}

// The object opens at the first event: the trace-wide keys that came before
// it (a proftrace trace's come first, after its process's and threads'
// descriptors) and the time base go before "traceEvents", as in the JSON
// trace they came from, where a reader that stops at the events finds them.
void decoded_json_writer::open() {
  if (opened_) return;
  opened_ = true;
  // Kineto's keys where the trace did not carry them (a CPU-only session's
  // .pftrace, another tool's): HTA and TensorBoard look for them.
  std::string head = "{\n";
  if (!has_schema_) head += "  \"schemaVersion\": 1,\n";
  if (!has_devices_) head += "  \"deviceProperties\": [],\n";
  head += head_keys_ + "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ";
  append_int(head, base_ns_);
  head += ",\n  \"traceEvents\": [";
  buf_.insert(0, head);
}

void decoded_json_writer::begin_element() {
  buf_ += first_ ? "\n  " : ",\n  ";
  first_ = false;
  ++elements_;
}

void decoded_json_writer::flush_if_big() {
  if (!opened_ || buf_.size() < flush_bytes) return;
  out_->write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  buf_.clear();
}

void decoded_json_writer::append_where(const decoded_track& t) {
  buf_ += "\"pid\": ";
  append_int(buf_, t.has_pid ? t.pid : 0);
  buf_ += ", \"tid\": ";
  if (t.is_thread) append_int(buf_, t.tid);
  else if (t.is_process || (t.is_counter && t.has_pid)) append_int(buf_, t.pid);  // a counter is its process's
  else append_json_string(buf_, t.name);
}

// Kineto's metadata events for a process or thread track: its name, and
// where it sorts (and a process's labels) when the trace says.
void decoded_json_writer::track(const decoded_track& t) {
  if (t.is_process) process_tracks_.insert(t.uuid);
  if (!out_) {
    elements_ += metadata_events_of(t);
    return;
  }
  if (!t.is_process && !t.is_thread) return;
  const auto meta = [&](const char* name, const char* key, const auto& append_value) {
    begin_element();
    buf_ += "{\"name\": \"";
    buf_ += name;
    buf_ += "\", \"ph\": \"M\", \"ts\": 0, \"pid\": ";
    append_int(buf_, t.has_pid ? t.pid : 0);
    buf_ += ", \"tid\": ";
    append_int(buf_, t.is_thread ? t.tid : 0);  // a process's metadata is on tid 0, as Kineto writes it
    buf_ += ", \"args\": {\"";
    buf_ += key;
    buf_ += "\": ";
    append_value();
    buf_ += "}}";
  };
  const std::string& name = t.is_thread ? t.thread_name : t.process_name;
  if (!name.empty()) meta(t.is_thread ? "thread_name" : "process_name", "name", [&] { append_json_string(buf_, name); });
  if (t.is_process && !t.process_labels.empty())
    meta("process_labels", "labels", [&] { append_json_string(buf_, t.process_labels); });
  if (t.sort_index)
    meta(t.is_thread ? "thread_sort_index" : "process_sort_index", "sort_index", [&] { append_int(buf_, *t.sort_index); });
  flush_if_big();
}

void decoded_json_writer::append_args(const decoded_event& e) {
  buf_ += ", \"args\": {";
  if (e.type == decoded_event::kind::counter) {
    append_json_string(buf_, e.name);
    buf_ += ": ";
    append_double(buf_, e.value);
  }
  for (std::size_t i = 0; i < e.args.size(); ++i) {
    if (i) buf_ += ", ";
    append_json_string(buf_, e.args[i].name);
    buf_ += ": ";
    append_value(buf_, e.args[i].value);
  }
  buf_ += "}}";
}

void decoded_json_writer::append_flow(const decoded_event& e, std::uint64_t id, bool start) {
  begin_element();
  buf_ += start ? "{\"ph\": \"s\", " : "{\"ph\": \"f\", \"bp\": \"e\", ";
  buf_ += "\"id\": ";
  append_int(buf_, id);
  buf_ += ", \"cat\": \"ac2g\", \"name\": \"ac2g\", ";
  append_where(*e.track);
  buf_ += ", \"ts\": ";
  append_us3(buf_, ns_after(e.start_ns, base_ns_));
  buf_ += "}";
}

// proftrace's async ranges (category "async", each on a track of its own
// under its process) as the JSON trace holds them: a "b"/"e" pair on the
// threads that began and ended it (its args name them), paired by an id
// (one per track, so one per range).
bool decoded_json_writer::is_async_range(const decoded_event& e) const {
  const decoded_track& t = *e.track;
  return e.type == decoded_event::kind::slice && e.category == "async" && !t.is_thread && !t.is_process &&
         !t.is_counter && process_tracks_.contains(t.parent);
}

void decoded_json_writer::async_range(const decoded_event& e) {
  // Small ids, dense from 1: a uuid may be past 2^53, where JSON readers in JavaScript round.
  const std::uint64_t id = async_ids_.try_emplace(e.track->uuid, async_ids_.size() + 1).first->second;
  const auto thread = [&](std::string_view arg) {
    for (const decoded_arg& a : e.args)
      if (a.name == arg && std::holds_alternative<std::int64_t>(a.value)) return std::to_string(std::get<std::int64_t>(a.value));
    std::string name;
    append_json_string(name, e.track->name);
    return name;
  };
  const auto open_event = [&](const char* ph, std::string_view tid, std::int64_t ns) {
    begin_element();
    buf_ += ph;
    append_json_string(buf_, e.name);
    buf_ += ", \"pid\": ";
    append_int(buf_, e.track->has_pid ? e.track->pid : 0);
    buf_ += ", \"tid\": ";
    buf_ += tid;
    buf_ += ", \"ts\": ";
    append_us3(buf_, ns_after(ns, base_ns_));
    buf_ += ", \"id\": ";
    append_int(buf_, id);
  };
  open_event("{\"ph\": \"b\", \"cat\": \"async\", \"name\": ", thread("begin thread"), e.start_ns);
  append_args(e);
  open_event("{\"ph\": \"e\", \"cat\": \"async\", \"name\": ", thread("end thread"), e.start_ns + e.dur_ns);
  buf_ += "}";
  flush_if_big();
}

void decoded_json_writer::event(const decoded_event& e) {
  if (is_duplicate_closing_instant(e)) return;
  if (!out_) {
    elements_ += is_async_range(e) ? 2 : 1 + e.flow_ids.size() + e.terminating_flow_ids.size();
    return;
  }
  if (!has_base_) {
    base_ns_ = e.start_ns - e.start_ns % trace_base_period_ns;
    has_base_ = true;
  }
  open();
  if (is_async_range(e)) return async_range(e);
  static constexpr const char* ph[] = {"X", "i", "C"};
  begin_element();
  buf_ += "{\"ph\": \"";
  buf_ += ph[static_cast<int>(e.type)];
  // An instant's scope by its track: a process's ("p"), none's ("g", global), else its thread's.
  if (e.type == decoded_event::kind::instant)
    buf_ += e.track->is_process ? "\", \"s\": \"p" : !e.track->has_pid ? "\", \"s\": \"g" : "\", \"s\": \"t";
  buf_ += "\", \"cat\": ";
  append_json_string(buf_, e.category.empty() && e.type == decoded_event::kind::counter ? "counter" : e.category);
  buf_ += ", \"name\": ";
  append_json_string(buf_, e.name);
  buf_ += ", ";
  append_where(*e.track);
  buf_ += ", \"ts\": ";
  append_us3(buf_, ns_after(e.start_ns, base_ns_));
  if (e.type == decoded_event::kind::slice) {
    buf_ += ", \"dur\": ";
    append_us3(buf_, e.dur_ns);
  }
  append_args(e);
  for (const auto id : e.flow_ids) append_flow(e, id, true);
  for (const auto id : e.terminating_flow_ids) append_flow(e, id, false);
  flush_if_big();
}

void decoded_json_writer::finish() {
  open();
  if (tail_keys_.empty()) {
    buf_ += "\n  ]\n}\n";
  } else {
    tail_keys_.resize(tail_keys_.size() - 2);  // the last key's ",\n"
    buf_ += "\n  ],\n" + tail_keys_ + "\n}\n";
  }
  if (!out_) return;
  out_->write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  buf_.clear();
  out_->flush();
}

perfetto_read_result perfetto_to_kineto(const std::filesystem::path& input, const std::filesystem::path& output) {
  compressed_output out(output);
  decoded_json_writer w(out.stream());
  const perfetto_read_result r = read_perfetto(input, w.callbacks());
  w.finish();
  out.commit();
  return r;
}

}  // namespace proftrace::detail
