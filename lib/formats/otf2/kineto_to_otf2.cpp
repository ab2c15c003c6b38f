#include "kineto_to_otf2.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "formats/kineto_json/kineto_json_reader.hpp"
#include "formats/perfetto/kineto_event.hpp"
#include "otf2_archive.hpp"
#include "otf2_definitions.hpp"
#include "otf2_layout.hpp"
#include "otf2_region_kind.hpp"
#include "spool/sorted_runs.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

namespace {

namespace json = boost::json;

enum class step : std::uint8_t { scope, counter, memory };

struct step_key {
  std::int64_t ts = 0, end = 0;  // end: a scope's ts + dur
  std::uint64_t seq = 0;         // its place in the file
  std::uint32_t thread = 0;      // location id
  step what = step::scope;
};

// A thread's nesting walk: by start; at one start, scopes before samples,
// the longer scope first (it encloses the shorter), then file order.
struct step_order {
  bool operator()(const step_key& a, const step_key& b) const noexcept {
    if (a.ts != b.ts) return a.ts < b.ts;
    const bool a_scope = a.what == step::scope, b_scope = b.what == step::scope;
    if (a_scope != b_scope) return a_scope;
    if (a_scope && a.end != b.end) return a.end > b.end;
    return a.seq < b.seq;
  }
};

constexpr sorted_runs<step_key, step_order>::limits sort_limits{
    .max_items = std::size_t{1} << 18, .max_bytes = std::size_t{32} << 20, .max_runs = 64};

bool is_gpu_category(std::string_view cat) { return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset"; }

// A scope entered and not yet left on its location.
struct open_scope {
  std::int64_t end = 0;
  OTF2_RegionRef region = 0;
  int receive_from = -1;  // an MPI receive's source rank
  std::uint64_t receive_bytes = 0;
  std::optional<double> flops;
};

class converter {
 public:
  explicit converter(otf2_conversion& stats) : stats_(stats) {}
  void add(std::string_view text);
  void member(std::string_view key, std::string_view value);
  void write(const std::filesystem::path& output);

 private:
  void add_metadata(const kineto_event& e);
  std::uint32_t thread_of(const kineto_event& e);
  void take(const step_key& k, std::string_view payload);
  void enter(const step_key& k);
  void send_message(std::uint32_t thread, std::uint64_t at, open_scope& scope);
  void leave_until(std::uint32_t thread, std::int64_t until);
  void sample(std::uint32_t thread, std::int64_t ts, std::string_view metric, std::string_view unit, double value);
  void sample_counters(const step_key& k);
  void sample_memory(const step_key& k);
  std::uint64_t tick(std::int64_t ts) const { return static_cast<std::uint64_t>(ts - first_ts_); }
  OTF2_EvtWriter* events_of(std::uint32_t thread) {
    ++event_counts_[thread];
    return archive_->events(thread);
  }

  otf2_conversion& stats_;
  kineto_event_input in_;  // the reader, the event read last, its record, the record taken back
  sorted_runs<step_key, step_order> runs_{step_order{}, sort_limits};
  std::int64_t base_ns_ = 0, first_ts_ = std::numeric_limits<std::int64_t>::max(),
               last_ts_ = std::numeric_limits<std::int64_t>::min();
  otf2_layout_input threads_;
  std::unordered_map<std::string, std::uint32_t> thread_index_;  // "pid\x1ftid"

  // While writing:
  std::optional<otf2_archive> archive_;
  otf2_definitions defs_;
  otf2_layout layout_;
  std::vector<std::vector<open_scope>> open_;  // by location, innermost last
  std::vector<std::uint64_t> event_counts_;    // by location
  std::map<int, std::uint64_t> mpi_locations_;  // by rank: where its MPI calls were
};

std::uint32_t converter::thread_of(const kineto_event& e) {
  otf2_thread_ids ids{.pid = read_id(e.pid), .tid = read_id(e.tid)};
  const auto [it, fresh] = thread_index_.try_emplace(ids.pid.text + '\x1f' + ids.tid.text,
                                                     static_cast<std::uint32_t>(threads_.threads.size()));
  if (fresh) threads_.threads.push_back(std::move(ids));
  return it->second;
}

void converter::add_metadata(const kineto_event& e) {
  if (!e.args_object) return;
  const std::string_view what = e.name.string();
  const json_field* name = e.arg("name");
  if (name == nullptr || !name->is_string()) return;
  const std::string pid = read_id(e.pid).text;
  if (what == "process_name") threads_.process_names[pid] = name->text;
  else if (what == "thread_name") threads_.thread_names[pid + '\x1f' + read_id(e.tid).text] = name->text;
}

void converter::add(std::string_view text) {
  std::int64_t ts = 0, dur = 0;
  const event_use use = in_.next(text, ts, stats_);
  const kineto_event& e = in_.event;
  if (use == event_use::metadata) return add_metadata(e);
  if (use == event_use::unusable) return void(++stats_.skipped);
  const std::string_view ph = e.ph.string();
  step_key k{.ts = ts, .end = ts, .seq = in_.seq++, .thread = 0};
  if (ph == "X") k.what = step::scope, read_ns(e.dur, dur, stats_.clamped);
  else if (ph == "C") k.what = step::counter;
  else if ((ph == "i" || ph == "I") && e.name.string() == "[memory]") k.what = step::memory;
  else return void(++stats_.skipped);
  k.thread = thread_of(e);
  if (is_gpu_category(e.cat.string())) threads_.threads[k.thread].gpu_work = true;
  k.end = ts + std::max<std::int64_t>(dur, 0);
  first_ts_ = std::min(first_ts_, ts);
  last_ts_ = std::max(last_ts_, k.end);
  in_.record.clear();
  write_record(e, in_.record);
  runs_.add(k, in_.record);
}

// baseTimeNanoseconds places the trace in Unix time; distributedInfo.rank
// names a one-rank trace's rank.
void converter::member(std::string_view key, std::string_view value) {
  if (key != "baseTimeNanoseconds" && key != "distributedInfo") return;
  boost::system::error_code ec;
  const json::value v = json::parse(value, ec);
  if (ec) return;
  if (key == "baseTimeNanoseconds" && v.is_number()) base_ns_ = v.to_number<std::int64_t>(ec);
  if (key != "distributedInfo" || !v.is_object()) return;
  if (const json::value* rank = v.get_object().if_contains("rank"); rank && rank->is_int64())
    threads_.trace_rank = static_cast<int>(rank->get_int64());
}

void converter::write(const std::filesystem::path& output) {
  archive_.emplace(output);
  // Readers refuse an archive without a location: a trace with no event gets an empty one.
  if (threads_.threads.empty()) threads_.threads.push_back({.pid = {"0", true, 0}, .tid = {"0", true, 0}});
  layout_ = plan_layout(threads_);
  const std::size_t locations = threads_.threads.size();
  open_.resize(locations);
  event_counts_.assign(locations, 0);
  runs_.merge([&](const step_key& k, std::string_view payload) { take(k, payload); });
  for (std::uint32_t thread = 0; thread < locations; ++thread) leave_until(thread, std::numeric_limits<std::int64_t>::max());
  std::vector<std::uint64_t> ids(locations);
  for (std::uint64_t i = 0; i < locations; ++i) ids[i] = i;
  archive_->close_events(ids);
  const bool any = first_ts_ <= last_ts_;
  defs_.write(*archive_, layout_,
              {.start_unix_ns = static_cast<std::uint64_t>(base_ns_ + (any ? first_ts_ : 0)),
               .length_ns = any ? tick(last_ts_) : 0},
              mpi_locations_, event_counts_);
  archive_->commit();
  stats_.locations = locations;
}

void converter::take(const step_key& k, std::string_view payload) {
  in_.taken.read(payload);
  leave_until(k.thread, k.ts);
  switch (k.what) {
    case step::scope: return enter(k);
    case step::counter: return sample_counters(k);
    case step::memory: return sample_memory(k);
  }
}

const annotation* arg_named(const kineto_record& r, std::string_view name) {
  for (const annotation& a : r.args)
    if (a.name == name) return &a;
  return nullptr;
}

std::optional<double> number_of(const annotation* a) {
  if (a == nullptr) return std::nullopt;
  if (const auto* i = std::get_if<std::int64_t>(&a->value)) return static_cast<double>(*i);
  if (const auto* u = std::get_if<std::uint64_t>(&a->value)) return static_cast<double>(*u);
  if (const auto* d = std::get_if<double>(&a->value)) return *d;
  return std::nullopt;
}

void converter::enter(const step_key& k) {
  std::vector<open_scope>& open = open_[k.thread];
  open_scope scope;
  scope.end = k.end;
  if (!open.empty() && open.back().end < k.end) scope.end = open.back().end, ++stats_.cut;
  const std::string_view name = in_.taken.name;
  scope.region = defs_.region(region_name_of(name), in_.taken.cat);
  archive_->check(OTF2_EvtWriter_Enter(events_of(k.thread), nullptr, tick(k.ts), scope.region), "an enter");
  ++stats_.scopes;
  if (std::int64_t number = 0; profiler_step_number(name, number))
    archive_->check(OTF2_EvtWriter_ParameterInt(events_of(k.thread), nullptr, tick(k.ts),
                                                otf2_definitions::step_parameter, number),
                    "a step parameter");
  if (name.starts_with("MPI_")) {
    mpi_locations_.try_emplace(layout_.groups[layout_.locations[k.thread].group].rank, k.thread);
    send_message(k.thread, tick(k.ts), scope);
  }
  scope.flops = number_of(arg_named(in_.taken, "flops"));
  open.push_back(scope);
}

// An MPI call's message: sent at its enter, or received before its leave
// (kept on the scope), to or from a rank the archive holds.
void converter::send_message(std::uint32_t thread, std::uint64_t at, open_scope& scope) {
  const std::string_view name = in_.taken.name;
  const bool sends = name == "MPI_Send" || name == "MPI_Isend" || name == "MPI_Sendrecv";
  const bool receives = name == "MPI_Recv" || name == "MPI_Irecv" || name == "MPI_Sendrecv";
  const std::optional<double> peer = number_of(arg_named(in_.taken, "peer"));
  if ((!sends && !receives) || !peer) return;
  const std::optional<double> bytes = number_of(arg_named(in_.taken, "bytes"));
  // A sendrecv's bytes are its send's and its receive's together.
  const auto length = static_cast<std::uint64_t>(std::max(bytes.value_or(0), 0.0)) / (sends && receives ? 2 : 1);
  std::uint32_t to = 0;
  if (sends && layout_.comm_rank_of(static_cast<int>(*peer), to)) {
    archive_->check(OTF2_EvtWriter_MpiSend(events_of(thread), nullptr, at, to, otf2_definitions::world, 0, length),
                    "an MPI send");
    ++stats_.messages;
  } else if (sends) {
    ++stats_.skipped;
  }
  if (!receives) return;
  const std::optional<double> source = number_of(arg_named(in_.taken, "source"));
  scope.receive_from = static_cast<int>(source.value_or(*peer));
  scope.receive_bytes = length;
}

// Leaves the location's open scopes that end by `until`, innermost first.
void converter::leave_until(std::uint32_t thread, std::int64_t until) {
  std::vector<open_scope>& open = open_[thread];
  while (!open.empty() && open.back().end <= until) {
    const open_scope& s = open.back();
    std::uint32_t from = 0;
    if (s.receive_from >= 0 && layout_.comm_rank_of(s.receive_from, from)) {
      archive_->check(OTF2_EvtWriter_MpiRecv(events_of(thread), nullptr, tick(s.end), from, otf2_definitions::world, 0,
                                             s.receive_bytes),
                      "an MPI receive");
      ++stats_.messages;
    }
    if (s.flops) sample(thread, s.end, "FLOPs", "flop", *s.flops);
    archive_->check(OTF2_EvtWriter_Leave(events_of(thread), nullptr, tick(s.end), s.region), "a leave");
    open.pop_back();
  }
}

void converter::sample(std::uint32_t thread, std::int64_t ts, std::string_view metric, std::string_view unit,
                       double value) {
  const OTF2_Type type = OTF2_TYPE_DOUBLE;
  OTF2_MetricValue v;
  v.floating_point = value;
  archive_->check(OTF2_EvtWriter_Metric(events_of(thread), nullptr, tick(ts), defs_.metric(metric, unit), 1, &type, &v),
                  "a metric");
  ++stats_.metric_samples;
}

void converter::sample_counters(const step_key& k) {
  const std::string_view name = in_.taken.name;
  for (const annotation& arg : in_.taken.args)
    if (const std::optional<double> value = number_of(&arg))
      sample(k.thread, k.ts, arg.name == name ? std::string(name) : std::string(name) + "." + std::string(arg.name), "",
             *value);
}

void converter::sample_memory(const step_key& k) {
  for (const std::string_view total : {"Total Allocated", "Total Reserved"})
    if (const std::optional<double> value = number_of(arg_named(in_.taken, total))) sample(k.thread, k.ts, total, "bytes", *value);
}

}  // namespace

otf2_conversion kineto_to_otf2(const std::filesystem::path& input, const std::filesystem::path& output) {
  otf2_conversion stats;
  converter c(stats);
  stats.truncated = read_kineto_json_file(input, {.on_event = [&](std::uint64_t, std::string_view e) { c.add(e); },
                                                  .on_member = [&](std::string_view k, std::string_view v) { c.member(k, v); }});
  c.write(output);
  return stats;
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
