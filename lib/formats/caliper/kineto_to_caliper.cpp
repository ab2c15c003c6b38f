#include "kineto_to_caliper.hpp"

#include <algorithm>
#include <charconv>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "caliper_json_writer.hpp"
#include "caliper_run_metadata.hpp"
#include "call_path_profile.hpp"
#include "formats/kineto_json/kineto_json_reader.hpp"
#include "formats/perfetto/kineto_event.hpp"
#include "nesting_walk.hpp"
#include "spool/compressed_output.hpp"
#include "spool/sorted_runs.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

enum class item : std::uint8_t { call, memory };  // an "X" event, a "[memory]" instant

struct walk_key {
  std::int64_t ts = 0, end = 0;  // end: a call's ts + dur
  std::uint64_t seq = 0;         // its place in the file
  std::uint32_t thread = 0;
  item what = item::call;
};

// Thread by thread, each in nesting order: by start; at one time the calls
// (the longer first: a caller before its callees) before the memory events,
// which go to the innermost call.
struct walk_order {
  bool operator()(const walk_key& a, const walk_key& b) const noexcept {
    if (a.thread != b.thread) return a.thread < b.thread;
    if (a.ts != b.ts) return a.ts < b.ts;
    if (a.what != b.what) return a.what < b.what;
    if (a.end != b.end) return a.end > b.end;
    return a.seq < b.seq;
  }
};

constexpr sorted_runs<walk_key, walk_order>::limits sort_limits{
    .max_items = std::size_t{1} << 18, .max_bytes = std::size_t{32} << 20, .max_runs = 64};

// Numeric args that are ids, places or states, not amounts to sum.
constexpr std::string_view not_amounts[] = {
    "External id", "peer",       "step",         "Device Id",   "Device Type",     "device",          "stream",
    "context",     "correlation", "Sequence number", "Fwd thread id", "Record function id", "Python id",
    "Python parent id", "Ev Idx", "queued",       "begin thread", "end thread",    "Addr",            "Total Allocated",
    "Total Reserved"};

bool amount_of(const annotation& a, double& v) {
  if (const auto* i = std::get_if<std::int64_t>(&a.value)) v = static_cast<double>(*i);
  else if (const auto* u = std::get_if<std::uint64_t>(&a.value)) v = static_cast<double>(*u);
  else if (const auto* d = std::get_if<double>(&a.value)) v = *d;
  else return false;
  return true;
}

class converter {
 public:
  explicit converter(caliper_conversion& stats) : stats_(stats) {}
  void add(std::string_view text);
  void member(std::string_view key, std::string_view value) { meta_.member(key, value); }
  std::string write();

 private:
  void add_event(const kineto_event& e);
  std::uint32_t thread_of(const kineto_event& e);
  void add_process_name(const kineto_event& e);
  std::int64_t rank_of(std::uint32_t thread) const;
  void take(const walk_key& k, std::string_view payload);
  void add_amounts(std::uint32_t node);
  void add_memory(const walk_key& k);

  caliper_conversion& stats_;
  caliper_run_metadata meta_;
  std::vector<std::string> thread_pid_;                          // by thread index
  std::unordered_map<std::string, std::uint32_t> thread_index_;  // "pid\x1ftid"
  std::unordered_map<std::string, std::int64_t> process_rank_;   // by pid: a merged trace's "rank N (host)"
  std::set<std::string> hosts_;
  sorted_runs<walk_key, walk_order> runs_{walk_order{}, sort_limits};
  kineto_event_input in_;  // the reader, the event read last, its record, the record taken back
  call_path_profile profile_;
  nesting_walk walk_{profile_};
  std::uint32_t walked_thread_ = UINT32_MAX;
};

void converter::add(std::string_view text) {
  ++stats_.events;
  if (in_.reader.read(text, in_.event)) add_event(in_.event);
  else ++stats_.skipped;
  if (text.size() > (std::size_t{1} << 20)) in_.event = {}, in_.record = {};  // a large event's memory back
}

// Calls and memory events, sorted by thread and time; process names for the ranks.
void converter::add_event(const kineto_event& e) {
  const std::string_view ph = e.ph.string();
  if (ph == "M") return add_process_name(e);
  const bool call = ph == "X" && e.cat.string() != "gpu_user_annotation";
  const bool memory = (ph == "i" || ph == "I") && e.name.string() == "[memory]";
  if (!call && !memory) return;
  std::int64_t ts = 0, dur = 0;
  if (!read_ns(e.ts, ts, stats_.clamped)) return void(++stats_.skipped);
  if (call) read_ns(e.dur, dur, stats_.clamped);
  const walk_key k{.ts = ts, .end = ts + std::max<std::int64_t>(dur, 0), .seq = in_.seq++, .thread = thread_of(e),
                   .what = call ? item::call : item::memory};
  in_.record.clear();
  write_record(e, in_.record);
  runs_.add(k, in_.record);
}

std::uint32_t converter::thread_of(const kineto_event& e) {
  std::string pid = read_id(e.pid).text;
  const auto [it, fresh] =
      thread_index_.try_emplace(pid + '\x1f' + read_id(e.tid).text, static_cast<std::uint32_t>(thread_pid_.size()));
  if (fresh) thread_pid_.push_back(std::move(pid));
  return it->second;
}

// A merged trace names each rank's processes "rank N (host)" (with "steps
// 2-4, ..." after it for several cycles), "rank N device K".
void converter::add_process_name(const kineto_event& e) {
  const json_field* name = e.arg("name");
  if (e.name.string() != "process_name" || !name || !name->is_string()) return;
  const std::string_view text = name->text;
  if (!text.starts_with("rank ")) return;
  std::int64_t rank = 0;
  const auto [end, ec] = std::from_chars(text.data() + 5, text.data() + text.size(), rank);
  if (ec != std::errc{} || end == text.data() + 5) return;
  process_rank_[read_id(e.pid).text] = rank;
  const std::string_view rest(end, static_cast<std::size_t>(text.data() + text.size() - end));
  if (const auto close = rest.find(')'); rest.starts_with(" (") && close != std::string_view::npos)
    hosts_.emplace(rest.substr(2, close - 2));  // "rank N (host) steps 2-4"
}

std::int64_t converter::rank_of(std::uint32_t thread) const {
  const auto found = process_rank_.find(thread_pid_[thread]);
  return found == process_rank_.end() ? meta_.rank() : found->second;
}

void converter::take(const walk_key& k, std::string_view payload) {
  if (k.thread != walked_thread_) walk_.begin_thread(rank_of(k.thread)), walked_thread_ = k.thread;
  in_.taken.read(payload);
  if (k.what == item::memory) return add_memory(k);
  ++stats_.calls;
  // Every step one node, as the table's "ProfilerStep*" row.
  const std::string_view label = in_.taken.name.starts_with("ProfilerStep#") ? "ProfilerStep*" : in_.taken.name;
  add_amounts(walk_.enter(k.ts, k.end, label));
}

void converter::add_amounts(std::uint32_t node) {
  for (const annotation& a : in_.taken.args) {
    double v = 0;
    if (!amount_of(a, v) || std::find(std::begin(not_amounts), std::end(not_amounts), a.name) != std::end(not_amounts))
      continue;
    profile_.add(node, walk_.rank(), profile_.metric("sum#" + std::string(a.name)), v);
  }
}

void converter::add_memory(const walk_key& k) {
  const std::uint32_t node = walk_.innermost_at(k.ts);
  if (node == call_path_profile::no_node) return;  // outside every call
  double bytes = 0, device_type = 0;
  for (const annotation& a : in_.taken.args) {
    if (a.name == "Bytes") amount_of(a, bytes);
    else if (a.name == "Device Type") amount_of(a, device_type);
  }
  const char* column = device_type == 0 ? "sum#memory.cpu_bytes" : "sum#memory.device_bytes";
  profile_.add(node, walk_.rank(), profile_.metric(column), bytes);
}

std::string converter::write() {
  runs_.merge([&](const walk_key& k, std::string_view payload) { take(k, payload); });
  walk_.end_thread();
  stats_.nodes = profile_.nodes().size();
  stats_.ranks = profile_.ranks().size();
  std::string members;
  meta_.write(members, {.ranks = profile_.ranks().size(), .hosts = hosts_});
  std::string out;
  write_caliper_json(profile_, members, out);
  return out;
}

}  // namespace

caliper_conversion kineto_to_caliper(const std::filesystem::path& input, const std::filesystem::path& output) {
  caliper_conversion stats;
  compressed_output out(output);  // first: an output that cannot be written fails before the input is read
  converter c(stats);
  stats.truncated = read_kineto_json_file(input, {.on_event = [&](std::uint64_t, std::string_view e) { c.add(e); },
                                                  .on_member = [&](std::string_view k, std::string_view v) { c.member(k, v); }});
  const std::string text = c.write();
  out.stream().write(text.data(), static_cast<std::streamsize>(text.size()));
  out.commit();
  return stats;
}

}  // namespace proftrace::detail
