// Perfetto packets, field by field (numbers from
// ../shared/reference/perfetto-trace-format.md).
#include "perfetto_builder.hpp"

#include <time.h>

#include <bit>
#include <cstring>
#include <type_traits>

#include "proto_encoder.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

namespace field {
// Trace
constexpr std::uint32_t packet = 1;
// TracePacket
constexpr std::uint32_t chrome_events = 5, clock_snapshot = 6, timestamp = 8, trusted_packet_sequence_id = 10,
                        track_event = 11,
                        interned_data = 12, sequence_flags = 13, timestamp_clock_id = 58, trace_packet_defaults = 59,
                        track_descriptor = 60;
// TracePacketDefaults (timestamp_clock_id as in TracePacket) and TrackEventDefaults
constexpr std::uint32_t track_event_defaults = 11, default_track_uuid = 11;
// ClockSnapshot and its Clock
constexpr std::uint32_t clocks = 1, clock_id = 1, clock_timestamp = 2, clock_is_incremental = 3;
// TrackDescriptor, ProcessDescriptor, ThreadDescriptor
constexpr std::uint32_t uuid = 1, track_name = 2, process = 3, thread = 4, parent_uuid = 5, counter = 8;
constexpr std::uint32_t pid = 1, process_name = 6, tid = 2, thread_name = 5, legacy_sort_index = 3, process_labels = 8;
// TrackEvent
constexpr std::uint32_t category_iids = 3, debug_annotations = 4, type = 9, name_iid = 10, track_uuid = 11, name = 23,
                        double_counter_value = 44, flow_ids = 47, terminating_flow_ids = 48;
// interned entries (EventCategory, EventName, DebugAnnotationName)
constexpr std::uint32_t iid = 1, entry_name = 2;
// DebugAnnotation
constexpr std::uint32_t annotation_name_iid = 1, bool_value = 2, uint_value = 3, int_value = 4, double_value = 5,
                        string_value = 6, legacy_json_value = 9, string_value_iid = 17;
// ChromeEventBundle and its ChromeMetadata
constexpr std::uint32_t chrome_metadata = 2, metadata_name = 1, metadata_json_value = 5;
}  // namespace field

constexpr std::uint32_t clock_realtime = 1, clock_boottime = 6;
constexpr std::uint32_t clock_thread_sequence = 64;  // 64 to 127: a clock of one sequence's own
constexpr std::uint64_t seq_incremental_state_cleared = 1, seq_needs_incremental_state = 2;
constexpr int type_slice_begin = 1, type_slice_end = 2, type_instant = 3, type_counter = 4;

std::uint64_t read_clock(clockid_t id) {
  timespec t{};
  clock_gettime(id, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(t.tv_nsec);
}

// FNV-1a over a tag and the arguments' bytes, then a final mix: stable
// across builders and runs, never 0 (not a usable uuid).
struct uuid_hash {
  std::uint64_t h = 14695981039346656037ull;
  uuid_hash& add(const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
    return *this;
  }
  uuid_hash& add(std::uint64_t v) { return add(&v, sizeof v); }
  uuid_hash& add(std::string_view s) { return add(s.size()).add(s.data(), s.size()); }
  // 32 bits: a uuid is written in every event packet, as a varint (5
  // bytes, not 10); a trace has far too few threads, processes and counters
  // for a collision to be likely. 64 for a named track with a key: every
  // async range has one, and a program may have millions.
  std::uint64_t done(bool wide = false) const {
    std::uint64_t z = h ^ (h >> 31);
    z *= 0xbf58476d1ce4e5b9ull;
    z ^= z >> 27;
    if (!wide) z &= 0xffffffffu;
    return z ? z : 1;
  }
};

// A packet whose every nested message is under 128 bytes, written into a
// stack buffer with one-byte lengths patched in place: the common event
// costs a few dozen stores and one append, no memmove. Anything longer sets
// `overflow` and the caller writes the packet the general way.
class short_packet {
 public:
  void varint(std::uint64_t v) noexcept {
    if (end_ - p_ < 10) return fail();
    while (v >= 0x80) {
      *p_++ = static_cast<char>(v | 0x80);
      v >>= 7;
    }
    *p_++ = static_cast<char>(v);
  }
  void key(std::uint32_t f, proto::wire w) noexcept { varint(std::uint64_t{f} << 3 | w); }
  void uint(std::uint32_t f, std::uint64_t v) noexcept {
    key(f, proto::varint);
    varint(v);
  }
  void fixed64(std::uint32_t f, std::uint64_t v) noexcept {
    key(f, proto::fixed64);
    if (end_ - p_ < 8) return fail();
    std::memcpy(p_, &v, 8);  // little endian host
    p_ += 8;
  }
  void bytes(std::uint32_t f, std::string_view b) noexcept {
    key(f, proto::length_delimited);
    varint(b.size());
    if (end_ - p_ < static_cast<std::ptrdiff_t>(b.size())) return fail();
    std::memcpy(p_, b.data(), b.size());
    p_ += b.size();
  }
  char* open(std::uint32_t f) noexcept {
    key(f, proto::length_delimited);
    if (p_ == end_) fail();
    return overflow ? p_ : p_++;
  }
  void close(char* at) noexcept {
    const std::ptrdiff_t len = p_ - at - 1;
    if (overflow || len > 127) return fail();
    *at = static_cast<char>(len);
  }
  std::string_view view() const noexcept { return {buf_, static_cast<std::size_t>(p_ - buf_)}; }
  bool overflow = false;

 private:
  void fail() noexcept {
    overflow = true;
    p_ = buf_;  // what follows writes over the start: the result is discarded
  }
  char buf_[192];
  char* p_ = buf_;
  char* const end_ = buf_ + sizeof buf_;
};

constexpr char key(std::uint32_t f, proto::wire w) noexcept { return static_cast<char>(f << 3 | w); }
}  // namespace

perfetto_builder::perfetto_builder(std::string& out, std::uint32_t sequence_id)
    : own_stage_(std::make_unique<packet_stage>(out)), stage_(*own_stage_), out_(out), sequence_id_(sequence_id) {
  set_packet_head();
  write_clock_snapshot();
}

perfetto_builder::perfetto_builder(packet_stage& shared, std::uint32_t sequence_id)
    : stage_(shared), out_(shared.out), sequence_id_(sequence_id) {
  set_packet_head();
  write_clock_snapshot();
}

perfetto_builder::perfetto_builder(packet_stage& shared, std::uint32_t sequence_id, thread_defaults defaults)
    : stage_(shared), out_(shared.out), sequence_id_(sequence_id), default_track_(defaults.default_track),
      incremental_(true) {
  set_packet_head();
  write_thread_defaults(defaults.origin_unix_ns);
}

void perfetto_builder::set_packet_head() {
  char* p = packet_head_;
  *p++ = static_cast<char>(field::trusted_packet_sequence_id << 3);
  p = proto::write_varint(p, sequence_id_);
  *p++ = static_cast<char>(field::timestamp << 3);
  packet_head_size_ = static_cast<std::size_t>(p - packet_head_);
}

std::size_t perfetto_builder::open_packet() {
  sync();
  const std::size_t at = proto::open(out_, field::packet);
  proto::put_uint(out_, field::trusted_packet_sequence_id, sequence_id_);
  return at;
}

void perfetto_builder::write_clock_snapshot() {
  const std::uint64_t realtime = read_clock(CLOCK_REALTIME);
  const std::uint64_t boottime = read_clock(CLOCK_BOOTTIME);
  const std::size_t packet = open_packet();
  proto::put_uint(out_, field::sequence_flags, seq_incremental_state_cleared);
  const std::size_t snapshot = proto::open(out_, field::clock_snapshot);
  const std::pair<std::uint32_t, std::uint64_t> clocks[] = {{clock_realtime, realtime}, {clock_boottime, boottime}};
  proto::put_pair_messages(out_, field::clocks, field::clock_id, field::clock_timestamp, clocks);
  proto::close(out_, snapshot);
  proto::close(out_, packet);
}

void perfetto_builder::trace_metadata(std::span<const std::pair<std::string, std::string>> entries) {
  if (entries.empty()) return;
  const std::size_t packet = open_packet();
  const std::size_t bundle = proto::open(out_, field::chrome_events);
  proto::put_pair_messages(out_, field::chrome_metadata, field::metadata_name, field::metadata_json_value, entries);
  proto::close(out_, bundle);
  proto::close(out_, packet);
}

// As Perfetto's SDK starts a thread's sequence: state cleared, the defaults,
// and a snapshot that makes clock 64 an incremental copy of REALTIME (the
// main sequence's snapshot relates REALTIME to BOOTTIME).
void perfetto_builder::write_thread_defaults(std::int64_t origin_unix_ns) {
  last_ns_ = static_cast<std::uint64_t>(origin_unix_ns);
  const std::size_t packet = open_packet();
  proto::put_uint(out_, field::sequence_flags, seq_incremental_state_cleared);
  const std::size_t defaults = proto::open(out_, field::trace_packet_defaults);
  proto::put_uint(out_, field::timestamp_clock_id, clock_thread_sequence);
  const std::size_t track_defaults = proto::open(out_, field::track_event_defaults);
  proto::put_uint(out_, field::default_track_uuid, default_track_);
  proto::close(out_, track_defaults);
  proto::close(out_, defaults);
  const std::size_t snapshot = proto::open(out_, field::clock_snapshot);
  for (const std::uint32_t id : {clock_realtime, clock_thread_sequence}) {
    const std::size_t clock = proto::open(out_, field::clocks);
    proto::put_uint(out_, field::clock_id, id);
    proto::put_uint(out_, field::clock_timestamp, static_cast<std::uint64_t>(origin_unix_ns));
    if (id == clock_thread_sequence) proto::put_uint(out_, field::clock_is_incremental, 1);
    proto::close(out_, clock);
  }
  proto::close(out_, snapshot);
  proto::close(out_, packet);
}

// ---- tracks ----

bool perfetto_builder::open_track(std::uint64_t uuid, std::size_t (&at)[2]) {
  if (!tracks_.insert(uuid).second) return false;
  at[0] = open_packet();
  at[1] = proto::open(out_, field::track_descriptor);
  proto::put_uint(out_, field::uuid, uuid);
  return true;
}

void perfetto_builder::close_track(const std::size_t (&at)[2]) {
  proto::close(out_, at[1]);
  proto::close(out_, at[0]);
}

std::uint64_t perfetto_builder::process_track(std::int64_t pid, std::string_view name, const track_order& order) {
  const std::uint64_t uuid = uuid_hash{}.add("process").add(static_cast<std::uint64_t>(pid)).done();
  std::size_t at[2];
  if (!open_track(uuid, at)) return uuid;
  const std::size_t process = proto::open(out_, field::process);
  proto::put_int(out_, field::pid, pid);
  if (order.sort_index) proto::put_int(out_, field::legacy_sort_index, *order.sort_index);
  if (!name.empty()) proto::put_string(out_, field::process_name, name);
  if (!order.labels.empty()) proto::put_string(out_, field::process_labels, order.labels);
  proto::close(out_, process);
  close_track(at);
  return uuid;
}

std::uint64_t perfetto_builder::thread_track(std::int64_t pid, std::int64_t tid, std::string_view name,
                                             const track_order& order) {
  const std::uint64_t uuid =
      uuid_hash{}.add("thread").add(static_cast<std::uint64_t>(pid)).add(static_cast<std::uint64_t>(tid)).done();
  if (tracks_.contains(uuid)) return uuid;
  const std::uint64_t parent = process_track(pid, {});
  std::size_t at[2];
  open_track(uuid, at);
  proto::put_uint(out_, field::parent_uuid, parent);
  const std::size_t thread = proto::open(out_, field::thread);
  proto::put_int(out_, field::pid, pid);
  proto::put_int(out_, field::tid, tid);
  if (order.sort_index) proto::put_int(out_, field::legacy_sort_index, *order.sort_index);
  if (!name.empty()) proto::put_string(out_, field::thread_name, name);
  proto::close(out_, thread);
  close_track(at);
  return uuid;
}

std::uint64_t perfetto_builder::named_track(std::string_view name, std::uint64_t parent, std::uint64_t key) {
  const std::uint64_t uuid = uuid_hash{}.add("named").add(name).add(parent).add(key).done(key != 0);
  std::size_t at[2];
  if (!open_track(uuid, at)) return uuid;
  proto::put_string(out_, field::track_name, name);
  if (parent) proto::put_uint(out_, field::parent_uuid, parent);
  close_track(at);
  return uuid;
}

std::uint64_t perfetto_builder::counter_track(std::string_view name, std::uint64_t parent) {
  const std::uint64_t uuid = uuid_hash{}.add("counter").add(name).add(parent).done();
  std::size_t at[2];
  if (!open_track(uuid, at)) return uuid;
  proto::put_string(out_, field::track_name, name);
  if (parent) proto::put_uint(out_, field::parent_uuid, parent);
  proto::close(out_, proto::open(out_, field::counter));  // present and empty: a counter track
  close_track(at);
  return uuid;
}

// ---- interning ----

std::uint64_t perfetto_builder::intern(intern_map& map, table in, std::string_view text) {
  const auto found = map.find(text);
  if (found != map.end()) return found->second;
  const std::uint64_t iid = map.size() + 1;
  const auto it = map.emplace(std::string(text), iid).first;
  pending_.push_back({in, iid, it->first});
  return iid;
}

std::uint64_t perfetto_builder::intern_name(std::string_view name) { return intern(names_, table::name, name); }
std::uint64_t perfetto_builder::intern_category(std::string_view category) {
  return intern(categories_, table::category, category);
}
std::uint64_t perfetto_builder::intern_annotation_name(std::string_view name) {
  return intern(annotation_names_, table::annotation_name, name);
}

std::uint64_t perfetto_builder::string_value_iid(std::string_view value) {
  if (value.size() < min_interned_value) return 0;
  if (const auto found = string_values_.find(value); found != string_values_.end()) return found->second;
  if (string_values_.size() >= max_interned_values || interned_value_bytes_ + value.size() > max_interned_value_bytes)
    return 0;
  interned_value_bytes_ += value.size();
  return intern(string_values_, table::string_value, value);
}

// ---- events ----

void perfetto_builder::write_annotation(const annotation& a, std::uint64_t name_iid, std::uint64_t value_iid) {
  const std::size_t at = proto::open(out_, field::debug_annotations);
  proto::put_uint(out_, field::annotation_name_iid, name_iid);
  if (value_iid) {
    proto::put_uint(out_, field::string_value_iid, value_iid);
    return proto::close(out_, at);
  }
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::int64_t>) proto::put_int(out_, field::int_value, v);
        else if constexpr (std::is_same_v<T, std::uint64_t>) proto::put_uint(out_, field::uint_value, v);
        else if constexpr (std::is_same_v<T, double>) proto::put_double(out_, field::double_value, v);
        else if constexpr (std::is_same_v<T, bool>) proto::put_uint(out_, field::bool_value, v ? 1 : 0);
        else if constexpr (std::is_same_v<T, std::string_view>) proto::put_string(out_, field::string_value, v);
        else proto::put_string(out_, field::legacy_json_value, v.text);
      },
      a.value);
  proto::close(out_, at);
}

bool perfetto_builder::write_short_event(const event_fields& e, std::uint64_t timestamp) {
  short_packet m;
  char* const packet = m.open(field::packet);
  m.uint(field::trusted_packet_sequence_id, sequence_id_);
  m.uint(field::timestamp, timestamp);
  if (!incremental_) m.uint(field::timestamp_clock_id, clock_realtime);
  m.uint(field::sequence_flags, seq_needs_incremental_state);
  if (!pending_.empty()) {
    char* const interned = m.open(field::interned_data);
    for (const pending_entry& p : pending_) {
      char* const entry = m.open(static_cast<std::uint32_t>(p.in));
      m.uint(field::iid, p.iid);
      m.bytes(field::entry_name, p.text);
      m.close(entry);
    }
    m.close(interned);
  }
  char* const event = m.open(field::track_event);
  m.uint(field::type, static_cast<std::uint64_t>(e.type));
  if (e.track != default_track_) m.uint(field::track_uuid, e.track);
  if (e.name_iid) m.uint(field::name_iid, e.name_iid);
  if (!e.name.empty()) m.bytes(field::name, e.name);
  if (e.category_iid) m.uint(field::category_iids, e.category_iid);
  for (std::size_t i = 0; i < e.args.size(); ++i) {
    char* const a = m.open(field::debug_annotations);
    m.uint(field::annotation_name_iid, arg_iids_[i]);
    if (value_iids_[i]) {
      m.uint(field::string_value_iid, value_iids_[i]);
      m.close(a);
      continue;
    }
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::int64_t>) m.uint(field::int_value, static_cast<std::uint64_t>(v));
          else if constexpr (std::is_same_v<T, std::uint64_t>) m.uint(field::uint_value, v);
          else if constexpr (std::is_same_v<T, double>) m.fixed64(field::double_value, std::bit_cast<std::uint64_t>(v));
          else if constexpr (std::is_same_v<T, bool>) m.uint(field::bool_value, v ? 1 : 0);
          else if constexpr (std::is_same_v<T, std::string_view>) m.bytes(field::string_value, v);
          else m.bytes(field::legacy_json_value, v.text);
        },
        e.args[i].value);
    m.close(a);
  }
  for (const std::uint64_t id : e.flow_ids) m.fixed64(field::flow_ids, id);
  for (const std::uint64_t id : e.terminating_flow_ids) m.fixed64(field::terminating_flow_ids, id);
  if (e.has_counter) m.fixed64(field::double_counter_value, std::bit_cast<std::uint64_t>(e.counter_value));
  m.close(event);
  m.close(packet);
  if (m.overflow) return false;
  sync();
  out_.append(m.view());
  pending_.clear();
  return true;
}

void perfetto_builder::write_event(const event_fields& e) {
  arg_iids_.clear();
  value_iids_.clear();
  for (const annotation& a : e.args) {
    arg_iids_.push_back(a.name_iid ? a.name_iid : intern_annotation_name(a.name));
    const auto* text = std::get_if<std::string_view>(&a.value);
    value_iids_.push_back(text ? string_value_iid(*text) : 0);
  }
  const std::uint64_t timestamp = timestamp_value(e.unix_ns);
  if (write_short_event(e, timestamp)) return;
  const std::size_t packet = open_packet();
  proto::put_uint(out_, field::timestamp, timestamp);
  if (!incremental_) proto::put_uint(out_, field::timestamp_clock_id, clock_realtime);
  proto::put_uint(out_, field::sequence_flags, seq_needs_incremental_state);
  if (!pending_.empty()) {
    const std::size_t interned = proto::open(out_, field::interned_data);
    for (const pending_entry& p : pending_) {
      const std::size_t entry = proto::open(out_, static_cast<std::uint32_t>(p.in));
      proto::put_uint(out_, field::iid, p.iid);
      proto::put_string(out_, field::entry_name, p.text);
      proto::close(out_, entry);
    }
    proto::close(out_, interned);
    pending_.clear();
  }
  const std::size_t event = proto::open(out_, field::track_event);
  proto::put_uint(out_, field::type, static_cast<std::uint64_t>(e.type));
  if (e.track != default_track_) proto::put_uint(out_, field::track_uuid, e.track);
  if (e.name_iid) proto::put_uint(out_, field::name_iid, e.name_iid);
  if (!e.name.empty()) proto::put_string(out_, field::name, e.name);
  if (e.category_iid) proto::put_uint(out_, field::category_iids, e.category_iid);
  for (std::size_t i = 0; i < e.args.size(); ++i) write_annotation(e.args[i], arg_iids_[i], value_iids_[i]);
  for (const std::uint64_t id : e.flow_ids) proto::put_fixed64(out_, field::flow_ids, id);
  for (const std::uint64_t id : e.terminating_flow_ids) proto::put_fixed64(out_, field::terminating_flow_ids, id);
  if (e.has_counter) proto::put_double(out_, field::double_counter_value, e.counter_value);
  proto::close(out_, event);
  proto::close(out_, packet);
}

void perfetto_builder::slice_begin(std::uint64_t track, std::int64_t unix_ns, std::string_view name,
                                   std::string_view category, annotations args, std::span<const std::uint64_t> flow_ids) {
  const std::uint64_t name_iid = intern_name(name);
  const std::uint64_t category_iid = category.empty() ? 0 : intern_category(category);
  write_event({.type = type_slice_begin, .track = track, .unix_ns = unix_ns, .name_iid = name_iid,
               .category_iid = category_iid, .args = args, .flow_ids = flow_ids});
}

void perfetto_builder::slice_begin(std::uint64_t track, std::int64_t unix_ns, one_off_name name,
                                   std::string_view category, annotations args) {
  const std::uint64_t category_iid = category.empty() ? 0 : intern_category(category);
  write_event({.type = type_slice_begin, .track = track, .unix_ns = unix_ns, .name = name.text,
               .category_iid = category_iid, .args = args});
}

void perfetto_builder::slice_begin(std::uint64_t track, std::int64_t unix_ns, std::uint64_t name_iid,
                                   std::uint64_t category_iid, annotations args) {
  if (args.empty() && pending_.empty())  // an announced scope's begin: the short form's bytes
    return write_slice_with_id(type_slice_begin, track, unix_ns, name_iid, category_iid, 0, 0);
  write_event({.type = type_slice_begin, .track = track, .unix_ns = unix_ns, .name_iid = name_iid,
               .category_iid = category_iid, .args = args});
}

void perfetto_builder::slice_end(std::uint64_t track, std::int64_t unix_ns, annotations args,
                                 std::span<const std::uint64_t> terminating_flow_ids) {
  if (args.empty() && terminating_flow_ids.empty() && pending_.empty())
    return write_slice_with_id(type_slice_end, track, unix_ns, 0, 0, 0, 0);
  write_event({.type = type_slice_end, .track = track, .unix_ns = unix_ns, .args = args,
               .terminating_flow_ids = terminating_flow_ids});
}

void perfetto_builder::instant(std::uint64_t track, std::int64_t unix_ns, std::string_view name,
                               std::string_view category, annotations args) {
  const std::uint64_t name_iid = intern_name(name);
  const std::uint64_t category_iid = category.empty() ? 0 : intern_category(category);
  instant(track, unix_ns, name_iid, category_iid, args);
}

void perfetto_builder::instant(std::uint64_t track, std::int64_t unix_ns, std::uint64_t name_iid,
                               std::uint64_t category_iid, annotations args) {
  write_event({.type = type_instant, .track = track, .unix_ns = unix_ns, .name_iid = name_iid,
               .category_iid = category_iid, .args = args});
}


constexpr std::size_t varint_size(std::uint64_t v) noexcept {
  return (static_cast<std::size_t>(std::bit_width(v | 1)) + 6) / 7;
}

// The same bytes write_short_event produces for such an event, built from
// a constant run: everything after the timestamp but the arg's value (the
// clock, the flags, the TrackEvent's key and its fields, the annotation's
// keys and name) is kept from the last call with the same type, track,
// name, category and arg name, so the common event is the packet's head,
// the timestamp, one fixed-size copy and the arg. Every key here is one byte
// but timestamp_clock_id's two; every length is under 128 (a packet is at
// most 93 bytes): one byte. arg_name_iid 0: no arg. On a thread's sequence
// the clock and the thread's track are left to the defaults.
const perfetto_builder::slice_fields& perfetto_builder::make_fields(slice_fields& f, int type, std::uint64_t track,
                                                                    std::uint64_t name_iid, std::uint64_t category_iid,
                                                                    std::uint64_t arg_name_iid) {
  static_assert(type_slice_begin == 1 && type_slice_end == 2);  // as fields_for tells them apart
  char* q = f.bytes;
  if (!incremental_) {  // the clock: a thread's sequence has it by default
    static constexpr char clock[] = {static_cast<char>(0xd0), 0x03,  // timestamp_clock_id (58): two key bytes
                                     static_cast<char>(clock_realtime)};
    static_assert(field::timestamp_clock_id << 3 == 0x1d0);
    std::memcpy(q, clock, sizeof clock);
    q += sizeof clock;
  }
  *q++ = key(field::sequence_flags, proto::varint);
  *q++ = static_cast<char>(seq_needs_incremental_state);
  *q++ = key(field::track_event, proto::length_delimited);
  f.event_length_at = static_cast<std::size_t>(q++ - f.bytes);  // written per event
  *q++ = key(field::type, proto::varint);
  *q++ = static_cast<char>(type);
  if (track != default_track_) {
    *q++ = key(field::track_uuid, proto::varint);
    q = proto::write_varint(q, track);
  }
  if (name_iid) {
    *q++ = key(field::name_iid, proto::varint);
    q = proto::write_varint(q, name_iid);
  }
  if (category_iid) {
    *q++ = key(field::category_iids, proto::varint);
    q = proto::write_varint(q, category_iid);
  }
  f.arg_length_at = 0;
  if (arg_name_iid) {
    *q++ = key(field::debug_annotations, proto::length_delimited);
    f.arg_length_at = static_cast<std::size_t>(q++ - f.bytes);
    *q++ = key(field::annotation_name_iid, proto::varint);
    q = proto::write_varint(q, arg_name_iid);
    *q++ = key(field::uint_value, proto::varint);
  }
  f.track = track;
  f.name_iid = name_iid;
  f.category_iid = category_iid;
  f.arg_name_iid = arg_name_iid;
  f.size = static_cast<std::size_t>(q - f.bytes);
  return f;
}

void perfetto_builder::pair_with_pending(std::uint64_t track, std::int64_t begin_ns, std::int64_t end_ns,
                                         std::uint64_t name_iid, std::uint64_t category_iid,
                                         std::uint64_t arg_name_iid, std::uint64_t arg_value) {
  slice_with_pending(type_slice_begin, track, begin_ns, name_iid, category_iid, arg_name_iid, arg_value);
  write_slice_with_id(type_slice_end, track, end_ns, 0, 0, 0, 0);
}

void perfetto_builder::slice_with_pending(int type, std::uint64_t track, std::int64_t unix_ns, std::uint64_t name_iid,
                                          std::uint64_t category_iid, std::uint64_t arg_name_iid,
                                          std::uint64_t arg_value) {
  const annotation arg[] = {{.name = {}, .name_iid = arg_name_iid, .value = arg_value}};
  const annotations args = arg_name_iid ? annotations(arg) : annotations();
  if (type == type_slice_begin) slice_begin(track, unix_ns, name_iid, category_iid, args);
  else slice_end(track, unix_ns, args);
}

void perfetto_builder::counter(std::uint64_t track, std::int64_t unix_ns, double value) {
  write_event({.type = type_counter, .track = track, .unix_ns = unix_ns, .has_counter = true, .counter_value = value});
}

}  // namespace proftrace::detail
