// The decoder behind read_perfetto: packets read one at a time from a
// stream, fields walked with proto::field_reader (field numbers as in
// perfetto_builder.cpp and ../shared/reference/perfetto-trace-format.md).
#include "writers/perfetto/perfetto_reader.hpp"

#include <boost/iostreams/device/file.hpp>
#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filter/zstd.hpp>
#include <boost/iostreams/filtering_stream.hpp>

#include <fstream>
#include <unordered_map>

#include "writers/perfetto/proto_decoder.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

namespace {

// A packet larger than this is taken as garbage (Perfetto's own are < 1 MiB).
constexpr std::uint64_t max_packet_bytes = std::uint64_t{64} << 20;
constexpr std::uint32_t clock_realtime = 1;

struct interning {
  std::unordered_map<std::uint64_t, std::string> names, categories, annotation_names, strings;
};

std::string lookup(const std::unordered_map<std::uint64_t, std::string>& table, std::uint64_t iid) {
  const auto it = table.find(iid);
  return it == table.end() ? "iid " + std::to_string(iid) : it->second;
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
    for (const auto& [uuid, stack] : open_) result_.open_slices += stack.size();
  }

 private:
  struct packet_fields {
    std::uint64_t timestamp = 0, flags = 0;
    std::uint32_t clock = 6, sequence = 0;
    bool has_timestamp = false;
    std::string_view interned, event, descriptor, snapshot;
  };
  void clock_snapshot(std::string_view bytes);
  void interned_data(std::string_view bytes, interning& tables);
  void track_descriptor(std::string_view bytes);
  void track_event(std::string_view bytes, std::int64_t unix_ns, const interning& tables);
  decoded_arg annotation(std::string_view bytes, const interning& tables);
  std::shared_ptr<const decoded_track> track(std::uint64_t uuid);
  void deliver(const decoded_event& e) {
    ++result_.events;
    if (cb_.on_event && !cb_.on_event(e)) result_.stopped = true;
  }
  std::int64_t to_unix(const packet_fields& p) const {
    const auto real = snapshot_.find(clock_realtime), own = snapshot_.find(p.clock);
    std::uint64_t ts = p.timestamp;
    if (p.clock != clock_realtime && real != snapshot_.end() && own != snapshot_.end()) ts += real->second - own->second;
    return static_cast<std::int64_t>(ts);
  }

  const perfetto_callbacks& cb_;
  perfetto_read_result& result_;
  std::unordered_map<std::uint32_t, interning> sequences_;
  std::unordered_map<std::uint64_t, std::shared_ptr<decoded_track>> tracks_;
  std::unordered_map<std::uint64_t, std::vector<decoded_event>> open_;
  std::unordered_map<std::uint32_t, std::uint64_t> snapshot_;  // clock id -> ns, the latest snapshot
};

void decoder::packet(std::string_view bytes) {
  packet_fields p;
  each_field(bytes, "TracePacket", [&](const proto::field& f) {
    switch (f.number) {
      case 8: p.timestamp = f.value, p.has_timestamp = true; break;
      case 58: p.clock = static_cast<std::uint32_t>(f.value); break;
      case 10: p.sequence = static_cast<std::uint32_t>(f.value); break;
      case 13: p.flags = f.value; break;
      case 12: p.interned = f.bytes; break;
      case 11: p.event = f.bytes; break;
      case 60: p.descriptor = f.bytes; break;
      case 6: p.snapshot = f.bytes; break;
      default: break;
    }
  });
  interning& tables = sequences_[p.sequence];
  if (p.flags & 1) tables = interning{};  // SEQ_INCREMENTAL_STATE_CLEARED
  if (!p.snapshot.empty()) clock_snapshot(p.snapshot);
  if (!p.interned.empty()) interned_data(p.interned, tables);
  if (!p.descriptor.empty()) track_descriptor(p.descriptor);
  if (!p.event.empty()) track_event(p.event, to_unix(p), tables);
}

void decoder::clock_snapshot(std::string_view bytes) {
  snapshot_.clear();
  each_field(bytes, "ClockSnapshot", [&](const proto::field& f) {
    if (f.number != 1 || f.type != proto::length_delimited) return;
    std::uint32_t id = 0;
    std::uint64_t ns = 0;
    each_field(f.bytes, "ClockSnapshot.Clock", [&](const proto::field& c) {
      if (c.number == 1) id = static_cast<std::uint32_t>(c.value);
      if (c.number == 2) ns = c.value;
    });
    snapshot_[id] = ns;
  });
}

void decoder::interned_data(std::string_view bytes, interning& tables) {
  each_field(bytes, "InternedData", [&](const proto::field& f) {
    std::unordered_map<std::uint64_t, std::string>* table = nullptr;
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
    (*table)[iid] = std::string(text);
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
  if (!t.has_pid && parent != tracks_.end() && parent->second->has_pid) t.pid = parent->second->pid, t.has_pid = true;
  const auto& stored = tracks_.emplace(t.uuid, std::make_shared<decoded_track>(std::move(t))).first->second;
  if (cb_.on_track) cb_.on_track(*stored);
}

std::shared_ptr<const decoded_track> decoder::track(std::uint64_t uuid) {
  auto it = tracks_.find(uuid);
  if (it == tracks_.end()) {  // used without a descriptor: an anonymous track
    auto t = std::make_shared<decoded_track>();
    t->uuid = uuid;
    t->name = "track " + std::to_string(uuid);
    it = tracks_.emplace(uuid, std::move(t)).first;
  }
  return it->second;
}

decoded_arg decoder::annotation(std::string_view bytes, const interning& tables) {
  decoded_arg a;
  a.value = decoded_json{"null"};  // nested values (dicts, arrays) are not decoded
  each_field(bytes, "DebugAnnotation", [&](const proto::field& f) {
    switch (f.number) {
      case 1: a.name = lookup(tables.annotation_names, f.value); break;
      case 10: a.name = std::string(f.bytes); break;
      case 2: a.value = f.value != 0; break;
      case 3: case 7: a.value = f.value; break;
      case 4: a.value = static_cast<std::int64_t>(f.value); break;
      case 5: a.value = f.as_double(); break;
      case 6: a.value = std::string(f.bytes); break;
      case 9: a.value = decoded_json{std::string(f.bytes)}; break;
      case 17: a.value = lookup(tables.strings, f.value); break;
      default: break;
    }
  });
  return a;
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

void decoder::track_event(std::string_view bytes, std::int64_t unix_ns, const interning& tables) {
  decoded_event e;
  std::uint64_t type = 0, uuid = 0;
  each_field(bytes, "TrackEvent", [&](const proto::field& f) {
    switch (f.number) {
      case 9: type = f.value; break;
      case 11: uuid = f.value; break;
      case 10: e.name = lookup(tables.names, f.value); break;
      case 23: e.name = std::string(f.bytes); break;
      case 3: e.category = lookup(tables.categories, f.value); break;
      case 22: e.category = std::string(f.bytes); break;
      case 4: e.args.push_back(annotation(f.bytes, tables)); break;
      case 30: e.value = static_cast<double>(static_cast<std::int64_t>(f.value)); break;
      case 44: e.value = f.as_double(); break;
      case 47: add_ids(f, e.flow_ids); break;
      case 48: add_ids(f, e.terminating_flow_ids); break;
      default: break;
    }
  });
  e.track = track(uuid);
  e.start_ns = unix_ns;
  auto& stack = open_[uuid];
  switch (type) {
    case 1: stack.push_back(std::move(e)); return;
    case 2: {
      if (stack.empty()) return void(++result_.unmatched_ends);
      decoded_event begin = std::move(stack.back());
      stack.pop_back();
      begin.dur_ns = unix_ns - begin.start_ns;
      for (auto& a : e.args) begin.args.push_back(std::move(a));
      for (auto id : e.terminating_flow_ids) begin.terminating_flow_ids.push_back(id);
      return deliver(begin);
    }
    case 3: e.type = decoded_event::kind::instant; return deliver(e);
    case 4:
      e.type = decoded_event::kind::counter;
      e.name = e.track->name;
      return deliver(e);
    default: return;  // legacy or unknown event types: skipped
  }
}

// A varint from the stream, counting its bytes into `consumed`: false when
// the input ends first; throws on more than 10 bytes.
bool read_varint(std::istream& in, std::uint64_t& v, std::uint64_t& consumed) {
  v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    const int c = in.get();
    if (c == std::char_traits<char>::eof()) return false;
    ++consumed;
    v |= std::uint64_t{static_cast<unsigned>(c) & 0x7fu} << shift;
    if (!(c & 0x80)) return true;
  }
  throw perfetto_error("a packet length over 10 bytes (not a Perfetto trace?)");
}

char hex_digit(int v) { return "0123456789abcdef"[v & 15]; }

}  // namespace

perfetto_read_result read_perfetto(std::istream& in, const perfetto_callbacks& callbacks) {
  perfetto_read_result result;
  decoder d(callbacks, result);
  std::string packet;
  std::uint64_t offset = 0;
  const auto cut = [&](const std::string& where) {
    result.truncated = true;
    result.truncation = (in.bad() ? "the compressed stream broke off or is corrupt " : "the input ends ") + where;
  };
  while (!result.stopped) {
    const int key = in.get();
    if (key == std::char_traits<char>::eof()) {
      if (in.bad()) cut("after packet " + std::to_string(result.packets) + " (byte " + std::to_string(offset) + ")");
      break;
    }
    if (!looks_like_perfetto(static_cast<unsigned char>(key)))
      throw perfetto_error(std::string(offset == 0 ? "not a Perfetto trace: " : "garbage: ") + "byte 0x" +
                           hex_digit(key >> 4) + hex_digit(key) + " at offset " + std::to_string(offset) +
                           " where a Trace.packet field (0x0a) must start");
    std::uint64_t len = 0, header = 1;
    if (!read_varint(in, len, header)) {
      cut("inside packet " + std::to_string(result.packets) + "'s length at byte " + std::to_string(offset));
      break;
    }
    if (len > max_packet_bytes)
      throw perfetto_error("garbage: a packet of " + std::to_string(len) + " bytes at offset " + std::to_string(offset));
    packet.resize(static_cast<std::size_t>(len));
    in.read(packet.data(), static_cast<std::streamsize>(len));
    if (static_cast<std::uint64_t>(in.gcount()) != len) {
      cut("inside packet " + std::to_string(result.packets) + " at byte " + std::to_string(offset) + " (" +
          std::to_string(in.gcount()) + " of its " + std::to_string(len) + " bytes)");
      break;
    }
    try {
      d.packet(packet);
    } catch (const perfetto_error& e) {
      throw perfetto_error(std::string(e.what()) + " in packet " + std::to_string(result.packets) + " at offset " +
                           std::to_string(offset));
    }
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
  const std::string name = path.filename().string();
  if (name.ends_with(".gz")) in.push(io::gzip_decompressor());
  if (name.ends_with(".zst")) in.push(io::zstd_decompressor());
  in.push(file);
  try {
    return read_perfetto(in, callbacks);
  } catch (const perfetto_error& e) {
    throw perfetto_error(path.string() + ": " + e.what());
  }
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
