// Internal: one Kineto/Chrome trace event (an element of traceEvents, as
// json_events_scanner hands it over) read in a single pass into the fields
// the converter to Perfetto uses, and those fields as a compact record that
// the converter sorts and reads back without parsing JSON again.
//
// The reader runs boost::json::basic_parser with boost::json::parse's
// defaults, so it refuses exactly the texts parse() refuses, and builds no
// DOM: only an array or object value of a field or arg is built (with the
// parser's own value_stack) and kept as the text boost::json::serialize
// gives it. Duplicate keys resolve as in a parsed object: the last value
// wins, in the place of the first.
//
//   kineto_event_reader reader;
//   kineto_event e;
//   if (reader.read(text, e) && e.ph.is_string()) ...
//   std::string payload;
//   write_record(e, payload);
//   kineto_record r;
//   r.read(payload);  // r.name, r.args (views into payload)
#pragma once

#include "proftrace/config.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "perfetto_builder.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// A JSON value as the converter reads it: a number or boolean as itself, a
// string's text, an array's or object's serialized text.
struct json_field {
  enum class kind : std::uint8_t { absent, null, boolean, int64, uint64, double_, string, composite };
  kind what = kind::absent;
  bool boolean = false;
  std::int64_t int64 = 0;
  std::uint64_t uint64 = 0;
  double double_ = 0;
  std::string text;  // a string or composite

  bool is_number() const noexcept { return what == kind::int64 || what == kind::uint64 || what == kind::double_; }
  bool is_string() const noexcept { return what == kind::string; }
  std::string_view string() const noexcept { return is_string() ? std::string_view(text) : std::string_view(); }
  double to_double() const noexcept;
  std::string serialized() const;  // as boost::json::serialize writes the value
};

struct kineto_event {
  json_field ph, ts, dur, pid, tid, id, name, cat, scope;  // scope: "s"
  bool args_object = false;  // "args" is an object; its members are the first arg_count of args
  std::size_t arg_count = 0;
  std::vector<std::pair<std::string, json_field>> args;  // kept beyond arg_count: their memory is reused

  const json_field* arg(std::string_view key) const noexcept;
};

// A pid or tid: its text (a map key, a named track's name), and its value
// when it is an integer.
struct id_value {
  std::string text;
  bool is_number = false;
  std::int64_t number = 0;
};
id_value read_id(const json_field& v);

// A number of microseconds as integer nanoseconds, within +-4e18 (126
// years: a ts plus a dur, and either plus the base, stay exact or wrap
// defined; a value past them is counted in `clamped`); false when absent.
bool read_ns(const json_field& v, std::int64_t& ns, std::uint64_t& clamped);

class kineto_event_reader {
 public:
  kineto_event_reader();
  ~kineto_event_reader();
  kineto_event_reader(const kineto_event_reader&) = delete;
  kineto_event_reader& operator=(const kineto_event_reader&) = delete;

  // False when `text` is not one JSON object (what boost::json::parse
  // refuses, or another value).
  bool read(std::string_view text, kineto_event& e);

 private:
  struct parser;
  std::unique_ptr<parser> parser_;
};

// An element of traceEvents as the converters take it: `text` read into
// `e`, and its "ts" into `ts_ns` (read_ns) unless it is metadata ("M").
enum class event_use : std::uint8_t { unusable, metadata, timed };  // unusable: not an object, or no number ts
event_use read_timed_event(kineto_event_reader& reader, std::string_view text, kineto_event& e, std::int64_t& ts_ns,
                           std::uint64_t& clamped);

// Appends the event's name, cat, "s", serialized id ("" when absent) and
// args to `out`, in the form kineto_record reads.
void write_record(const kineto_event& e, std::string& out);

// A record read back: views into its bytes, valid while they are.
struct kineto_record {
  std::string_view name, cat, scope, id;
  bool args_object = false;  // "args" was an object (args lists its members)
  // A null arg is the JSON text "null" (as an annotation writes it).
  std::vector<annotation> args;

  void read(std::string_view bytes);
};

bool is_null(const annotation& a) noexcept;

// What a converter from Kineto JSON reads with (kineto_to_perfetto,
// kineto_to_otf2, kineto_to_caliper): the reader, the event read last, its
// record as the sort keeps it, the record being taken back from the sort,
// and the count of events read (each one's place in the file).
struct kineto_event_input {
  kineto_event_reader reader;
  kineto_event event;
  std::string record;
  kineto_record taken;
  std::uint64_t seq = 0;

  // The next element of traceEvents into `event` (read_timed_event), counted
  // in the conversion's `events` and `clamped`.
  template <class Counts>
  event_use next(std::string_view text, std::int64_t& ts_ns, Counts& counts) {
    ++counts.events;
    return read_timed_event(reader, text, event, ts_ns, counts.clamped);
  }
};

}  // namespace proftrace::detail
