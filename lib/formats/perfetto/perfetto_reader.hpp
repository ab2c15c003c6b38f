// Internal: a .pftrace (Perfetto's protobuf `Trace`; plain, .gz or .zst) decoded
// back into slices, instants and counters, streaming: one packet in memory
// at a time, plus each track's stack of open slices and the interning
// tables. Events are delivered in the order their END (or the instant or
// counter) appears in the file. Timestamps on another clock than REALTIME
// are moved onto it by the latest clock snapshot that has both; a sequence's
// own clocks (ids 64 to 127, deltas where incremental) by the snapshot that
// declared them. TracePacketDefaults give a sequence's clock and track.
// Not decoded: nested (dict/array) debug annotations (given as JSON null)
// and legacy (pre-TYPE) events.
//
//   perfetto_callbacks cb;
//   cb.on_track = [](const decoded_track& t) { ... };       // once per descriptor
//   cb.on_event = [](const decoded_event& e) { ...; return true; };
//   const perfetto_read_result r = read_perfetto("t.pftrace", cb);
//   if (r.truncated) warn(r.truncation);
#pragma once

#include "proftrace/config.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <istream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// A DebugAnnotation.legacy_json_value, kept as its JSON text.
struct decoded_json {
  std::string text;
  bool operator==(const decoded_json&) const = default;
};
using decoded_value = std::variant<std::int64_t, std::uint64_t, double, bool, std::string, decoded_json>;
// The END annotation proftrace's writer gives such a slice: its BEGIN's
// Unix ns (true in traces written before it named the slice: then the
// innermost open slice).
inline constexpr std::string_view withdrawn_slice_arg = "ended on another thread";

struct decoded_arg {
  std::string name;
  decoded_value value;
};

struct decoded_track {
  std::uint64_t uuid = 0, parent = 0;
  std::string name;          // TrackDescriptor.name (named and counter tracks)
  bool is_process = false, is_thread = false, is_counter = false;  // is_thread also for a named track under a thread's
  std::int64_t pid = 0, tid = 0;  // pid also for a named track under a process, from its ancestors
  bool has_pid = false;
  std::string process_name, thread_name;
  // Process/ThreadDescriptor.legacy_sort_index and process_labels (joined
  // by ","): Kineto's process_sort_index, thread_sort_index, process_labels.
  std::optional<std::int64_t> sort_index;
  std::string process_labels;
};

struct decoded_event {
  enum class kind : std::uint8_t { slice, instant, counter } type = kind::slice;
  std::string name, category;  // a counter's name is its track's
  std::shared_ptr<const decoded_track> track;  // never null
  std::int64_t start_ns = 0, dur_ns = 0;  // Unix ns; dur 0 but for slices
  double value = 0;                       // counters
  std::vector<decoded_arg> args;          // the BEGIN's, then the END's
  std::vector<std::uint64_t> flow_ids, terminating_flow_ids;
};

// Slices open at once, over every track, that the reader holds: a program's
// are its threads times its nesting depth; past this (a corrupt file, or a
// few KB of gzip opening millions) BEGINs and their ENDs are skipped, counted.
inline constexpr std::size_t max_open_slices = 100'000;

struct perfetto_read_result {
  std::uint64_t packets = 0, events = 0;
  std::uint64_t bytes = 0;  // (uncompressed) bytes of the whole packets read
  // The input ended inside a packet (or the compressed stream broke off):
  // everything before was delivered; `truncation` says where.
  bool truncated = false;
  std::string truncation;
  std::uint64_t open_slices = 0;     // BEGINs never ended (not delivered)
  std::uint64_t unmatched_ends = 0;  // ENDs on a track with nothing open (ignored)
  // Events on a clock of their sequence that no snapshot of it placed on
  // REALTIME (say, a sequence whose first packet was lost): skipped, as
  // trace_processor skips them.
  std::uint64_t unplaced = 0;
  // BEGINs past max_open_slices open at once (a corrupt or crafted file):
  // skipped with their ENDs, so memory stays bounded.
  std::uint64_t skipped_open = 0;
  // Slices whose END says withdrawn_slice_arg: the first thread's part of a
  // scope that ended on another thread, written again as an async range;
  // not delivered, so that every reader counts the scope once, as in JSON.
  std::uint64_t withdrawn_slices = 0;
  bool stopped = false;              // on_event returned false
};

// Not a Perfetto trace, or a malformed one: one line naming the byte offset.
class perfetto_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct perfetto_callbacks {
  std::function<void(const decoded_track&)> on_track;
  std::function<bool(const decoded_event&)> on_event;  // false: stop reading
  // A trace-wide entry (ChromeEventBundle.metadata): its name and its value
  // as JSON text (a Kineto trace's top-level key and value).
  std::function<void(const std::string& name, const std::string& json)> on_metadata;
};

// Throws perfetto_error (messages start with "PATH: ") for an unreadable
// file or malformed content; a cut is reported in the result instead.
perfetto_read_result read_perfetto(const std::filesystem::path& path, const perfetto_callbacks& callbacks);
// The uncompressed bytes from `in` (messages without a path).
perfetto_read_result read_perfetto(std::istream& in, const perfetto_callbacks& callbacks);

// `t - base` in ns, wrapping instead of overflowing: a trace's times (and a
// base it names in its metadata) can be anything in a crafted file.
constexpr std::int64_t ns_after(std::int64_t t, std::int64_t base) noexcept {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(t) - static_cast<std::uint64_t>(base));
}

// Whether `first_byte` of a (decompressed) file can start a Perfetto trace:
// 0x0a, the key of Trace.packet (field 1, length-delimited).
constexpr bool looks_like_perfetto(unsigned char first_byte) noexcept { return first_byte == 0x0a; }

}  // namespace proftrace::detail
