// Internal: decoded Perfetto events (perfetto_reader.hpp) written as a
// Kineto-layout JSON trace, streaming: each event is written as it comes.
// Slices are "X" events (async ranges, category "async" on a track of their
// own under a process, "b"/"e" pairs), instants "i" ("s": "t"), counters "C" with args
// {name: value}, flows "s"/"f" (cat "ac2g") at their slice's start; thread
// and process descriptors become "M" thread_name/process_name events.
// Threads' events carry their pid and tid; a named track's carry its
// ancestor process's pid (else 0) and the track's name as "tid". `ts` is
// relative to "baseTimeNanoseconds": the trace's own (its metadata), else
// taken from the first event (a multiple of 2^51 ns, as the recorder's).
// Trace-wide keys that come before the first event, and the base, are
// written before "traceEvents", the rest after it; proftrace's closing
// instant is left out where its counters also came as the "proftrace" key.
//
//   std::ofstream out("t.json");
//   decoded_json_writer w(out);
//   read_perfetto("t.pftrace", w.callbacks());
//   w.finish();
//
//   perfetto_to_kineto("t.pftrace.gz", "t.json.zst");  // the two together, files by suffix
#pragma once

#include "proftrace/config.hpp"
#include "perfetto_reader.hpp"

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

class decoded_json_writer {
 public:
  explicit decoded_json_writer(std::ostream& out);
  // Writes nothing: only counts the elements, for a command that reads a
  // .pftrace and counts its events as its JSON would hold them.
  decoded_json_writer() = default;
  void track(const decoded_track& t);
  void event(const decoded_event& e);
  // A trace-wide entry: a top-level key of the JSON.
  void metadata(const std::string& name, const std::string& json);
  // Closes traceEvents and the object; once, after the last event.
  void finish();
  perfetto_callbacks callbacks();
  // Elements of traceEvents written so far, metadata and flow events
  // included: what every command counts as the trace's events.
  std::uint64_t elements() const noexcept { return elements_; }

 private:
  void open();
  void begin_element();
  void append_where(const decoded_track& t);  // "pid": ..., "tid": ...
  void append_args(const decoded_event& e);
  void append_flow(const decoded_event& e, std::uint64_t id, bool start);
  void flush_if_big();
  bool is_async_range(const decoded_event& e) const;
  void async_range(const decoded_event& e);

  // A track's metadata events: its name, labels and sort index, each where the trace has it.
  static std::uint64_t metadata_events_of(const decoded_track& t);
  // proftrace's closing instant, when its counters came as the "proftrace" key too.
  bool is_duplicate_closing_instant(const decoded_event& e) const;

  std::ostream* out_ = nullptr;  // null: count only
  std::string buf_;  // before open(): the descriptors before the first event
  std::string head_keys_, tail_keys_;  // top-level keys, each line ending in a comma
  bool opened_ = false, first_ = true, has_base_ = false;
  bool has_counters_key_ = false;  // the trace had a "proftrace" key
  bool has_schema_ = false, has_devices_ = false;  // ... "schemaVersion", "deviceProperties"
  std::unordered_set<std::uint64_t> process_tracks_;
  std::unordered_map<std::uint64_t, std::uint64_t> async_ids_;  // an async range's track -> its JSON id
  std::int64_t base_ns_ = 0;
  std::uint64_t elements_ = 0;
};

// Reads `input` (.pftrace, .pftrace.gz, .pftrace.zst) and writes `output` (.json,
// .json.gz, .json.zst by suffix; whole or not at all). Throws
// perfetto_error or std::runtime_error; a cut input is converted as far as
// it goes and reported in the result.
perfetto_read_result perfetto_to_kineto(const std::filesystem::path& input, const std::filesystem::path& output);

}  // namespace proftrace::detail
