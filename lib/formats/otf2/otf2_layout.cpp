#include "otf2_layout.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <string_view>

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

namespace {

bool is_gpu_stream(const otf2_thread_ids& t) {
  return t.gpu_work || (!t.tid.is_number && t.tid.text.starts_with("stream "));
}

// N of a name "rank N ..." (proftrace merge's process names); -1 otherwise.
int rank_in_name(std::string_view name) {
  constexpr std::string_view prefix = "rank ";
  if (!name.starts_with(prefix)) return -1;
  int rank = -1;
  const auto [at, ec] = std::from_chars(name.data() + prefix.size(), name.data() + name.size(), rank);
  return ec == std::errc() && (at == name.data() + name.size() || *at == ' ') ? rank : -1;
}

// A thread without a name: "thread 12"; a named track keeps its name ("stream 7").
std::string default_thread_name(const id_value& tid) {
  if (tid.text.empty()) return "counters";
  return tid.is_number ? "thread " + tid.text : tid.text;
}

template <class Map>
std::string name_or(const Map& names, const std::string& key, std::string fallback) {
  const auto found = names.find(key);
  return found == names.end() || found->second.empty() ? fallback : found->second;
}

// Groups by pid, in the order of their first thread; a group is an
// accelerator when every thread of it is a GPU stream.
void make_groups(const otf2_layout_input& in, otf2_layout& out) {
  std::map<std::string, std::uint32_t> group_of_pid;
  std::vector<bool> all_streams;
  for (const otf2_thread_ids& t : in.threads) {
    const auto [it, fresh] = group_of_pid.try_emplace(t.pid.text, static_cast<std::uint32_t>(out.groups.size()));
    if (fresh) out.groups.emplace_back(), all_streams.push_back(true);
    all_streams[it->second] = all_streams[it->second] && is_gpu_stream(t);
    out.locations.push_back({.name = name_or(in.thread_names, t.pid.text + '\x1f' + t.tid.text, default_thread_name(t.tid)),
                             .type = static_cast<OTF2_LocationType>(is_gpu_stream(t) ? OTF2_LOCATION_TYPE_ACCELERATOR_STREAM
                                                                                 : OTF2_LOCATION_TYPE_CPU_THREAD),
                             .group = it->second});
  }
  for (const auto& [pid, index] : group_of_pid) {
    otf2_location_group& g = out.groups[index];
    g.type = all_streams[index] ? OTF2_LOCATION_GROUP_TYPE_ACCELERATOR : OTF2_LOCATION_GROUP_TYPE_PROCESS;
    g.name = name_or(in.process_names, pid, (all_streams[index] ? "GPU " : "process ") + pid);
    g.rank = rank_in_name(g.name);
    if (g.rank < 0 && g.type == OTF2_LOCATION_GROUP_TYPE_PROCESS) g.rank = in.trace_rank;
  }
}

// An accelerator's creator: the host group of its rank, else the first host group.
void link_accelerators(otf2_layout& out) {
  std::map<int, std::uint32_t> host_of_rank;
  std::uint32_t first_host = OTF2_UNDEFINED_UINT32;
  for (std::uint32_t i = 0; i < out.groups.size(); ++i) {
    if (out.groups[i].type != OTF2_LOCATION_GROUP_TYPE_PROCESS) continue;
    host_of_rank.try_emplace(out.groups[i].rank, i);
    if (first_host == OTF2_UNDEFINED_UINT32) first_host = i;
    if (out.groups[i].rank >= 0) out.ranks.push_back(out.groups[i].rank);
  }
  for (otf2_location_group& g : out.groups) {
    if (g.type != OTF2_LOCATION_GROUP_TYPE_ACCELERATOR) continue;
    const auto host = host_of_rank.find(g.rank);
    g.creator = host != host_of_rank.end() ? host->second : first_host;
  }
  std::sort(out.ranks.begin(), out.ranks.end());
  out.ranks.erase(std::unique(out.ranks.begin(), out.ranks.end()), out.ranks.end());
}

}  // namespace

bool otf2_layout::comm_rank_of(int rank, std::uint32_t& place) const noexcept {
  const auto found = std::lower_bound(ranks.begin(), ranks.end(), rank);
  if (found == ranks.end() || *found != rank) return false;
  place = static_cast<std::uint32_t>(found - ranks.begin());
  return true;
}

otf2_layout plan_layout(const otf2_layout_input& in) {
  otf2_layout out;
  make_groups(in, out);
  link_accelerators(out);
  return out;
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
