// Internal: Perfetto's `Trace` protobuf, written packet by packet.
//
// A .pftrace file is nothing but `Trace.packet` fields (field 1), so the
// builder appends whole packets to a byte buffer that the caller writes out
// when it likes: a file cut between packets still loads. Names, categories,
// annotation names and long string values are interned on one packet sequence (ids from 1,
// SEQ_INCREMENTAL_STATE_CLEARED on the first packet). Timestamps are Unix
// nanoseconds (REALTIME, clock id 1), placed by a clock snapshot in the
// first packet. ../shared/reference/perfetto-trace-format.md has the fields.
//
// A thread's sequence (the thread_defaults constructor) is what Perfetto's own SDK
// writes per thread: its first packet sets TracePacketDefaults (the thread's
// track, and clock 64, which its clock snapshot declares incremental and
// equal to REALTIME), so an event on that track names no track and its
// timestamp is the difference to the sequence's previous one: a few bytes
// instead of nine, and no clock id.
//
//   std::string out;
//   perfetto_builder b(out, /*sequence_id=*/1);
//   const auto t = b.thread_track(pid, tid, "main");
//   const annotation args[] = {{.name = "External id", .value = std::uint64_t{7}}};
//   b.slice_begin(t, ns, "step", "user_annotation", args);
//   b.slice_end(t, ns + 1000);
//   const std::string& packets = b.out();  // every packet so far
#pragma once

#include "proftrace/config.hpp"
#include "proto_encoder.hpp"

#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// One debug annotation (an arg). `json` values are written as
// DebugAnnotation.legacy_json_value (field 9) so that a reader can give them
// back as JSON ("Input Dims": [[2, 3]]) rather than as a quoted string.
struct json_value {
  std::string_view text;
};
struct annotation {
  std::string_view name;
  std::uint64_t name_iid = 0;  // from intern_annotation_name(); 0: intern `name`
  std::variant<std::int64_t, std::uint64_t, double, bool, std::string_view, json_value> value;
};
using annotations = std::span<const annotation>;

// An output and the block where the fast path's packets are built in
// place (one bounds check per packet) before they reach it. Builders that
// append to the same output share one (a thread's sequence beside the main
// one), so their packets reach it in the order they were made, and a
// sequence costs no block of its own.
struct packet_stage {
  explicit packet_stage(std::string& output) : out(output) {}
  packet_stage(const packet_stage&) = delete;  // `end` points into it
  packet_stage& operator=(const packet_stage&) = delete;
  std::string& out;
  static constexpr std::size_t size = 16384;
  char bytes[size];
  char* end = bytes;
};

// Where a process or thread goes among its siblings, as Kineto's
// process_sort_index/thread_sort_index and process_labels metadata say it
// (ProcessDescriptor/ThreadDescriptor.legacy_sort_index, process_labels).
struct track_order {
  std::optional<std::int64_t> sort_index{};
  std::string labels{};  // a process's ("CPU")
};

class perfetto_builder {
 public:
  // Appends to `out`; every packet carries `sequence_id`. Writes the first
  // packet (incremental state cleared, the REALTIME/BOOTTIME clock snapshot,
  // both clocks read now) at once.
  perfetto_builder(std::string& out, std::uint32_t sequence_id);
  // The same, appending to `shared.out` through `shared` with the other
  // builders of that output.
  perfetto_builder(packet_stage& shared, std::uint32_t sequence_id);
  // A thread's sequence: events on `default_track` omit it, and every
  // timestamp is a delta on the sequence's incremental clock, which starts
  // at `origin_unix_ns` (any time: an earlier event is a negative delta;
  // give every sequence of a trace the same origin).
  struct thread_defaults {
    std::uint64_t default_track = 0;
    std::int64_t origin_unix_ns = 0;
  };
  perfetto_builder(packet_stage& shared, std::uint32_t sequence_id, thread_defaults defaults);
  ~perfetto_builder() { sync(); }  // out holds every packet once the builder is gone
  perfetto_builder(const perfetto_builder&) = delete;
  perfetto_builder& operator=(const perfetto_builder&) = delete;

  // Track descriptors, emitted once per uuid (a second call returns the
  // same uuid and writes nothing). Uuids are derived from the arguments, so
  // two builders agree on them.
  // A thread track's process track is emitted with it when it is new
  // (unnamed then: name a process before its threads).
  std::uint64_t process_track(std::int64_t pid, std::string_view name, const track_order& order = {});
  std::uint64_t thread_track(std::int64_t pid, std::int64_t tid, std::string_view name, const track_order& order = {});
  // A named track under `parent` (0: top level): a GPU stream, an async range's lane.
  std::uint64_t named_track(std::string_view name, std::uint64_t parent, std::uint64_t key);
  std::uint64_t counter_track(std::string_view name, std::uint64_t parent);

  void slice_begin(std::uint64_t track, std::int64_t unix_ns, std::string_view name, std::string_view category,
                   annotations args = {}, std::span<const std::uint64_t> flow_ids = {});
  // A name used once per track, such as "ProfilerStep#7": written in the
  // event itself (TrackEvent.name), not interned (an interned entry would
  // cost more and stay in every reader's table).
  struct one_off_name {
    std::string_view text;
  };
  void slice_begin(std::uint64_t track, std::int64_t unix_ns, one_off_name name, std::string_view category,
                   annotations args = {});
  void slice_end(std::uint64_t track, std::int64_t unix_ns, annotations args = {},
                 std::span<const std::uint64_t> terminating_flow_ids = {});
  void instant(std::uint64_t track, std::int64_t unix_ns, std::string_view name, std::string_view category,
               annotations args = {});
  void counter(std::uint64_t track, std::int64_t unix_ns, double value);

  // Trace-wide metadata, as Chrome's untyped entries (TracePacket.chrome_events,
  // ChromeEventBundle.metadata with a json_value each): what a Kineto trace
  // holds in top-level keys (distributedInfo, clockAlignment, a user's
  // add_metadata). trace_processor keeps them in its metadata table as
  // "cr-<name>". Each value is raw JSON text.
  void trace_metadata(std::span<const std::pair<std::string, std::string>> entries);

  // String args interned (see string_value_iid): this long at least, and
  // per sequence (one per thread) this many and these bytes at most, so a
  // program whose args never repeat costs each thread about 1.5 MiB here.
  static constexpr std::size_t min_interned_value = 16, max_interned_values = 4096;
  static constexpr std::size_t max_interned_value_bytes = std::size_t{1} << 20;

  // The hot path's form: ids from intern_*() (stable for the builder's
  // life), so a writer caches them per call site instead of hashing text
  // per event. An annotation whose name_iid is nonzero uses it.
  // A new id's InternedData entry goes into the next event packet this
  // builder writes (at the latest the one that uses it).
  std::uint64_t intern_name(std::string_view name);
  std::uint64_t intern_category(std::string_view category);
  std::uint64_t intern_annotation_name(std::string_view name);
  void slice_begin(std::uint64_t track, std::int64_t unix_ns, std::uint64_t name_iid, std::uint64_t category_iid,
                   annotations args = {});
  void instant(std::uint64_t track, std::int64_t unix_ns, std::uint64_t name_iid, std::uint64_t category_iid,
               annotations args = {});

  // The commonest events, a slice's begin and end whose one arg is an
  // unsigned integer (an External id), hand-encoded: a few dozen stores.
  // arg_name_iid 0: no arg.
  void slice_begin(std::uint64_t track, std::int64_t unix_ns, std::uint64_t name_iid, std::uint64_t category_iid,
                   std::uint64_t arg_name_iid, std::uint64_t arg_value) {
    if (PROFTRACE_UNLIKELY(!pending_.empty()))
      return slice_with_pending(1, track, unix_ns, name_iid, category_iid, arg_name_iid, arg_value);
    write_slice_with_id(1, track, unix_ns, name_iid, category_iid, arg_name_iid, arg_value);
  }
  void slice_end(std::uint64_t track, std::int64_t unix_ns, std::uint64_t arg_name_iid, std::uint64_t arg_value) {
    if (PROFTRACE_UNLIKELY(!pending_.empty())) return slice_with_pending(2, track, unix_ns, 0, 0, arg_name_iid, arg_value);
    write_slice_with_id(2, track, unix_ns, 0, 0, arg_name_iid, arg_value);
  }
  // A slice with no children: its begin (with the arg) and its end at once.
  // Inline, with what it calls: it is most of a streamed .pftrace.
  void slice_pair(std::uint64_t track, std::int64_t begin_ns, std::int64_t end_ns, std::uint64_t name_iid,
                  std::uint64_t category_iid, std::uint64_t arg_name_iid, std::uint64_t arg_value) {
    if (PROFTRACE_UNLIKELY(!pending_.empty()))
      return pair_with_pending(track, begin_ns, end_ns, name_iid, category_iid, arg_name_iid, arg_value);
    const slice_fields& b = fields_for(1, track, name_iid, category_iid, arg_name_iid);
    const slice_fields& e = fields_for(2, track, 0, 0, 0);
    stage_room(2 * max_fast_packet);
    stage_.end = put_slice(put_slice(stage_.end, b, begin_ns, arg_value), e, end_ns, 0);
  }

  // slice_pair() for `n` slices of one name, category and arg name: `at(i)`
  // gives the i-th one's begin_ns, end_ns and arg value.
  template <class At>
  void slice_pairs(std::uint64_t track, std::uint64_t name_iid, std::uint64_t category_iid, std::uint64_t arg_name_iid,
                   std::size_t n, At&& at) {
    std::size_t i = 0;
    if (PROFTRACE_UNLIKELY(!pending_.empty()) && n != 0) {
      const auto [begin_ns, end_ns, arg_value] = at(0);
      pair_with_pending(track, begin_ns, end_ns, name_iid, category_iid, arg_name_iid, arg_value);
      i = 1;
    }
    const slice_fields& b = fields_for(1, track, name_iid, category_iid, arg_name_iid);
    const slice_fields& e = fields_for(2, track, 0, 0, 0);
    if (PROFTRACE_LIKELY(incremental_ && b.size <= short_fields::max && e.size <= short_fields::max))
      return short_pairs(short_fields(b), short_fields(e), i, n, at);
    for (; i < n; ++i) {
      const auto [begin_ns, end_ns, arg_value] = at(i);
      slice_pair(track, begin_ns, end_ns, name_iid, category_iid, arg_name_iid, arg_value);
    }
  }

  // The packets written so far, all of them (the fast path's staged ones
  // appended first). Read the output only through this.
  std::string& out() {
    sync();
    return out_;
  }

 private:
  // InternedData field numbers
  enum class table : std::uint8_t { category = 1, name = 2, annotation_name = 3, string_value = 29 };
  struct pending_entry {
    table in;
    std::uint64_t iid;
    std::string_view text;  // a key of the table's map: stable while the builder lives
  };
  struct event_fields {
    int type = 0;
    std::uint64_t track = 0;
    std::int64_t unix_ns = 0;
    std::uint64_t name_iid = 0;
    std::string_view name = {};  // written as it is (TrackEvent.name) when not interned
    std::uint64_t category_iid = 0;
    annotations args = {};
    std::span<const std::uint64_t> flow_ids = {}, terminating_flow_ids = {};
    bool has_counter = false;
    double counter_value = 0;
  };
  struct text_hash {  // transparent: looked up by string_view, no key built per event
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  using intern_map = std::unordered_map<std::string, std::uint64_t, text_hash, std::equal_to<>>;

  std::uint64_t intern(intern_map& map, table in, std::string_view text);
  void set_packet_head();
  void write_clock_snapshot();
  void write_thread_defaults(std::int64_t origin_unix_ns);
  // TracePacket.timestamp's value for an event at `unix_ns`: the time itself,
  // or on a thread's sequence the delta to the last (which it advances).
  std::uint64_t timestamp_value(std::int64_t unix_ns) noexcept {
    if (!incremental_) return static_cast<std::uint64_t>(unix_ns);
    const std::uint64_t delta = static_cast<std::uint64_t>(unix_ns) - last_ns_;  // wraps: two's complement
    last_ns_ = static_cast<std::uint64_t>(unix_ns);
    return delta;
  }
  void write_event(const event_fields& e);
  bool write_short_event(const event_fields& e, std::uint64_t timestamp);
  // The short forms' way when interned entries are pending (they go into
  // the packet): the general path. type: TrackEvent.Type (1 begin, 2 end).
  void slice_with_pending(int type, std::uint64_t track, std::int64_t unix_ns, std::uint64_t name_iid,
                          std::uint64_t category_iid, std::uint64_t arg_name_iid, std::uint64_t arg_value);
  // One packet of fields_for's layout; inline: an announced scope's begin
  // and end (a scope with children) are two of these.
  void write_slice_with_id(int type, std::uint64_t track, std::int64_t unix_ns, std::uint64_t name_iid,
                           std::uint64_t category_iid, std::uint64_t arg_name_iid, std::uint64_t arg_value) {
    const slice_fields& f = fields_for(type, track, name_iid, category_iid, arg_name_iid);
    stage_room(max_fast_packet);
    stage_.end = put_slice(stage_.end, f, unix_ns, arg_value);
  }
  void write_annotation(const annotation& a, std::uint64_t name_iid, std::uint64_t value_iid);
  std::size_t open_packet();
  // False when `uuid` was emitted already; otherwise opens its descriptor
  // packet and TrackDescriptor (positions in `at`) with the uuid written.
  bool open_track(std::uint64_t uuid, std::size_t (&at)[2]);
  void close_track(const std::size_t (&at)[2]);

  // Appends the fast path's staged packets to out_: every other writer of
  // out_ calls it first, so packets stay in order.
  void sync() {
    if (stage_.end != stage_.bytes) out_.append(stage_.bytes, static_cast<std::size_t>(stage_.end - stage_.bytes));
    stage_.end = stage_.bytes;
  }
  // Room for `n` more bytes in the stage, synced first when short.
  void stage_room(std::size_t n) {
    if (PROFTRACE_UNLIKELY(stage_.bytes + packet_stage::size - stage_.end < static_cast<std::ptrdiff_t>(n))) sync();
  }

  std::unique_ptr<packet_stage> own_stage_;  // when not shared
  packet_stage& stage_;
  std::string& out_;  // stage_.out
  std::uint32_t sequence_id_;
  std::uint64_t default_track_ = 0;  // a thread's sequence: its track, which events omit
  bool incremental_ = false;         // timestamps as deltas (a thread's sequence)
  std::uint64_t last_ns_ = 0;        // the incremental clock's value
  static constexpr std::size_t max_fast_packet = 128;
  // The sequence id and the timestamp's key, the same in every event packet.
  char packet_head_[8];
  std::size_t packet_head_size_ = 0;
  // write_slice_with_id's packet bytes after the timestamp but the arg's
  // value, as last encoded (fields_for's slots: begins and ends alternate,
  // and the begins of nested scopes alternate their names).
  struct slice_fields {
    std::uint64_t track = 0, name_iid = 0, category_iid = 0, arg_name_iid = 0;
    std::size_t size = 0;
    std::size_t event_length_at = 0;  // the TrackEvent's length byte
    std::size_t arg_length_at = 0;  // the annotation's length byte; 0: no arg
    char bytes[64];  // at most 56 count
  };
  const slice_fields& fields_for(int type, std::uint64_t track, std::uint64_t name_iid, std::uint64_t category_iid,
                                 std::uint64_t arg_name_iid) {
    // TrackEvent.Type: 1 begin, 2 end. Begins by name (nested scopes'
    // alternate), ends by whether they carry the arg.
    slice_fields& f = type == 1 ? fields_[4 + (name_iid & 3)] : fields_[arg_name_iid != 0];
    if (PROFTRACE_LIKELY(f.track == track && f.name_iid == name_iid && f.category_iid == category_iid &&
                         f.arg_name_iid == arg_name_iid && f.size != 0))
      return f;
    return make_fields(f, type, track, name_iid, category_iid, arg_name_iid);
  }
  const slice_fields& make_fields(slice_fields& f, int type, std::uint64_t track, std::uint64_t name_iid,
                                  std::uint64_t category_iid, std::uint64_t arg_name_iid);
  // A slice's packet at `packet` (max_fast_packet bytes of room): the
  // packet's key and length, `head` (the sequence id and the timestamp's
  // key) and the timestamp, the fields, the arg's value; lengths patched in
  // place. Fields: slice_fields or short_fields.
  template <class Fields>
  static char* put_slice(char* packet, const char (&head)[8], std::size_t head_size, const Fields& f,
                         std::uint64_t timestamp, std::uint64_t arg_value) noexcept {
    char* p = packet + 2;  // the packet's key and length go first, once its length is known
    std::memcpy(p, head, sizeof head);
    p = proto::write_varint(p + head_size, timestamp);
    char* const fields = p;
    std::memcpy(p, f.bytes, sizeof f.bytes);  // fixed size: a few moves; only f.size bytes count
    p += f.size;
    if (f.arg_length_at != 0) {
      p = proto::write_varint(p, arg_value);
      fields[f.arg_length_at] = static_cast<char>(p - (fields + f.arg_length_at) - 1);
    }
    fields[f.event_length_at] = static_cast<char>(p - (fields + f.event_length_at) - 1);
    packet[0] = 0x0a;  // Trace.packet (1), length-delimited
    packet[1] = static_cast<char>(p - packet - 2);
    return p;
  }
  char* put_slice(char* packet, const slice_fields& f, std::int64_t unix_ns, std::uint64_t arg_value) noexcept {
    return put_slice(packet, packet_head_, packet_head_size_, f, timestamp_value(unix_ns), arg_value);
  }
  // A slice_fields of at most 32 bytes, as slice_pairs' loop holds it in a
  // local: the packets are chars, which may alias any member, so a loop on
  // the members themselves reloads them after every store.
  struct short_fields {
    static constexpr std::size_t max = 32;
    explicit short_fields(const slice_fields& f) noexcept
        : size(f.size), event_length_at(f.event_length_at), arg_length_at(f.arg_length_at) {
      std::memcpy(bytes, f.bytes, sizeof bytes);
    }
    char bytes[max];
    std::size_t size, event_length_at, arg_length_at;
  };
  // slice_pairs' loop on a thread's sequence (incremental timestamps), from
  // `i` to `n`, with the stage's end and the clock in locals too.
  template <class At>
  void short_pairs(const short_fields& begin, const short_fields& end, std::size_t i, std::size_t n, At& at) {
    char head[sizeof packet_head_];
    std::memcpy(head, packet_head_, sizeof head);
    const std::size_t head_size = packet_head_size_;
    std::uint64_t last = last_ns_;
    char* p = stage_.end;
    const char* const room_end = stage_.bytes + packet_stage::size - 2 * max_fast_packet;
    for (; i < n; ++i) {
      if (PROFTRACE_UNLIKELY(p > room_end)) {
        stage_.end = p;
        sync();
        p = stage_.end;
      }
      const auto [begin_ns, end_ns, arg_value] = at(i);
      const auto b = static_cast<std::uint64_t>(begin_ns);  // deltas wrap: two's complement
      p = put_slice(p, head, head_size, begin, b - last, arg_value);
      last = static_cast<std::uint64_t>(end_ns);
      p = put_slice(p, head, head_size, end, last - b, 0);
    }
    stage_.end = p;
    last_ns_ = last;
  }
  void pair_with_pending(std::uint64_t track, std::int64_t begin_ns, std::int64_t end_ns, std::uint64_t name_iid,
                         std::uint64_t category_iid, std::uint64_t arg_name_iid, std::uint64_t arg_value);
  static constexpr std::size_t fields_slots = 8;
  slice_fields fields_[fields_slots];
  // A string arg's value (a call stack, a module path, a PROF_ARG text) is
  // interned (DebugAnnotation.string_value_iid) when it is long enough to
  // gain, while the table stays within its bounds; past them, new values
  // are written in place and the table stops growing.
  std::uint64_t string_value_iid(std::string_view value);
  std::size_t interned_value_bytes_ = 0;
  intern_map names_, categories_, annotation_names_, string_values_;
  std::vector<pending_entry> pending_;  // interned since the last event packet
  std::vector<std::uint64_t> arg_iids_;  // scratch: one event's annotation name ids
  std::vector<std::uint64_t> value_iids_;  // scratch: its string values' ids (0: in place)
  std::unordered_set<std::uint64_t> tracks_;
};

}  // namespace proftrace::detail
