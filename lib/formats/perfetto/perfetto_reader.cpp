// The decoder behind read_perfetto: packets read one at a time from a
// stream, fields walked with proto::field_reader (field numbers as in
// perfetto_builder.cpp and ../shared/reference/perfetto-trace-format.md).
#include "perfetto_reader.hpp"

#include <boost/iostreams/device/file.hpp>
#include <boost/iostreams/filtering_stream.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <optional>
#include <unordered_map>

#include "formats/json_text.hpp"
#include "proto_decoder.hpp"
#include "spool/compression_filters.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

// A packet larger than this is taken as garbage (Perfetto's own are < 1 MiB).
constexpr std::uint64_t max_packet_bytes = std::uint64_t{64} << 20;
constexpr std::uint32_t clock_realtime = 1, clock_boottime = 6;
constexpr bool is_sequence_clock(std::uint32_t id) noexcept { return id >= 64 && id < 128; }

// One kind of interned string by iid. Writers hand out small dense iids,
// so those index a vector; one far past the entries set so far (garbage, a
// crafted file) goes to a map, so memory follows the entries, not the iids.
class string_table {
 public:
  void set(std::uint64_t iid, std::string_view text) {
    ++entries_;
    if (iid >= dense_.size()) {
      if (iid >= dense_limit || iid > 2 * entries_ + 64) return void(sparse_[iid] = std::string(text));
      dense_.resize(std::min<std::size_t>(dense_limit, std::max<std::size_t>(iid + 1, 2 * dense_.size())));
    }
    dense_[iid].emplace(text);
  }
  const std::string* find(std::uint64_t iid) const {
    if (iid < dense_.size() && dense_[iid]) return &*dense_[iid];
    if (sparse_.empty()) return nullptr;
    const auto it = sparse_.find(iid);
    return it == sparse_.end() ? nullptr : &it->second;
  }

 private:
  static constexpr std::uint64_t dense_limit = 1 << 14;
  std::uint64_t entries_ = 0;
  std::vector<std::optional<std::string>> dense_;
  std::unordered_map<std::uint64_t, std::string> sparse_;
};

struct interning {
  string_table names, categories, annotation_names, strings;
};

// A clock of one sequence's own (ids 64 to 127): its unit, whether its
// timestamps are deltas, its value (the last one, in ns) and where it
// puts REALTIME (unknown when its snapshot had no clock to place it by).
// Unsigned: the arithmetic wraps (as two's complement int64 does in
// trace_processor) instead of overflowing on garbage.
struct sequence_clock {
  std::uint64_t unit_ns = 1, value_ns = 0, to_unix_ns = 0;
  bool incremental = false, placed = false;
};

// What a packet sequence carries from packet to packet: its interned
// strings and TracePacketDefaults (both reset when its state is cleared)
// and its own clocks.
struct sequence_state {
  std::unique_ptr<interning> tables;  // made by the sequence's first interned data: a sequence costs little without
  const interning& interned() const {
    static const interning none;
    return tables ? *tables : none;
  }
  std::uint32_t default_clock = 0;  // 0: none
  std::uint64_t default_track = 0;  // 0: none
  std::unordered_map<std::uint32_t, sequence_clock> clocks;
};

// The interned string `iid` into `out` (reusing its capacity), "iid N" when missing.
void lookup(const string_table& table, std::uint64_t iid, std::string& out) {
  if (const std::string* s = table.find(iid)) out.assign(*s);
  else out = "iid " + std::to_string(iid);
}

// Clears `e` for the next event, keeping its strings' and vectors' capacity.
void reset(decoded_event& e) {
  e.type = decoded_event::kind::slice;
  e.name.clear();
  e.category.clear();
  e.start_ns = e.dur_ns = 0;
  e.value = 0;
  e.args.clear();
  e.flow_ids.clear();
  e.terminating_flow_ids.clear();
}

// Walks every field of `message`; throws on malformed bytes.
template <class F>
void each_field(std::string_view message, const char* what, F&& on_field) {
  proto::field_reader r(message);
  proto::field f;
  while (r.next(f)) on_field(f);
  if (r.error()) throw perfetto_error(std::string("malformed ") + what + ": " + r.error());
}

class decoder {
 public:
  decoder(const perfetto_callbacks& cb, perfetto_read_result& result) : cb_(cb), result_(result) {}

  void packet(std::string_view bytes);
  void finish() {
    for (const auto& [uuid, t] : tracks_) result_.open_slices += t.depth;
  }

 private:
  struct packet_fields {
    std::uint64_t timestamp = 0, flags = 0;
    std::uint32_t clock = 0, sequence = 0;  // clock 0: not given
    bool has_timestamp = false;
    std::string_view interned, event, descriptor, snapshot, defaults, chrome_events;
  };
  // A track and its open slices: open[0, depth) is the stack; the slots
  // above are kept for reuse, so a BEGIN allocates nothing once warm (and
  // is swapped in as a pointer).
  struct track_state {
    std::shared_ptr<decoded_track> track;
    std::vector<std::unique_ptr<decoded_event>> open;
    std::size_t depth = 0;
    std::size_t skipped = 0;  // BEGINs on top of the stack not held (max_open_slices): their ENDs are skipped too
  };
  void clock_snapshot(std::string_view bytes, sequence_state& seq);
  void packet_defaults(std::string_view bytes, sequence_state& seq);
  void interned_data(std::string_view bytes, interning& tables);
  void track_descriptor(std::string_view bytes);
  void chrome_metadata(std::string_view bundle);
  void track_event(std::string_view bytes, std::int64_t unix_ns, const sequence_state& seq);
  std::uint64_t event_fields(std::string_view bytes, const interning& tables, decoded_event& e, std::uint64_t& uuid);
  void slice_end(track_state& t, decoded_event& end);
  // Takes the slice that began at `begin_ns` (none: the innermost) off the
  // track's stack without delivering it.
  void withdraw(track_state& t, std::optional<std::int64_t> begin_ns);
  void annotation(std::string_view bytes, const interning& tables, decoded_arg& a);
  track_state& track(std::uint64_t uuid);
  sequence_state& sequence(std::uint32_t id) {
    if (!last_state_ || last_sequence_ != id) last_state_ = &sequences_[id], last_sequence_ = id;
    return *last_state_;
  }
  void deliver(const decoded_event& e) {
    ++result_.events;
    if (cb_.on_event && !cb_.on_event(e)) result_.stopped = true;
  }
  // The packet's timestamp on its clock (its own, else its sequence's
  // default, else BOOTTIME) as Unix ns; none for a sequence clock that no
  // snapshot placed.
  std::optional<std::int64_t> to_unix(const packet_fields& p, sequence_state& seq) {
    const std::uint32_t clock = p.clock ? p.clock : seq.default_clock ? seq.default_clock : clock_boottime;
    if (is_sequence_clock(clock)) return on_sequence_clock(p, seq, clock);
    if (!offset_valid_ || offset_clock_ != clock) {
      const auto real = snapshot_.find(clock_realtime), own = snapshot_.find(clock);
      offset_ = 0;
      if (clock != clock_realtime && real != snapshot_.end() && own != snapshot_.end()) offset_ = real->second - own->second;
      offset_clock_ = clock, offset_valid_ = true;
    }
    return static_cast<std::int64_t>(p.timestamp + offset_);
  }
  std::optional<std::int64_t> on_sequence_clock(const packet_fields& p, sequence_state& seq, std::uint32_t clock) {
    const auto it = seq.clocks.find(clock);
    if (it == seq.clocks.end()) return std::nullopt;
    sequence_clock& c = it->second;
    const std::uint64_t ns = p.timestamp * c.unit_ns;  // a negative delta wraps to its value
    c.value_ns = c.incremental ? c.value_ns + ns : ns;
    if (!c.placed) return std::nullopt;
    return static_cast<std::int64_t>(c.value_ns + c.to_unix_ns);
  }

  const perfetto_callbacks& cb_;
  perfetto_read_result& result_;
  std::unordered_map<std::uint32_t, sequence_state> sequences_;
  std::unordered_map<std::uint64_t, track_state> tracks_;
  std::size_t open_total_ = 0;  // slices open over every track
  std::unordered_map<std::uint32_t, std::uint64_t> snapshot_;  // clock id -> ns, the latest snapshot
  // Caches: consecutive packets mostly share a sequence and clock, and use
  // a few tracks in turn (unordered_map's elements stay put, so the pointers
  // stay valid).
  sequence_state* last_state_ = nullptr;
  std::uint32_t last_sequence_ = 0;
  struct cached_track {
    std::uint64_t uuid = 0;
    track_state* state = nullptr;
  };
  std::array<cached_track, 8> track_cache_{};
  std::size_t track_cache_next_ = 0;  // the entry replaced next
  bool offset_valid_ = false;
  std::uint32_t offset_clock_ = 0;
  std::uint64_t offset_ = 0;
  std::unique_ptr<decoded_event> scratch_ = std::make_unique<decoded_event>();  // the event being decoded
};

void decoder::packet(std::string_view bytes) {
  packet_fields p;
  each_field(bytes, "TracePacket", [&](const proto::field& f) {
    if (f.type == proto::varint) {
      switch (f.number) {
        case 8: p.timestamp = f.value, p.has_timestamp = true; break;
        case 58: p.clock = static_cast<std::uint32_t>(f.value); break;
        case 10: p.sequence = static_cast<std::uint32_t>(f.value); break;
        case 13: p.flags = f.value; break;
        default: break;
      }
    } else if (f.type == proto::length_delimited) {  // (a field of another wire type than its own: ignored)
      switch (f.number) {
        case 12: p.interned = f.bytes; break;
        case 11: p.event = f.bytes; break;
        case 60: p.descriptor = f.bytes; break;
        case 6: p.snapshot = f.bytes; break;
        case 59: p.defaults = f.bytes; break;
        case 5: p.chrome_events = f.bytes; break;
        default: break;
      }
    }
  });
  sequence_state& seq = sequence(p.sequence);
  if (p.flags & 1) {  // SEQ_INCREMENTAL_STATE_CLEARED: interning and defaults start over
    seq.tables.reset();
    seq.default_clock = 0, seq.default_track = 0;
  }
  // In trace_processor's order: defaults, interned data, and a snapshot's
  // packet is read no further.
  if (!p.defaults.empty()) packet_defaults(p.defaults, seq);
  if (!p.interned.empty()) {
    if (!seq.tables) seq.tables = std::make_unique<interning>();
    interned_data(p.interned, *seq.tables);
  }
  if (!p.snapshot.empty()) return clock_snapshot(p.snapshot, seq);
  if (!p.descriptor.empty()) track_descriptor(p.descriptor);
  if (!p.chrome_events.empty()) chrome_metadata(p.chrome_events);
  // Every timestamp advances an incremental clock, event or not.
  const std::optional<std::int64_t> unix_ns = p.has_timestamp ? to_unix(p, seq) : std::optional<std::int64_t>(0);
  if (p.event.empty()) return;
  if (!unix_ns) return void(++result_.unplaced);
  track_event(p.event, *unix_ns, seq);
}

void decoder::packet_defaults(std::string_view bytes, sequence_state& seq) {
  each_field(bytes, "TracePacketDefaults", [&](const proto::field& f) {
    if (f.number == 58) seq.default_clock = static_cast<std::uint32_t>(f.value);
    if (f.number == 11 && f.type == proto::length_delimited)
      each_field(f.bytes, "TrackEventDefaults", [&](const proto::field& d) {
        if (d.number == 11) seq.default_track = d.value;
      });
  });
}

// A snapshot of global clocks replaces the last one; a sequence's own clocks
// are placed on REALTIME by a global clock beside them (REALTIME, or
// BOOTTIME through the last global snapshot) and leave it alone.
void decoder::clock_snapshot(std::string_view bytes, sequence_state& seq) {
  std::unordered_map<std::uint32_t, std::uint64_t> global;
  std::vector<std::pair<std::uint32_t, sequence_clock>> own;
  each_field(bytes, "ClockSnapshot", [&](const proto::field& f) {
    if (f.number != 1 || f.type != proto::length_delimited) return;
    std::uint32_t id = 0;
    std::uint64_t ts = 0;
    sequence_clock c;
    each_field(f.bytes, "ClockSnapshot.Clock", [&](const proto::field& k) {
      if (k.number == 1) id = static_cast<std::uint32_t>(k.value);
      if (k.number == 2) ts = k.value;
      if (k.number == 3) c.incremental = k.value != 0;
      if (k.number == 4 && k.value != 0) c.unit_ns = k.value;
    });
    if (!is_sequence_clock(id)) return void(global[id] = ts);
    c.value_ns = ts * c.unit_ns;
    own.emplace_back(id, c);
  });
  if (own.empty()) {
    snapshot_ = std::move(global);
    offset_valid_ = false;
    return;
  }
  const auto real = global.find(clock_realtime), boot = global.find(clock_boottime);
  const auto last_real = snapshot_.find(clock_realtime), last_boot = snapshot_.find(clock_boottime);
  std::uint64_t unix_at_snapshot = 0;
  bool placed = true;
  if (real != global.end()) unix_at_snapshot = real->second;
  else if (boot != global.end() && last_real != snapshot_.end() && last_boot != snapshot_.end())
    unix_at_snapshot = boot->second + (last_real->second - last_boot->second);
  else placed = false;  // its events are skipped and counted
  for (auto& [id, c] : own) {
    c.placed = placed;
    c.to_unix_ns = unix_at_snapshot - c.value_ns;
    seq.clocks[id] = c;
  }
}

void decoder::interned_data(std::string_view bytes, interning& tables) {
  each_field(bytes, "InternedData", [&](const proto::field& f) {
    string_table* table = nullptr;
    switch (f.number) {
      case 1: table = &tables.categories; break;
      case 2: table = &tables.names; break;
      case 3: table = &tables.annotation_names; break;
      case 29: table = &tables.strings; break;
      default: return;
    }
    if (f.type != proto::length_delimited) throw perfetto_error("malformed InternedData: an entry that is not a message");
    std::uint64_t iid = 0;
    std::string_view text;
    each_field(f.bytes, "interned entry", [&](const proto::field& e) {
      if (e.number == 1) iid = e.value;
      if (e.number == 2) text = e.bytes;
    });
    table->set(iid, text);
  });
}

// ChromeEventBundle.metadata (field 2): a name and one typed value each,
// given on as JSON text. Its other fields (legacy JSON events) are not read.
void decoder::chrome_metadata(std::string_view bundle) {
  each_field(bundle, "ChromeEventBundle", [&](const proto::field& f) {
    if (f.number != 2 || f.type != proto::length_delimited) return;
    std::string name, json;
    each_field(f.bytes, "ChromeMetadata", [&](const proto::field& m) {
      switch (m.number) {
        case 1: name = std::string(m.bytes); break;
        case 2: json.clear(), append_json_string(json, m.bytes); break;   // string_value
        case 3: json = m.value ? "true" : "false"; break;                   // bool_value
        case 4: json = std::to_string(static_cast<std::int64_t>(m.value)); break;  // int_value
        case 5: json = std::string(m.bytes); break;                         // json_value
        default: break;
      }
    });
    if (!name.empty() && !json.empty() && cb_.on_metadata) cb_.on_metadata(name, json);
  });
}

void decoder::track_descriptor(std::string_view bytes) {
  decoded_track t;
  const auto descriptor = [&](std::string_view b, bool thread) {
    each_field(b, thread ? "ThreadDescriptor" : "ProcessDescriptor", [&](const proto::field& f) {
      if (f.number == 1) t.pid = static_cast<std::int32_t>(f.value), t.has_pid = true;
      if (thread && f.number == 2) t.tid = static_cast<std::int64_t>(f.value);
      if (thread && f.number == 5) t.thread_name = std::string(f.bytes);
      if (!thread && f.number == 6) t.process_name = std::string(f.bytes);
      if (f.number == 3) t.sort_index = static_cast<std::int32_t>(f.value);
      if (!thread && f.number == 8) (t.process_labels += t.process_labels.empty() ? "" : ",") += f.bytes;
    });
  };
  each_field(bytes, "TrackDescriptor", [&](const proto::field& f) {
    switch (f.number) {
      case 1: t.uuid = f.value; break;
      case 2: t.name = std::string(f.bytes); break;
      case 3: t.is_process = true, descriptor(f.bytes, false); break;
      case 4: t.is_thread = true, descriptor(f.bytes, true); break;
      case 5: t.parent = f.value; break;
      case 8: t.is_counter = true; break;
      default: break;
    }
  });
  if (tracks_.contains(t.uuid)) return;  // declared again (every writer session may): the first stands
  const auto parent = tracks_.find(t.parent);
  if (!t.has_pid && parent != tracks_.end() && parent->second.track->has_pid)
    t.pid = parent->second.track->pid, t.has_pid = true;
  // A named track under a thread's (profile::step()'s spans, which need not
  // nest with the thread's scopes) is that thread's: its events keep the tid.
  if (!t.is_thread && !t.is_process && !t.is_counter && parent != tracks_.end() && parent->second.track->is_thread)
    t.is_thread = true, t.tid = parent->second.track->tid;
  const auto& stored = tracks_.emplace(t.uuid, track_state{std::make_shared<decoded_track>(std::move(t)), {}, 0}).first->second;
  if (cb_.on_track) cb_.on_track(*stored.track);
}

decoder::track_state& decoder::track(std::uint64_t uuid) {
  for (const cached_track& c : track_cache_)
    if (c.state && c.uuid == uuid) return *c.state;
  auto it = tracks_.find(uuid);
  if (it == tracks_.end()) {  // used without a descriptor: an anonymous track
    auto t = std::make_shared<decoded_track>();
    t->uuid = uuid;
    t->name = "track " + std::to_string(uuid);
    it = tracks_.emplace(uuid, track_state{std::move(t), {}, 0}).first;
  }
  track_cache_[track_cache_next_] = {uuid, &it->second};
  track_cache_next_ = (track_cache_next_ + 1) % track_cache_.size();
  return it->second;
}

void decoder::annotation(std::string_view bytes, const interning& tables, decoded_arg& a) {
  bool valued = false;
  each_field(bytes, "DebugAnnotation", [&](const proto::field& f) {
    switch (f.number) {
      case 1: return lookup(tables.annotation_names, f.value, a.name);
      case 10: return void(a.name.assign(f.bytes));
      case 2: a.value = f.value != 0; break;
      case 3: case 7: a.value = f.value; break;
      case 4: a.value = static_cast<std::int64_t>(f.value); break;
      case 5: a.value = f.as_double(); break;
      case 6: a.value = std::string(f.bytes); break;
      case 9: a.value = decoded_json{std::string(f.bytes)}; break;
      case 17: lookup(tables.strings, f.value, a.value.emplace<std::string>()); break;
      default: return;
    }
    valued = true;
  });
  if (!valued) a.value = decoded_json{"null"};  // nested values (dicts, arrays) are not decoded
}

// Fixed64 ids, one per field or packed in one length-delimited field.
void add_ids(const proto::field& f, std::vector<std::uint64_t>& to) {
  if (f.type != proto::length_delimited) return to.push_back(f.value);
  for (std::size_t i = 0; i + 8 <= f.bytes.size(); i += 8) {
    std::uint64_t v = 0;
    for (int b = 0; b < 8; ++b) v |= std::uint64_t{static_cast<unsigned char>(f.bytes[i + b])} << (8 * b);
    to.push_back(v);
  }
}

// Decodes a TrackEvent's fields into `e` (reset first, track not set); returns
// its type. `uuid` is left as it is unless the event names its track.
std::uint64_t decoder::event_fields(std::string_view bytes, const interning& tables, decoded_event& e,
                                    std::uint64_t& uuid) {
  reset(e);
  std::uint64_t type = 0;
  each_field(bytes, "TrackEvent", [&](const proto::field& f) {
    switch (f.number) {
      case 9: type = f.value; break;
      case 11: uuid = f.value; break;
      case 10: lookup(tables.names, f.value, e.name); break;
      case 23: e.name.assign(f.bytes); break;
      case 3: lookup(tables.categories, f.value, e.category); break;
      case 22: e.category.assign(f.bytes); break;
      case 4: annotation(f.bytes, tables, e.args.emplace_back()); break;
      case 30: e.value = static_cast<double>(static_cast<std::int64_t>(f.value)); break;
      case 44: e.value = f.as_double(); break;
      case 47: add_ids(f, e.flow_ids); break;
      case 48: add_ids(f, e.terminating_flow_ids); break;
      default: break;
    }
  });
  return type;
}

void decoder::track_event(std::string_view bytes, std::int64_t unix_ns, const sequence_state& seq) {
  decoded_event& e = *scratch_;
  std::uint64_t uuid = seq.default_track;  // unless the event names one
  const std::uint64_t type = event_fields(bytes, seq.interned(), e, uuid);
  e.start_ns = unix_ns;
  track_state& t = track(uuid);
  if (e.track != t.track) e.track = t.track;
  switch (type) {
    case 1:  // BEGIN: onto the stack; the slot's old event becomes the next scratch
      if (PROFTRACE_UNLIKELY(t.skipped > 0 || open_total_ >= max_open_slices)) {
        ++t.skipped;
        return void(++result_.skipped_open);
      }
      if (t.depth == t.open.size()) t.open.push_back(std::make_unique<decoded_event>());
      ++open_total_;
      return std::swap(t.open[t.depth++], scratch_);
    case 2: return slice_end(t, e);
    case 3: e.type = decoded_event::kind::instant; return deliver(e);
    case 4:
      e.type = decoded_event::kind::counter;
      e.name = e.track->name;
      return deliver(e);
    default: return;  // legacy or unknown event types: skipped
  }
}

// The END of the first thread's part of a scope that ended on another
// thread: which open slice it ends, by its BEGIN's time (none: the innermost).
struct withdrawn_end {
  std::optional<std::int64_t> begin_ns;
};
std::optional<withdrawn_end> withdrawn_slice(const decoded_event& end) {
  for (const decoded_arg& a : end.args) {
    if (a.name != withdrawn_slice_arg) continue;
    if (const auto* ns = std::get_if<std::int64_t>(&a.value)) return withdrawn_end{*ns};
    if (const auto* ns = std::get_if<std::uint64_t>(&a.value)) return withdrawn_end{static_cast<std::int64_t>(*ns)};
    if (const auto* b = std::get_if<bool>(&a.value); b && *b) return withdrawn_end{};
  }
  return std::nullopt;
}

void decoder::withdraw(track_state& t, std::optional<std::int64_t> begin_ns) {
  std::size_t at = t.depth - 1;  // none: the innermost
  if (begin_ns) {
    // The outermost slice that began then: the ones its thread opened after
    // it began later (a tie within the same ns is the rare exception).
    at = 0;
    while (at < t.depth && t.open[at]->start_ns != *begin_ns) ++at;
    if (at == t.depth) return void(++result_.unmatched_ends);
  }
  // Out of the stack, the slices above it moved down; its slot goes above them for reuse.
  std::rotate(t.open.begin() + static_cast<std::ptrdiff_t>(at), t.open.begin() + static_cast<std::ptrdiff_t>(at) + 1,
              t.open.begin() + static_cast<std::ptrdiff_t>(t.depth));
  --t.depth;
  --open_total_;
  ++result_.withdrawn_slices;
}

void decoder::slice_end(track_state& t, decoded_event& end) {
  if (t.skipped > 0) return void(--t.skipped);
  if (t.depth == 0) return void(++result_.unmatched_ends);
  // The part of a scope that ended on another thread which its first
  // thread's track shows (proftrace's writer had written its begin): the
  // scope itself is the async range beside it, as in the JSON trace, so
  // its slice is not delivered; it may lie under slices still open.
  if (PROFTRACE_UNLIKELY(!end.args.empty()))
    if (const auto w = withdrawn_slice(end)) return withdraw(t, w->begin_ns);
  decoded_event& begin = *t.open[t.depth - 1];
  // A duration below 0 or past int64 (it wraps negative) is no slice any
  // reader can use: every command refuses the trace with this message.
  const std::int64_t dur = ns_after(end.start_ns, begin.start_ns);
  if (end.start_ns < begin.start_ns || dur < 0)
    throw perfetto_error("a slice that ends before it begins ('" + begin.name + "' from " +
                         std::to_string(begin.start_ns) + " to " + std::to_string(end.start_ns) + " ns)");
  --open_total_;
  --t.depth;
  begin.dur_ns = dur;
  for (auto& a : end.args) begin.args.push_back(std::move(a));
  for (auto id : end.terminating_flow_ids) begin.terminating_flow_ids.push_back(id);
  deliver(begin);
}

// The input read in blocks (larger ones only for a packet that needs it),
// so that packets are decoded where they lie instead of byte by byte.
class block_reader {
 public:
  explicit block_reader(std::istream& in) : in_(in) {}

  // The bytes from the current position: at least `n` unless the input ends first.
  std::string_view peek(std::size_t n) {
    if (end_ - pos_ < n && !ended_) refill(n);
    return {buf_.data() + pos_, end_ - pos_};
  }
  void skip(std::size_t n) { pos_ += n; }

 private:
  static constexpr std::size_t block_bytes = std::size_t{1} << 20;

  void refill(std::size_t n) {
    if (end_ > pos_) std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
    end_ -= pos_;
    pos_ = 0;
    if (buf_.size() < std::max(n, block_bytes)) buf_.resize(std::max(n, block_bytes));
    while (end_ < n && !ended_) {
      in_.read(buf_.data() + end_, static_cast<std::streamsize>(buf_.size() - end_));
      end_ += static_cast<std::size_t>(in_.gcount());
      ended_ = !in_;
    }
  }

  std::istream& in_;
  std::vector<char> buf_;
  std::size_t pos_ = 0, end_ = 0;
  bool ended_ = false;
};

char hex_digit(int v) { return "0123456789abcdef"[v & 15]; }

// A packet's key and length at the start of `head` (the bytes available
// there): the header's size, 0 when the input ends inside it; throws on garbage.
std::size_t packet_header(std::string_view head, std::uint64_t offset, std::uint64_t& len) {
  const auto key = static_cast<unsigned char>(head[0]);
  if (!looks_like_perfetto(key))
    throw perfetto_error(std::string(offset == 0 ? "not a Perfetto trace: " : "garbage: ") + "byte 0x" +
                         hex_digit(key >> 4) + hex_digit(key) + " at offset " + std::to_string(offset) +
                         " where a Trace.packet field (0x0a) must start");
  const std::size_t length_bytes = std::min<std::size_t>(head.size() - 1, 10);
  const char* body = proto::get_varint(head.data() + 1, head.data() + 1 + length_bytes, len);
  if (!body && length_bytes == 10) throw perfetto_error("a packet length over 10 bytes (not a Perfetto trace?)");
  if (!body) return 0;
  if (len > max_packet_bytes)
    throw perfetto_error("garbage: a packet of " + std::to_string(len) + " bytes at offset " + std::to_string(offset));
  return static_cast<std::size_t>(body - head.data());
}

}  // namespace

perfetto_read_result read_perfetto(std::istream& in, const perfetto_callbacks& callbacks) {
  perfetto_read_result result;
  decoder d(callbacks, result);
  block_reader src(in);
  std::uint64_t offset = 0;
  const auto cut = [&](const std::string& where) {
    result.truncated = true;
    result.truncation = (in.bad() ? "the compressed stream broke off or is corrupt " : "the input ends ") + where;
  };
  while (!result.stopped) {
    const std::string_view head = src.peek(11);  // the key and at most 10 bytes of length
    if (head.empty()) {
      if (in.bad()) cut("after packet " + std::to_string(result.packets) + " (byte " + std::to_string(offset) + ")");
      break;
    }
    std::uint64_t len = 0;
    const std::size_t header = packet_header(head, offset, len);
    if (header == 0) {
      cut("inside packet " + std::to_string(result.packets) + "'s length at byte " + std::to_string(offset));
      break;
    }
    const std::string_view packet = src.peek(header + static_cast<std::size_t>(len));
    if (packet.size() < header + len) {
      cut("inside packet " + std::to_string(result.packets) + " at byte " + std::to_string(offset) + " (" +
          std::to_string(packet.size() - header) + " of its " + std::to_string(len) + " bytes)");
      break;
    }
    try {
      d.packet(packet.substr(header, static_cast<std::size_t>(len)));
    } catch (const perfetto_error& e) {
      throw perfetto_error(std::string(e.what()) + " in packet " + std::to_string(result.packets) + " at offset " +
                           std::to_string(offset));
    }
    src.skip(header + static_cast<std::size_t>(len));
    ++result.packets;
    offset += header + len;
  }
  d.finish();
  result.bytes = offset;
  return result;
}

perfetto_read_result read_perfetto(const std::filesystem::path& path, const perfetto_callbacks& callbacks) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw perfetto_error(path.string() + ": cannot open");
  namespace io = boost::iostreams;
  io::filtering_istream in;
  const compression c = compression_of(path);
  push_decompressor(in, c);
  const bool compressed = c != compression::none;
  if (compressed) in.push(file);
  try {
    return read_perfetto(compressed ? static_cast<std::istream&>(in) : file, callbacks);
  } catch (const perfetto_error& e) {
    throw perfetto_error(path.string() + ": " + e.what());
  }
}

}  // namespace proftrace::detail
