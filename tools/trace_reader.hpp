// tools/trace_reader.hpp — a streaming reader for Kineto-layout trace files
// (.json, .json.gz, .json.zst), and telling traces from the other files of a
// directory. What the `proftrace` command line builds on it has a header per
// job, included at the end for a caller that includes this one alone.
//
// The file is read once, in 1 MiB chunks, through boost::json::basic_parser
// (a SAX parser): no document is ever built, so memory stays bounded whatever
// the size of the trace. Each element of the top-level "traceEvents" array is
// handed to a callback as a small `trace_event` record; the parse runs on a
// thread of its own while the callback takes the events on the caller's
// (read_json_trace, through event_handover.hpp).
#pragma once

#include <climits>
#include <cstdio>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <stdexcept>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>
#include <deque>

#include <proftrace/key_averages.hpp>

namespace proftrace::tools {

// The JSON type of a field, `absent` when the event has no such key.
enum class json_type : std::uint8_t { absent, string, number, boolean, null, object, array };
const char* to_string(json_type t) noexcept;

struct trace_event {
  std::uint64_t index = 0;        // position in traceEvents, from 0
  json_type type = json_type::object;  // the element itself (an event must be an object)

  std::string ph, cat, name;
  json_type ph_type = json_type::absent, cat_type = json_type::absent, name_type = json_type::absent;
  json_type ts_type = json_type::absent, dur_type = json_type::absent;
  json_type pid_type = json_type::absent, tid_type = json_type::absent;
  double ts = 0;   // microseconds
  double dur = 0;  // microseconds
  std::string pid, tid;  // as text (numbers in decimal, strings as written)

  bool has_args = false;
  bool has_stream = false;       // args.stream: a device event
  bool has_input_dims = false;
  std::string input_dims;        // args["Input Dims"] as "[[64, 128], [128, 256]]"
  bool has_external_id = false;
  std::int64_t external_id = 0;
  std::int64_t flops = 0;        // args.flops (with_flops traces)
  // args of a "[memory]" event (profile_memory traces): its "Bytes"
  // (negative for a free) and "Device Type" (0 CPU, 1 CUDA, as Kineto's).
  bool has_bytes = false;
  std::int64_t bytes = 0;
  std::int64_t device_type = 0;

  void clear();  // back to a default event, member by member (a new member goes there too)
};

struct metadata_entry {
  std::string key;  // a top-level key, or "key.field" for a scalar field of a top-level object
  json_type type = json_type::absent;
  std::string value;  // scalars as text; "{...}" / "[...]" for containers
};

// A number for an integer field: NaN as 0, beyond int64's range its ends
// (a cast would be undefined behaviour: "flops": 1e30 from a bad estimate).
std::int64_t saturated_int64(double d);

// A metadata entry's value as an integer in [lo, hi]; nullopt for anything
// else (not a number, a fraction, an exponent, out of range): what a trace's
// rank and clock keys must be before any arithmetic is done with them.
std::optional<std::int64_t> integer_value(const metadata_entry& m, std::int64_t lo, std::int64_t hi);

struct read_result {
  std::uint64_t bytes = 0;   // uncompressed bytes consumed by the parser
  std::uint64_t events = 0;  // elements of traceEvents seen
  bool top_level_object = false;
  bool has_trace_events = false;
  bool trace_events_is_array = false;
  // The input ended inside traceEvents (a spool still being written, or a
  // crash): every complete event before `bytes` was delivered.
  bool truncated = false;
  bool stopped = false;  // on_event returned false
  // .pftrace: events on a clock of their sequence that no snapshot placed (skipped)
  std::uint64_t unplaced_events = 0;
  // .pftrace: slices past the reader's bound on slices open at once (skipped)
  std::uint64_t skipped_open_slices = 0;
  // .pftrace: where a truncated trace ends ("the input ends inside packet
  // ..."); empty for JSON, which is cut inside traceEvents.
  std::string cut_inside_packet;
  std::vector<metadata_entry> metadata;  // top-level keys other than traceEvents
};

// A trace that cannot be read: message is one line naming the file and the
// byte offset (or event index).
class trace_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  // The message without its leading "PATH: ", for a caller that names the file itself.
  std::string reason(const std::filesystem::path& path) const {
    std::string m = what();
    const std::string prefix = path.string() + ": ";
    if (m.rfind(prefix, 0) == 0) m.erase(0, prefix.size());
    return m;
  }
};

// A value JSON's grammar allows and no command accepts (a number beyond a
// double, such as 1e400: read as infinity), ending at uncompressed byte `byte`.
class refused_value_error : public trace_error {
 public:
  refused_value_error(const std::string& message, std::uint64_t at) : trace_error(message), byte(at) {}
  std::uint64_t byte;
};

struct read_options {
  // Called per element of traceEvents; return false to stop reading (then
  // read_trace returns what it had, with `stopped` set in the result).
  std::function<bool(const trace_event&)> on_event;
  std::size_t chunk_size = std::size_t{1} << 20;
  bool progress = false;  // a progress line on stderr (the CLI sets it for big files on a terminal)
  // Stop (with `stopped` set) where traceEvents opens, or as soon as the
  // top-level value is not an object: the metadata before the events, and
  // whether the file is a trace at all, without reading it.
  bool stop_at_events = false;
};

// Reads `path` once. Throws trace_error for a missing or unreadable file,
// corrupt compressed data, malformed JSON, or input that ends before
// traceEvents (a cut inside traceEvents is reported as `truncated` instead);
// refused_value_error for a number beyond a double.
read_result read_trace(const std::filesystem::path& path, const read_options& options);
// read_trace's work for a JSON trace: parsed on a thread of its own while
// options.on_event takes the events on the calling thread, in batches of
// `batching` (tests: batch boundaries). When on_event stops the read, what
// the parser had read past that event is not reported (neither a cut, an
// error nor top-level keys after it), as if it had stopped there; only
// `bytes` may count some of it.
struct event_batching;
read_result read_json_trace(const std::filesystem::path& path, const read_options& options,
                            const event_batching& batching);

// ---- telling traces from the other files of an output directory ----

// Whether a file is a Kineto trace, decided by its content (not its name): a
// JSON object whose "traceEvents" is an array. Reads up to where
// traceEvents opens (a non-object stops at its first byte). Never throws.
struct trace_probe {
  bool is_trace = false;
  // Why not, when !is_trace: "not JSON (...)", "a JSON array, not an
  // object", "a JSON object without a \"traceEvents\" array", ...
  std::string reason;
  bool merged = false;  // written by `proftrace merge` (a "proftraceMerged" key)
  std::vector<metadata_entry> metadata;  // the top-level members before traceEvents
};
trace_probe probe_trace(const std::filesystem::path& path);

struct skipped_file {
  std::filesystem::path file;
  std::string reason;  // "not a Kineto trace (a JSON array, not an object)"
};

// The traces of a directory: its regular files named *.json, *.json.gz or
// *.json.zst (the suffix picks the decompression), each probed. Files that
// are not traces, and merged traces (their ranks are in the directory
// already), go to `skipped`; `exclude` (e.g. merge's own output) is left
// out silently. Sorted by name. Throws trace_error when the directory cannot
// be read.
std::vector<std::filesystem::path> list_traces(const std::filesystem::path& dir, std::vector<skipped_file>& skipped,
                                               const std::vector<std::filesystem::path>& exclude = {});


}  // namespace proftrace::tools

// The commands' own headers, for a caller that includes this one alone
// (each includes this header first: the reader's types above are all they need).
#include "rank_summary.hpp"
#include "trace_convert.hpp"
#include "trace_diff.hpp"
#include "trace_layout.hpp"
#include "trace_merge.hpp"
#include "trace_pftrace.hpp"
#include "trace_repair.hpp"
#include "trace_summary.hpp"
#include "trace_validate.hpp"
