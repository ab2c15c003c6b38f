#include "kineto_to_perfetto.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "spool/compressed_output.hpp"
#include "spool/sorted_runs.hpp"
#include "formats/kineto_json/kineto_json_reader.hpp"
#include "kineto_event.hpp"
#include "perfetto_builder.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

namespace json = boost::json;

constexpr std::size_t output_flush_bytes = std::size_t{1} << 20;

// What an event becomes; flows first: they sort before the "X" events they bind to.
enum class step : std::uint8_t { flow_start, flow_end, x, instant, counter, async_begin, async_end };

// One event as the sort sees it; its JSON text (a flow: its id) is the payload.
struct step_key {
  std::int64_t ts = 0, end = 0;  // end: an "X"'s ts + dur
  std::uint64_t seq = 0;         // its place in the file
  std::uint32_t thread = 0;      // index into converter::threads_
  step what = step::x;
};

int rank_at_one_time(step s) { return s <= step::flow_end ? 0 : s == step::x ? 1 : 2; }

// The order events are written in: by time; at one time a thread's flows,
// then its "X" events (the longer first: an enclosing slice begins before
// what it holds, and the innermost comes last), then instants, counters
// and async steps in file order. Each thread's and track's own order is
// what Perfetto reads; threads interleave by time.
struct step_order {
  bool operator()(const step_key& a, const step_key& b) const noexcept {
    if (a.ts != b.ts) return a.ts < b.ts;
    const int ra = rank_at_one_time(a.what), rb = rank_at_one_time(b.what);
    if (ra != rb) return ra < rb;
    if (ra != 2 && a.thread != b.thread) return a.thread < b.thread;
    if (ra == 1 && a.end != b.end) return a.end > b.end;
    return a.seq < b.seq;
  }
};

// What the sort holds in memory before it spills a run (lib/spool/sorted_runs.hpp):
// 10 MiB of keys, and of records (about 100 bytes an event) usually less
// than the 32 MiB allowed, so that the count, not the bytes, sets a run's size.
constexpr sorted_runs<step_key, step_order>::limits sort_limits{
    .max_items = std::size_t{1} << 18, .max_bytes = std::size_t{32} << 20, .max_runs = 64};

// Reads the events (add, member), sorting them to disk beyond a bound, then
// writes them (write): memory is that bound, the metadata, and each
// thread's open slices.
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
  // A flow event at the time being written: it binds to the innermost "X"
  // of its thread starting then (as Perfetto binds a flow to the deepest
  // slice open at its time).
  struct flow {
    std::uint32_t thread;
    bool start;
    std::uint64_t id;
  };
  struct open_slice {
    std::int64_t end;
    std::vector<std::uint64_t> ending_flows;
  };
  void add_event(std::string_view text);
  std::uint32_t thread_of(const kineto_event& e);
  std::uint32_t thread_index(const kineto_event& e);
  void add_metadata(const kineto_event& e);
  void add_flow(const kineto_event& e, step_key k, bool start);
  void take(perfetto_builder& b, const step_key& k, std::string_view payload);
  void begin_pending(perfetto_builder& b, bool innermost);
  void take_flows(std::uint32_t thread, std::vector<std::uint64_t>& ending);
  void end_slices(perfetto_builder& b, std::uint32_t thread, std::int64_t until);
  std::uint64_t thread_track(perfetto_builder& b, std::uint32_t thread);
  perfetto_builder& events_of(perfetto_builder& b, std::uint32_t thread);
  std::uint64_t process_track(perfetto_builder& b, const id_value& pid);
  std::int64_t unix_ns(std::int64_t ts) const;
  void emit_single(perfetto_builder& b, const step_key& k, std::string_view payload);
  void emit_instant(perfetto_builder& b, const step_key& k);
  void emit_counters(perfetto_builder& b, const step_key& k);

  kineto_conversion& stats_;
  std::int64_t base_ns_ = 0;
  std::vector<std::pair<std::string, std::string>> top_level_;  // key, JSON text
  std::vector<thread_key> threads_;
  std::unordered_map<std::string, std::uint32_t> thread_index_;  // "pid\x1ftid"
  std::optional<std::pair<std::int64_t, std::int64_t>> last_thread_;  // integer pid and tid of the last event
  std::uint32_t last_thread_index_ = 0;
  std::unordered_map<std::string, std::string> thread_names_, process_names_;
  // process_labels, process_sort_index, thread_sort_index: by pid, by "pid\x1ftid"
  std::unordered_map<std::string, track_order> process_order_, thread_order_;
  sorted_runs<step_key, step_order> runs_{step_order{}, sort_limits};
  kineto_event_input in_;  // the reader, the event read last, its record, the record taken back

  // While writing: the "X" event read last, begun once the next event says
  // whether it is the innermost at its (thread, ts).
  bool pending_ = false;
  step_key pending_key_;
  std::string pending_payload_;
  std::vector<flow> flows_here_;  // at flows_ts_, by thread
  std::int64_t flows_ts_ = 0;
  std::size_t flows_cursor_ = 0;  // the "X" events at one time come by thread too
  std::vector<std::vector<open_slice>> open_;  // by thread, innermost last
  std::vector<std::uint64_t> thread_uuids_;  // 0: not declared yet
  // A numeric thread's own packet sequence (its track and clock by default,
  // timestamps as deltas): its slices and instants; made at its first.
  std::vector<std::unique_ptr<perfetto_builder>> thread_events_;
  packet_stage& stage_;
  std::vector<std::uint64_t> scratch_ids_;
};

std::uint32_t converter::thread_of(const kineto_event& e) {
  // Events of one thread mostly come together: its integer ids are checked before any text is made.
  using kind = json_field::kind;
  const bool numbers = e.pid.what == kind::int64 && e.tid.what == kind::int64;
  if (numbers && last_thread_ && last_thread_->first == e.pid.int64 && last_thread_->second == e.tid.int64)
    return last_thread_index_;
  last_thread_index_ = thread_index(e);
  if (numbers) last_thread_.emplace(e.pid.int64, e.tid.int64);
  else last_thread_.reset();
  return last_thread_index_;
}

std::uint32_t converter::thread_index(const kineto_event& e) {
  thread_key k{read_id(e.pid), read_id(e.tid)};
  std::string key = k.pid.text + '\x1f' + k.tid.text;
  const auto [it, fresh] = thread_index_.emplace(std::move(key), static_cast<std::uint32_t>(threads_.size()));
  if (fresh) threads_.push_back(std::move(k));
  return it->second;
}

void converter::add_metadata(const kineto_event& e) {
  if (!e.args_object) return;
  const std::string_view what = e.name.string();
  const std::string pid = read_id(e.pid).text, thread = pid + '\x1f' + read_id(e.tid).text;
  const json_field* v = e.arg(what == "process_labels" ? "labels" : what.ends_with("_sort_index") ? "sort_index" : "name");
  if (v && v->is_string()) {
    if (what == "thread_name") thread_names_[thread] = v->text;
    else if (what == "process_name") process_names_[pid] = v->text;
    else if (what == "process_labels") process_order_[pid].labels = v->text;
  } else if (v && v->what == json_field::kind::int64) {
    if (what == "process_sort_index") process_order_[pid].sort_index = v->int64;
    else if (what == "thread_sort_index") thread_order_[thread].sort_index = v->int64;
  }
}

void converter::add_flow(const kineto_event& e, step_key k, bool start) {
  using kind = json_field::kind;
  if (e.id.what != kind::int64 && e.id.what != kind::uint64) return void(++stats_.skipped);
  const std::uint64_t value = e.id.what == kind::int64 ? static_cast<std::uint64_t>(e.id.int64) : e.id.uint64;
  k.what = start ? step::flow_start : step::flow_end;
  runs_.add(k, std::string_view(reinterpret_cast<const char*>(&value), sizeof value));
}

void converter::add(std::string_view text) {
  add_event(text);
  if (text.size() > (std::size_t{1} << 20)) in_.event = {}, in_.record = {};  // a large event's memory back
}

void converter::add_event(std::string_view text) {
  std::int64_t ts = 0, dur = 0;
  const event_use use = in_.next(text, ts, stats_);
  const kineto_event& e = in_.event;
  if (use == event_use::metadata) return add_metadata(e);
  const std::string_view ph = e.ph.string();
  if (use == event_use::unusable || ph.size() != 1) return void(++stats_.skipped);
  step_key k{.ts = ts, .end = ts, .seq = in_.seq++, .thread = thread_of(e)};
  if (ph == "s" || ph == "f") return add_flow(e, k, ph == "s");
  switch (ph[0]) {
    case 'X': k.what = step::x, read_ns(e.dur, dur, stats_.clamped), ++stats_.slices; break;
    case 'i': case 'I': k.what = step::instant, ++stats_.instants; break;
    case 'C': k.what = step::counter, ++stats_.counters; break;
    case 'b': k.what = step::async_begin, ++stats_.async_slices; break;
    case 'e': k.what = step::async_end; break;
    default: return void(++stats_.skipped);
  }
  k.end = ts + std::max<std::int64_t>(dur, 0);
  in_.record.clear();
  write_record(e, in_.record);
  runs_.add(k, in_.record);
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

// Wraps for a crafted base, as the readers' ns_after wraps back.
std::int64_t converter::unix_ns(std::int64_t ts) const {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(base_ns_) + static_cast<std::uint64_t>(ts));
}

void converter::write(perfetto_builder& b, const std::function<void()>& flush) {
  thread_uuids_.assign(threads_.size(), 0);
  thread_events_.resize(threads_.size());
  open_.resize(threads_.size());
  b.trace_metadata(top_level_);
  runs_.merge([&](const step_key& k, std::string_view payload) {
    take(b, k, payload);
    if (b.out().size() >= output_flush_bytes) flush();
  });
  begin_pending(b, true);
  for (std::uint32_t thread = 0; thread < open_.size(); ++thread) end_slices(b, thread, INT64_MAX);
  flush();
}

void converter::take(perfetto_builder& b, const step_key& k, std::string_view payload) {
  if (pending_) begin_pending(b, !(k.what == step::x && k.ts == pending_key_.ts && k.thread == pending_key_.thread));
  if (k.ts != flows_ts_ && !flows_here_.empty()) flows_here_.clear(), flows_cursor_ = 0;
  flows_ts_ = k.ts;
  if (k.what == step::flow_start || k.what == step::flow_end) {
    std::uint64_t id = 0;
    std::memcpy(&id, payload.data(), std::min(payload.size(), sizeof id));
    flows_here_.push_back({k.thread, k.what == step::flow_start, id});
  } else if (k.what == step::x) {
    pending_ = true;
    pending_key_ = k;
    pending_payload_.assign(payload);
  } else {
    emit_single(b, k, payload);
  }
}

// The flows of `thread` at the current time: starts into scratch_ids_,
// ends into `ending` (written at the slice's END).
void converter::take_flows(std::uint32_t thread, std::vector<std::uint64_t>& ending) {
  while (flows_cursor_ < flows_here_.size() && flows_here_[flows_cursor_].thread < thread) ++flows_cursor_;
  for (; flows_cursor_ < flows_here_.size() && flows_here_[flows_cursor_].thread == thread; ++flows_cursor_) {
    const flow& f = flows_here_[flows_cursor_];
    (f.start ? scratch_ids_ : ending).push_back(f.id);
  }
  stats_.flows += scratch_ids_.size() + ending.size();
}

// The pending "X" event's BEGIN, after the ENDs of what ended on its thread
// by then; cut at its parent's end when it outlives it.
void converter::begin_pending(perfetto_builder& b, bool innermost) {
  if (!pending_) return;
  pending_ = false;
  const step_key& k = pending_key_;
  end_slices(b, k.thread, k.ts);
  std::vector<open_slice>& open = open_[k.thread];
  open_slice slice{.end = open.empty() ? k.end : std::min(k.end, open.back().end), .ending_flows = {}};
  scratch_ids_.clear();
  if (innermost) take_flows(k.thread, slice.ending_flows);
  in_.taken.read(pending_payload_);
  const std::string_view name = in_.taken.name, cat = in_.taken.cat;
  perfetto_builder& t = events_of(b, k.thread);
  const std::uint64_t track = thread_track(b, k.thread);
  if (name.starts_with("ProfilerStep#") && scratch_ids_.empty())  // one name per step: not interned
    t.slice_begin(track, unix_ns(k.ts), perfetto_builder::one_off_name{name}, cat, in_.taken.args);
  else
    t.slice_begin(track, unix_ns(k.ts), name, cat, in_.taken.args, scratch_ids_);
  open.push_back(std::move(slice));
}

// ENDs of the thread's open slices that end by `until`, innermost first.
void converter::end_slices(perfetto_builder& b, std::uint32_t thread, std::int64_t until) {
  std::vector<open_slice>& open = open_[thread];
  while (!open.empty() && open.back().end <= until) {
    events_of(b, thread).slice_end(thread_track(b, thread), unix_ns(open.back().end), {}, open.back().ending_flows);
    open.pop_back();
  }
}

void converter::emit_counters(perfetto_builder& b, const step_key& k) {
  if (!in_.taken.args_object) return;
  const std::string_view name = in_.taken.name;
  const std::uint64_t parent = process_track(b, threads_[k.thread].pid);
  for (const annotation& arg : in_.taken.args) {
    // null is how JSON writes a NaN or infinite sample (json_text.hpp): NaN here, null again on the way back.
    double value = std::numeric_limits<double>::quiet_NaN();
    if (const auto* i = std::get_if<std::int64_t>(&arg.value)) value = static_cast<double>(*i);
    else if (const auto* u = std::get_if<std::uint64_t>(&arg.value)) value = static_cast<double>(*u);
    else if (const auto* d = std::get_if<double>(&arg.value)) value = *d;
    else if (!is_null(arg)) continue;
    const std::string track = arg.name == name ? std::string(name) : std::string(name) + "." + std::string(arg.name);
    b.counter(b.counter_track(track, parent), unix_ns(k.ts), value);
  }
}

// An instant on its thread (after the ENDs there by its time), its process
// or the whole trace, as its "s" says.
void converter::emit_instant(perfetto_builder& b, const step_key& k) {
  const kineto_record& e = in_.taken;
  if (e.scope == "p") {
    b.instant(process_track(b, threads_[k.thread].pid), unix_ns(k.ts), e.name, e.cat, e.args);
  } else if (e.scope == "g") {  // a track under no process
    b.instant(b.named_track("global instants", 0, 0), unix_ns(k.ts), e.name, e.cat, e.args);
  } else {
    end_slices(b, k.thread, k.ts);
    events_of(b, k.thread).instant(thread_track(b, k.thread), unix_ns(k.ts), e.name, e.cat, e.args);
  }
}

void converter::emit_single(perfetto_builder& b, const step_key& k, std::string_view payload) {
  in_.taken.read(payload);
  if (k.what == step::instant) return emit_instant(b, k);
  if (k.what == step::counter) return emit_counters(b, k);
  const std::uint64_t parent = process_track(b, threads_[k.thread].pid);
  const std::uint64_t track = b.named_track(in_.taken.name, parent, std::hash<std::string_view>{}(in_.taken.id));
  if (k.what == step::async_begin) b.slice_begin(track, unix_ns(k.ts), in_.taken.name, in_.taken.cat, in_.taken.args);
  else b.slice_end(track, unix_ns(k.ts));
}

}  // namespace

kineto_conversion kineto_to_perfetto(const std::filesystem::path& input, const std::filesystem::path& output) {
  kineto_conversion stats;
  std::string packets;  // before the converter: its threads' builders append here until they are gone
  const auto stage = std::make_unique<packet_stage>(packets);
  converter c(stats, *stage);
  stats.truncated = read_kineto_json_file(input, {.on_event = [&](std::uint64_t, std::string_view e) { c.add(e); },
                                                  .on_member = [&](std::string_view k, std::string_view v) { c.member(k, v); }});
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

}  // namespace proftrace::detail
