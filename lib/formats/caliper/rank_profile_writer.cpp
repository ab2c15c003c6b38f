// rank_averages::write_profile: the job's report as a Caliper profile (rank_profile.hpp).
#include <boost/json.hpp>

#include "caliper_json_writer.hpp"
#include "caliper_run_metadata.hpp"
#include "call_path_profile.hpp"
#include "formats/json_text.hpp"
#include "rank_profile.hpp"
#include "spool/compressed_output.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

namespace json = boost::json;

// The row's node: its stack's frames outermost first, then its key.
std::uint32_t node_of(call_path_profile& profile, const rank_average& r) {
  std::uint32_t node = call_path_profile::no_node;
  for (auto frame = r.stack.rbegin(); frame != r.stack.rend(); ++frame) node = profile.child(node, *frame);
  return profile.child(node, r.key);
}

json::object row_sums(std::uint32_t node, const rank_average& r) {
  json::array sums{r.cuda_time_total_ns, r.self_cuda_time_total_ns, r.cpu_memory_usage, r.self_cpu_memory_usage,
                   r.cuda_memory_usage, r.self_cuda_memory_usage, r.flops};
  json::array counters;
  for (const counter_total& c : r.counters) counters.push_back(json::array{json::string(c.name), c.total, c.self});
  return json::object{{"node", node}, {"sums", std::move(sums)}, {"counters", std::move(counters)}};
}

void add_rank_rows(call_path_profile& profile, std::uint32_t node, const rank_average& r) {
  for (const rank_value& v : r.per_rank) {
    profile.add(node, v.rank, call_path_profile::calls, static_cast<double>(v.calls));
    profile.add(node, v.rank, call_path_profile::exclusive_ns, static_cast<double>(v.self_ns));
    profile.add(node, v.rank, call_path_profile::inclusive_ns, static_cast<double>(v.total_ns));
  }
}

// Without per-rank values: the node's one row (rank 0's place, no rank column), the figures summed.
void add_stats_row(call_path_profile& profile, std::uint32_t node, const rank_average& r) {
  profile.add(node, 0, call_path_profile::calls, static_cast<double>(r.calls));
  profile.add(node, 0, call_path_profile::exclusive_ns, static_cast<double>(r.self_cpu_time_total_ns));
  profile.add(node, 0, call_path_profile::inclusive_ns, static_cast<double>(r.cpu_time_total_ns));
  for (const auto& [name, value] : {std::pair{"min#inclusive#sum#time.duration", static_cast<double>(r.min_ns) / 1e9},
                                   {"avg#inclusive#sum#time.duration", r.mean_ns / 1e9},
                                   {"max#inclusive#sum#time.duration", static_cast<double>(r.max_ns) / 1e9},
                                   {"proftrace.min_rank", static_cast<double>(r.min_rank)},
                                   {"proftrace.max_rank", static_cast<double>(r.max_rank)},
                                   {"proftrace.ranks_with_calls", static_cast<double>(r.ranks_with_calls)}})
    profile.add(node, 0, profile.metric(name), value);
}

}  // namespace

std::string rank_profile_json(const rank_averages& report) {
  call_path_profile profile;
  json::array rows;
  const bool per_rank = report.per_rank_note.empty();
  for (const rank_average& r : report.rows) {
    const std::uint32_t node = node_of(profile, r);
    rows.push_back(row_sums(node, r));
    if (per_rank) add_rank_rows(profile, node, r);
    else add_stats_row(profile, node, r);
  }
  caliper_run_metadata meta;
  // The job's size, and the rank of a profile whose rows are all one rank's (no rank column then).
  const std::int64_t only_rank = profile.ranks().size() == 1 ? *profile.ranks().begin() : 0;
  json::object distributed{{"world_size", report.ranks}};
  if (per_rank) distributed["rank"] = only_rank;
  meta.member("distributedInfo", json::serialize(distributed));
  meta.member("proftrace.report", "\"rank_averages\"");
  if (!per_rank) meta.member("proftrace.per_rank_note", json::serialize(json::string(report.per_rank_note)));
  meta.member("proftrace.rank_rows", json::serialize(rows));
  std::string members;
  meta.write(members, {.ranks = profile.ranks().size(), .hosts = {}});
  std::string out;
  write_caliper_json(profile, members, out);
  return out;
}

}  // namespace proftrace::detail

namespace proftrace {

void rank_averages::write_profile(const std::filesystem::path& path) const {
  const std::string text = detail::rank_profile_json(*this);
  detail::compressed_output out(path);
  out.stream().write(text.data(), static_cast<std::streamsize>(text.size()));
  out.commit();
}

}  // namespace proftrace
