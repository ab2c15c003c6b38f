// `proftrace summary DIR` (rank_summary.hpp): a directory's traces, one
// summary each, grouped into schedule cycles, and the view across ranks.
#include "rank_summary.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <map>
#include <numeric>
#include <set>

#include "trace_summary.hpp"

namespace proftrace::tools {

namespace {

std::string steps_text(std::int64_t first, std::int64_t last) {
  if (first < 0) return {};
  return first == last ? "step " + std::to_string(first) : "steps " + std::to_string(first) + "-" + std::to_string(last);
}

// The ranks a cycle's world_size names that left no trace: a view across
// ranks that silently lacked one would lie.
void warn_missing_ranks(const std::vector<rank_summary>& traces, std::size_t cycle, const std::string& label,
                        std::vector<std::string>& warnings) {
  std::set<int> present;
  int world = -1;
  for (const rank_summary& t : traces)
    if (t.cycle == cycle && t.rank >= 0) present.insert(t.rank), world = std::max(world, t.world_size);
  if (present.empty() || world <= 0) return;
  std::string missing;
  int count = 0;
  for (int r = 0; r < world; ++r)
    if (!present.contains(r) && ++count <= 16) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
  if (count == 0) return;
  if (count > 16) missing += ", ...";
  warnings.push_back("no trace of rank" + std::string(count == 1 ? " " : "s ") + missing + " of world_size " +
                     std::to_string(world) + (label.empty() ? "" : " (" + label + ")") + ": the view across ranks shows " +
                     std::to_string(present.size()) + " of " + std::to_string(world));
}

// What a trace's metadata says of its rank: into `s`, `losses` and `profile_memory`.
void take_rank_metadata(const std::filesystem::path& file, const metadata_entry& m, rank_summary& s,
                        proftrace::loss_counts& losses, bool& profile_memory, std::vector<std::string>& warnings) {
  take_loss_counter(m, losses);
  if (m.key == "profile_memory" && m.value == "1") profile_memory = true;
  if (m.key == "distributedInfo.host" && m.type == json_type::string) s.host = m.value;
  if (m.key == "distributedInfo.world_size")
    if (const auto world = integer_value(m, 1, INT_MAX)) s.world_size = static_cast<int>(*world);
  if (m.key == "distributedInfo.rank") {
    if (const auto rank = integer_value(m, 0, INT_MAX)) s.rank = static_cast<int>(*rank);
    else warnings.push_back(file.string() + ": \"distributedInfo.rank\" is " + m.value +
                            ", not a rank; the trace is summarised as one without a rank");
  }
  if (m.key == "baseTimeNanoseconds") {
    if (const auto base = integer_value(m, INT64_MIN, INT64_MAX)) s.base_ns = *base;
    else warnings.push_back(file.string() + ": \"baseTimeNanoseconds\" is " + m.value +
                            ", not an integer of nanoseconds; taken as 0");
  }
}

// One trace of the directory, summarised, with its rank, steps and start.
rank_summary summarize_rank(const std::filesystem::path& file, bool group_by_input_shape,
                            std::vector<std::string>& warnings) {
  rank_summary s;
  s.file = file;
  aggregator agg(group_by_input_shape);
  bool profile_memory = false;
  proftrace::loss_counts losses;
  for (const auto& m : aggregate(file, agg, warnings, false).metadata)
    take_rank_metadata(file, m, s, losses, profile_memory, warnings);
  s.averages = agg.finish();
  s.averages.losses = losses;
  s.averages.profile_memory = profile_memory || agg.saw_memory();
  s.first_step = agg.first_step();
  s.last_step = agg.last_step();
  if (__builtin_add_overflow(s.base_ns, agg.first_ts_ns(), &s.start_ns))  // a crafted base: order it last or first
    s.start_ns = s.base_ns > 0 ? INT64_MAX : INT64_MIN;
  return s;
}

// Key: (0, first step) or (1, ordinal); a trace without a rank is its own rank.
using cycle_map = std::map<std::pair<int, std::int64_t>, std::vector<std::size_t>>;

// Cycles: traces with steps by their first step; a rank's traces without
// steps by their order in time (the k-th such trace of every rank together).
cycle_map cycles_of(const std::vector<rank_summary>& traces) {
  std::map<int, std::vector<std::size_t>> stepless_by_rank;
  for (std::size_t i = 0; i < traces.size(); ++i)
    if (traces[i].first_step < 0) stepless_by_rank[traces[i].rank].push_back(i);
  cycle_map cycles;
  for (std::size_t i = 0; i < traces.size(); ++i)
    if (traces[i].first_step >= 0) cycles[{0, traces[i].first_step}].push_back(i);
  for (auto& [rank, idx] : stepless_by_rank) {
    if (rank < 0) {
      for (auto i : idx) cycles[{1, 0}].push_back(i);
      continue;
    }
    std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
      // Every proftrace and Kineto trace shares one base: order by first event.
      return traces[a].start_ns != traces[b].start_ns ? traces[a].start_ns < traces[b].start_ns
                                                      : traces[a].file < traces[b].file;
    });
    for (std::size_t k = 0; k < idx.size(); ++k) cycles[{1, static_cast<std::int64_t>(k)}].push_back(idx[k]);
  }
  return cycles;
}

// A cycle's steps and label, from its traces `idx`.
cycle_summary describe_cycle(const std::vector<rank_summary>& traces, const std::vector<std::size_t>& idx,
                             std::pair<int, std::int64_t> key, bool several_stepless) {
  cycle_summary c;
  for (auto i : idx) {
    const auto& t = traces[i];
    if (t.first_step >= 0) {
      c.first_step = c.first_step < 0 ? t.first_step : std::min(c.first_step, t.first_step);
      c.last_step = std::max(c.last_step, t.last_step);
    }
  }
  c.label = key.first == 0 ? steps_text(c.first_step, c.last_step)
            : several_stepless ? "trace " + std::to_string(key.second + 1)
                               : std::string();
  return c;
}

// A cycle's traces `idx`, moved out of `traces` onto `ordered` by rank
// (traces without one last, by file), a rank's second trace marked a duplicate.
void order_cycle(std::vector<rank_summary>& traces, std::vector<std::size_t> idx, std::size_t cycle,
                 cycle_summary& c, std::vector<rank_summary>& ordered, std::vector<std::string>& warnings) {
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    const auto &x = traces[a], &y = traces[b];
    if ((x.rank >= 0) != (y.rank >= 0)) return x.rank >= 0;
    return x.rank != y.rank ? x.rank < y.rank : x.file < y.file;
  });
  int previous_rank = -1;
  std::string first_file;
  for (auto i : idx) {
    rank_summary t = std::move(traces[i]);
    t.cycle = cycle;
    if (t.rank < 0) c.all_ranked = false;
    if (t.rank >= 0 && t.rank == previous_rank) {
      t.duplicate = true;
      warnings.push_back(t.file.string() + ": a second trace of rank " + std::to_string(t.rank) +
                         (c.label.empty() ? "" : ", " + c.label) + " (after " + first_file +
                         "): its table is shown, the view across ranks uses the first");
    } else {
      ++c.entities;
      first_file = t.file.filename().string();
    }
    previous_rank = t.rank;
    ordered.push_back(std::move(t));
  }
}

}  // namespace

std::string rank_summary::steps() const { return steps_text(first_step, last_step); }

ranks_summary summarize_ranks(const std::filesystem::path& dir, bool group_by_input_shape,
                              std::vector<std::string>& warnings) {
  ranks_summary out;
  const auto files = list_traces(dir, out.skipped);
  if (files.empty()) {
    std::string why = dir.string() + ": no Kineto trace in the directory";
    if (!out.skipped.empty())
      why += " (" + std::to_string(out.skipped.size()) + (out.skipped.size() == 1 ? " file" : " files") +
             " skipped, e.g. " + out.skipped.front().file.filename().string() + ": " + out.skipped.front().reason + ")";
    throw trace_error(why);
  }
  for (const auto& file : files) out.traces.push_back(summarize_rank(file, group_by_input_shape, warnings));
  cycle_map cycles = cycles_of(out.traces);
  const bool several_stepless = cycles.count({1, 1}) != 0;
  std::vector<rank_summary> ordered;
  for (auto& [key, idx] : cycles) {
    cycle_summary c = describe_cycle(out.traces, idx, key, several_stepless);
    const std::size_t cycle = out.cycles.size();
    order_cycle(out.traces, std::move(idx), cycle, c, ordered, warnings);
    warn_missing_ranks(ordered, cycle, c.label, warnings);
    out.cycles.push_back(std::move(c));
  }
  out.traces = std::move(ordered);
  return out;
}

std::string cross_rank_table(const ranks_summary& ranks, std::size_t cycle, int row_limit) {
  struct key_stats {
    std::vector<std::pair<std::int64_t, std::size_t>> self;  // (self CPU ns, index into ranks.traces)
  };
  std::map<std::string, key_stats> keys;
  for (std::size_t i = 0; i < ranks.traces.size(); ++i) {
    const auto& t = ranks.traces[i];
    if (t.cycle != cycle || t.duplicate) continue;
    for (const auto& row : t.averages.rows) keys[row.key].self.emplace_back(row.self_cpu_time_total_ns, i);
  }
  const std::size_t total = cycle < ranks.cycles.size() ? ranks.cycles[cycle].entities : 0;
  struct line {
    std::string key;
    std::size_t present;
    std::int64_t min, median, max;
    std::size_t slowest;
  };
  std::vector<line> lines;
  for (auto& [key, st] : keys) {
    std::sort(st.self.begin(), st.self.end());
    const std::size_t n = st.self.size();  // an even count's median: the mean of the middle two
    const std::int64_t median = n % 2 ? st.self[n / 2].first : std::midpoint(st.self[n / 2 - 1].first, st.self[n / 2].first);
    lines.push_back({key, n, st.self.front().first, median, st.self.back().first, st.self.back().second});
  }
  std::stable_sort(lines.begin(), lines.end(),
                   [](const line& a, const line& b) { return a.max - a.min > b.max - b.min; });
  const auto who = [&](std::size_t i) {
    return ranks.traces[i].rank >= 0 ? "rank " + std::to_string(ranks.traces[i].rank)
                                     : ranks.traces[i].file.filename().string();
  };
  std::size_t name_width = 4;
  for (const auto& l : lines) name_width = std::max(name_width, std::min<std::size_t>(l.key.size(), 55));
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-*s  %7s  %14s  %14s  %14s  %s\n", static_cast<int>(name_width), "Name", "Ranks",
                "Self CPU min us", "median us", "max us", "Slowest");
  out += buf;
  int n = 0;
  for (const auto& l : lines) {
    if (row_limit >= 0 && n++ >= row_limit) break;
    const std::string name = l.key.size() > 55 ? l.key.substr(0, 52) + "..." : l.key;
    const std::string present = std::to_string(l.present) + "/" + std::to_string(total);
    std::snprintf(buf, sizeof buf, "%-*s  %7s  %14s  %14s  %14s  %s\n", static_cast<int>(name_width), name.c_str(),
                  present.c_str(), us_text(l.min).c_str(), us_text(l.median).c_str(), us_text(l.max).c_str(),
                  l.max > l.min ? who(l.slowest).c_str() : "-");
    out += buf;
  }
  return out;
}

}  // namespace proftrace::tools
