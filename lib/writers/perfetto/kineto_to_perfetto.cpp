#include "writers/perfetto/kineto_to_perfetto.hpp"

#include <boost/iostreams/device/file.hpp>
#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filter/zstd.hpp>
#include <boost/iostreams/filtering_stream.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "writers/perfetto/compressed_output.hpp"
#include "writers/perfetto/json_events_scanner.hpp"
#include "writers/perfetto/perfetto_builder.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

namespace {

namespace json = boost::json;

constexpr std::size_t output_flush_bytes = std::size_t{1} << 20;

// A pid or tid: its text (the map key and a named track's name), and its
// value when it is an integer.
struct id_value {
  std::string text;
  bool is_number = false;
  std::int64_t number = 0;
};

id_value read_id(const json::object& o, std::string_view key) {
  id_value id;
  const json::value* v = o.if_contains(key);
  if (!v) return id;
  if (v->is_string()) {
    id.text = std::string(v->get_string());
  } else if (v->is_int64() || (v->is_uint64() && v->get_uint64() <= INT64_MAX) ||
             (v->is_double() && std::trunc(v->get_double()) == v->get_double() &&
              std::fabs(v->get_double()) < 9.2e18)) {  // a whole number int64 holds; any other is text
    id.is_number = true;
    id.number = v->is_int64() ? v->get_int64() : v->is_uint64() ? static_cast<std::int64_t>(v->get_uint64())
                                                               : static_cast<std::int64_t>(v->get_double());
    id.text = std::to_string(id.number);
  } else {
    id.text = json::serialize(*v);
  }
  return id;
}

std::string_view string_of(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

// A number of microseconds as integer nanoseconds, within +-4e18 (126
// years: a ts plus a dur, and either plus the base, stay exact or wrap
// defined; a value past them is counted in `clamped`); false when absent.
bool read_ns(const json::object& o, std::string_view key, std::int64_t& ns, std::uint64_t& clamped) {
  const json::value* v = o.if_contains(key);
  if (!v || !v->is_number()) return false;
  constexpr double max_abs_ns = 4e18;
  const double given = v->to_number<double>() * 1000.0;
  if (!(std::fabs(given) <= max_abs_ns)) ++clamped;
  ns = static_cast<std::int64_t>(std::llround(std::clamp(given, -max_abs_ns, max_abs_ns)));
  return true;
}

enum class step : std::uint8_t { x_begin, x_end, instant, counter, async_begin, async_end };

struct record {
  json::object event;
  std::uint32_t thread = 0;  // index into converter::threads_
  std::int64_t ts = 0, end = 0;
};

struct emission {
  std::int64_t ts;
  std::uint32_t record;
  step what;
};

using annotation_value = decltype(annotation::value);

// The args of one event as annotations (valid until the next call).
class args_view {
 public:
  annotations of(const json::object& event) {
    list_.clear();
    texts_.clear();
    const json::value* args = event.if_contains("args");
    if (!args || !args->is_object()) return {};
    const auto& o = args->get_object();
    texts_.reserve(o.size());  // views into texts_ stay valid
    for (const auto& kv : o) list_.push_back({.name = kv.key(), .value = value_of(kv.value())});
    return list_;
  }

 private:
  annotation_value value_of(const json::value& v) {
    switch (v.kind()) {
      case json::kind::int64: return v.get_int64();
      case json::kind::uint64: return v.get_uint64();
      case json::kind::double_: return v.get_double();
      case json::kind::bool_: return v.get_bool();
      case json::kind::string: return std::string_view(v.get_string());
      default: break;
    }
    texts_.push_back(json::serialize(v));
    return json_value{texts_.back()};
  }
  std::vector<annotation> list_;
  std::vector<std::string> texts_;
};

class converter {
 public:
  // `stage`: where every sequence's builder appends (it outlives the converter).
  converter(kineto_conversion& stats, packet_stage& stage) : stats_(stats), stage_(stage) {}
  void add(std::string_view text);
  void member(std::string_view key, std::string_view value);
  // `b`: the main sequence's builder, on the same stage.
  void write(perfetto_builder& b, const std::function<void()>& flush);

 private:
  struct thread_key {
    id_value pid, tid;
  };
  struct flow {
    std::uint64_t id;
    bool start;
  };
  // The flow events at one (thread, ts), and the one slice they bind to:
  // the innermost "X" starting there (as Perfetto binds a flow to the
  // deepest slice open at its time).
  struct flows_at {
    std::vector<flow> flows;
    std::uint32_t slice = UINT32_MAX;
  };
  std::uint32_t thread_of(const json::object& e);
  void add_metadata(const json::object& e);
  void add_flow(const json::object& e, std::uint32_t thread, std::int64_t ts, bool start);
  std::vector<emission> plan();
  void plan_thread(std::vector<std::uint32_t>& xs, std::vector<emission>& out);
  std::uint64_t thread_track(perfetto_builder& b, std::uint32_t thread);
  perfetto_builder& events_of(perfetto_builder& b, std::uint32_t thread);
  std::uint64_t process_track(perfetto_builder& b, const id_value& pid);
  void emit(perfetto_builder& b, const emission& e);
  void emit_counters(perfetto_builder& b, const record& r, std::int64_t ts);
  std::vector<std::uint64_t>& flows_of(std::uint32_t slice, bool start);

  kineto_conversion& stats_;
  std::int64_t base_ns_ = 0;
  std::vector<std::pair<std::string, std::string>> top_level_;  // key, JSON text
  std::vector<record> records_;
  std::vector<emission> singles_;  // instants, counters, async ends: placed by time alone
  std::vector<thread_key> threads_;
  std::unordered_map<std::string, std::uint32_t> thread_index_;  // "pid\x1ftid"
  std::unordered_map<std::string, std::string> thread_names_, process_names_;
  // process_labels, process_sort_index, thread_sort_index: by pid, by "pid\x1ftid"
  std::unordered_map<std::string, track_order> process_order_, thread_order_;
  std::map<std::pair<std::uint32_t, std::int64_t>, flows_at> flows_;
  std::vector<std::uint64_t> thread_uuids_;  // 0: not declared yet
  // A numeric thread's own packet sequence (its track and clock by default,
  // timestamps as deltas): its slices and instants; made at its first.
  std::vector<std::unique_ptr<perfetto_builder>> thread_events_;
  packet_stage& stage_;
  std::vector<std::uint64_t> scratch_ids_;
  args_view args_;
};

std::uint32_t converter::thread_of(const json::object& e) {
  thread_key k{read_id(e, "pid"), read_id(e, "tid")};
  std::string key = k.pid.text + '\x1f' + k.tid.text;
  const auto [it, fresh] = thread_index_.emplace(std::move(key), static_cast<std::uint32_t>(threads_.size()));
  if (fresh) threads_.push_back(std::move(k));
  return it->second;
}

void converter::add_metadata(const json::object& e) {
  const json::value* args = e.if_contains("args");
  if (!args || !args->is_object()) return;
  const auto arg = [&](std::string_view key) { return args->get_object().if_contains(key); };
  const std::string_view what = string_of(e, "name");
  const std::string pid = read_id(e, "pid").text, thread = pid + '\x1f' + read_id(e, "tid").text;
  const json::value* v = arg(what == "process_labels" ? "labels" : what.ends_with("_sort_index") ? "sort_index" : "name");
  if (v && v->is_string()) {
    if (what == "thread_name") thread_names_[thread] = v->get_string();
    else if (what == "process_name") process_names_[pid] = v->get_string();
    else if (what == "process_labels") process_order_[pid].labels = v->get_string();
  } else if (v && v->is_int64()) {
    if (what == "process_sort_index") process_order_[pid].sort_index = v->get_int64();
    else if (what == "thread_sort_index") thread_order_[thread].sort_index = v->get_int64();
  }
}

void converter::add_flow(const json::object& e, std::uint32_t thread, std::int64_t ts, bool start) {
  const json::value* id = e.if_contains("id");
  if (!id || !(id->is_int64() || id->is_uint64())) return void(++stats_.skipped);
  flows_[{thread, ts}].flows.push_back({id->is_int64() ? static_cast<std::uint64_t>(id->get_int64()) : id->get_uint64(), start});
}

void converter::add(std::string_view text) {
  ++stats_.events;
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return void(++stats_.skipped);
  json::object& e = v.get_object();
  const std::string_view ph = string_of(e, "ph");
  if (ph == "M") return add_metadata(e);
  std::int64_t ts = 0, dur = 0;
  if (!read_ns(e, "ts", ts, stats_.clamped) || ph.size() != 1) return void(++stats_.skipped);
  const std::uint32_t thread = thread_of(e);
  if (ph == "s" || ph == "f") return add_flow(e, thread, ts, ph == "s");
  step what;
  switch (ph[0]) {
    case 'X': what = step::x_begin, read_ns(e, "dur", dur, stats_.clamped), ++stats_.slices; break;
    case 'i': case 'I': what = step::instant, ++stats_.instants; break;
    case 'C': what = step::counter, ++stats_.counters; break;
    case 'b': what = step::async_begin, ++stats_.async_slices; break;
    case 'e': what = step::async_end; break;
    default: return void(++stats_.skipped);
  }
  const auto index = static_cast<std::uint32_t>(records_.size());
  records_.push_back({std::move(e), thread, ts, ts + std::max<std::int64_t>(dur, 0)});
  if (what != step::x_begin) singles_.push_back({ts, index, what});
}

// Every top-level key but the events is kept as trace-wide metadata
// (distributedInfo, clockAlignment, a user's keys), so that converting back
// gives them back.
void converter::member(std::string_view key, std::string_view value) {
  if (key != "traceEvents" && key != "displayTimeUnit") top_level_.emplace_back(key, value);
  if (key != "baseTimeNanoseconds") return;
  boost::system::error_code ec;
  const json::value v = json::parse(value, ec);
  if (!ec && v.is_number()) base_ns_ = v.to_number<std::int64_t>(ec);
}

// One thread's "X" events as BEGIN/END steps: by start, the longer first,
// so that an enclosing slice begins before what it holds; a child that
// outlives its parent is cut at the parent's end.
void converter::plan_thread(std::vector<std::uint32_t>& xs, std::vector<emission>& out) {
  std::stable_sort(xs.begin(), xs.end(), [&](std::uint32_t a, std::uint32_t b) {
    const record &ra = records_[a], &rb = records_[b];
    return ra.ts != rb.ts ? ra.ts < rb.ts : ra.end > rb.end;
  });
  std::vector<std::uint32_t> open;
  for (const std::uint32_t x : xs) {
    record& r = records_[x];
    if (const auto f = flows_.find({r.thread, r.ts}); f != flows_.end()) f->second.slice = x;  // the last: innermost
    while (!open.empty() && records_[open.back()].end <= r.ts) {
      out.push_back({records_[open.back()].end, open.back(), step::x_end});
      open.pop_back();
    }
    if (!open.empty()) r.end = std::min(r.end, records_[open.back()].end);
    out.push_back({r.ts, x, step::x_begin});
    open.push_back(x);
  }
  for (auto it = open.rbegin(); it != open.rend(); ++it) out.push_back({records_[*it].end, *it, step::x_end});
}

std::vector<emission> converter::plan() {
  std::vector<std::vector<std::uint32_t>> per_thread(threads_.size());
  for (std::uint32_t i = 0; i < records_.size(); ++i)
    if (string_of(records_[i].event, "ph") == "X") per_thread[records_[i].thread].push_back(i);
  std::vector<emission> steps;
  for (auto& xs : per_thread) plan_thread(xs, steps);
  steps.insert(steps.end(), singles_.begin(), singles_.end());
  // Each thread's steps are in time order already: a stable sort by time
  // interleaves the threads without breaking any thread's nesting.
  std::stable_sort(steps.begin(), steps.end(), [](const emission& a, const emission& b) { return a.ts < b.ts; });
  return steps;
}

std::uint64_t converter::process_track(perfetto_builder& b, const id_value& pid) {
  if (!pid.is_number) return b.named_track(pid.text, 0, 0);
  const auto name = process_names_.find(pid.text);
  const auto order = process_order_.find(pid.text);
  return b.process_track(pid.number, name == process_names_.end() ? std::string_view() : name->second,
                         order == process_order_.end() ? track_order{} : order->second);
}

std::uint64_t converter::thread_track(perfetto_builder& b, std::uint32_t thread) {
  if (thread_uuids_[thread]) return thread_uuids_[thread];
  const thread_key& k = threads_[thread];
  const auto found = thread_names_.find(k.pid.text + '\x1f' + k.tid.text);
  const std::string_view name = found == thread_names_.end() ? std::string_view() : found->second;
  const std::uint64_t process = process_track(b, k.pid);
  const auto order = thread_order_.find(k.pid.text + '\x1f' + k.tid.text);
  const std::uint64_t uuid = k.pid.is_number && k.tid.is_number
                                 ? b.thread_track(k.pid.number, k.tid.number, name,
                                                  order == thread_order_.end() ? track_order{} : order->second)
                                 : b.named_track(name.empty() ? k.tid.text : name, process, 0);
  return thread_uuids_[thread] = uuid;
}

perfetto_builder& converter::events_of(perfetto_builder& b, std::uint32_t thread) {
  const std::uint64_t track = thread_track(b, thread);
  if (thread_events_[thread]) return *thread_events_[thread];
  if (!threads_[thread].pid.is_number || !threads_[thread].tid.is_number) return b;  // a named track
  constexpr std::uint32_t first_thread_sequence = 3;
  thread_events_[thread] = std::make_unique<perfetto_builder>(
      stage_, first_thread_sequence + thread,
      perfetto_builder::thread_defaults{.default_track = track, .origin_unix_ns = base_ns_});
  return *thread_events_[thread];
}

std::vector<std::uint64_t>& converter::flows_of(std::uint32_t slice, bool start) {
  scratch_ids_.clear();
  const auto it = flows_.find({records_[slice].thread, records_[slice].ts});
  if (it != flows_.end() && it->second.slice == slice)
    for (const flow& f : it->second.flows)
      if (f.start == start) scratch_ids_.push_back(f.id), ++stats_.flows;
  return scratch_ids_;
}

void converter::emit_counters(perfetto_builder& b, const record& r, std::int64_t ts) {
  const json::value* args = r.event.if_contains("args");
  if (!args || !args->is_object()) return;
  const std::string_view name = string_of(r.event, "name");
  const std::uint64_t parent = process_track(b, threads_[r.thread].pid);
  for (const auto& kv : args->get_object()) {
    if (!kv.value().is_number()) continue;
    const std::string track = kv.key() == name ? std::string(name) : std::string(name) + "." + std::string(kv.key());
    b.counter(b.counter_track(track, parent), ts, kv.value().to_number<double>());
  }
}

void converter::emit(perfetto_builder& b, const emission& e) {
  const record& r = records_[e.record];
  // Wraps for a crafted base, as the readers' ns_after wraps back.
  const auto ts = static_cast<std::int64_t>(static_cast<std::uint64_t>(base_ns_) + static_cast<std::uint64_t>(e.ts));
  const std::string_view name = string_of(r.event, "name"), cat = string_of(r.event, "cat");
  const auto async_track = [&] {
    const json::value* id = r.event.if_contains("id");
    const std::string key = id ? json::serialize(*id) : std::string();
    const std::uint64_t parent = process_track(b, threads_[r.thread].pid);
    return b.named_track(name, parent, std::hash<std::string>{}(key));
  };
  if (e.what == step::x_begin || e.what == step::x_end || e.what == step::instant) {
    perfetto_builder& t = events_of(b, r.thread);
    const std::uint64_t track = thread_track(b, r.thread);
    if (e.what == step::x_begin) {
      const std::vector<std::uint64_t>& flows = flows_of(e.record, true);
      if (name.starts_with("ProfilerStep#") && flows.empty())  // one name per step: not interned
        t.slice_begin(track, ts, perfetto_builder::one_off_name{name}, cat, args_.of(r.event));
      else
        t.slice_begin(track, ts, name, cat, args_.of(r.event), flows);
    } else if (e.what == step::x_end)
      t.slice_end(track, ts, {}, flows_of(e.record, false));
    else if (const std::string_view scope = string_of(r.event, "s"); scope == "p")  // the process's, as "s" says
      b.instant(process_track(b, threads_[r.thread].pid), ts, name, cat, args_.of(r.event));
    else if (scope == "g")  // the whole trace's: a track under no process
      b.instant(b.named_track("global instants", 0, 0), ts, name, cat, args_.of(r.event));
    else
      t.instant(track, ts, name, cat, args_.of(r.event));
    return;
  }
  if (e.what == step::counter) emit_counters(b, r, ts);
  else if (e.what == step::async_begin) b.slice_begin(async_track(), ts, name, cat, args_.of(r.event));
  else b.slice_end(async_track(), ts);
}

void converter::write(perfetto_builder& b, const std::function<void()>& flush) {
  thread_uuids_.assign(threads_.size(), 0);
  thread_events_.resize(threads_.size());
  b.trace_metadata(top_level_);
  for (const emission& e : plan()) {
    emit(b, e);
    if (b.out().size() >= output_flush_bytes) flush();
  }
  flush();
}

void feed_input(const std::filesystem::path& input, json_events_scanner& scanner) {
  namespace io = boost::iostreams;
  std::ifstream file(input, std::ios::binary);
  if (!file) throw std::runtime_error(input.string() + ": cannot open");
  io::filtering_istream in;
  const std::string name = input.filename().string();
  if (name.ends_with(".gz")) in.push(io::gzip_decompressor());
  if (name.ends_with(".zst")) in.push(io::zstd_decompressor());
  in.push(file);
  std::vector<char> buf(std::size_t{1} << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    scanner.feed(std::string_view(buf.data(), static_cast<std::size_t>(in.gcount())));
  }
  if (in.bad()) throw std::runtime_error(input.string() + ": corrupt or cut compressed data");
}

}  // namespace

kineto_conversion kineto_to_perfetto(const std::filesystem::path& input, const std::filesystem::path& output) {
  kineto_conversion stats;
  std::string packets;  // before the converter: its threads' builders append here until they are gone
  const auto stage = std::make_unique<packet_stage>(packets);
  converter c(stats, *stage);
  json_events_scanner scanner([&](std::string_view e) { c.add(e); },
                              [&](std::string_view k, std::string_view v) { c.member(k, v); });
  try {
    feed_input(input, scanner);
    stats.truncated = scanner.finish();
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    throw std::runtime_error(what.starts_with(input.string()) ? what : input.string() + ": " + what);
  }
  compressed_output out(output);
  perfetto_builder b(*stage, /*sequence_id=*/1);
  c.write(b, [&] {
    std::string& done = b.out();
    out.stream().write(done.data(), static_cast<std::streamsize>(done.size()));
    done.clear();
  });
  out.commit();
  return stats;
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
