// rank_averages::csv(): the job's report, one line per key, one column per figure.
#include <algorithm>
#include <cstdio>

#include "proftrace/rank_averages.hpp"

namespace proftrace {
namespace {

// RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::vector<std::string> counter_names(const std::vector<rank_average>& rows) {
  std::vector<std::string> names;
  for (const rank_average& r : rows)
    for (const counter_total& c : r.counters)
      if (std::find(names.begin(), names.end(), c.name) == names.end()) names.push_back(c.name);
  return names;
}

void append_row(std::string& out, const rank_average& r, const std::vector<std::string>& counters) {
  out += csv_field(r.key);
  for (const std::int64_t v : {r.calls, r.cpu_time_total_ns, r.self_cpu_time_total_ns, r.min_ns})
    out += ',' + std::to_string(v);
  out += ',' + number(r.mean_ns) + ',' + std::to_string(r.max_ns) + ',' + std::to_string(r.min_rank) + ',' +
         std::to_string(r.max_rank) + ',' + number(r.imbalance()) + ',' + number(r.imbalance_percent()) + ',' +
         std::to_string(r.ranks_with_calls) + ',' + std::to_string(r.ranks);
  for (const std::int64_t v : {r.cuda_time_total_ns, r.self_cuda_time_total_ns, r.cpu_memory_usage,
                               r.self_cpu_memory_usage, r.cuda_memory_usage, r.self_cuda_memory_usage, r.flops})
    out += ',' + std::to_string(v);
  for (const std::string& name : counters) {
    std::int64_t total = 0, self = 0;
    for (const counter_total& c : r.counters)
      if (c.name == name) total = c.total, self = c.self;
    out += ',' + std::to_string(total) + ',' + std::to_string(self);
  }
  std::string stack;
  for (const std::string& frame : r.stack) stack += (stack.empty() ? "" : ";") + frame;
  out += ',' + csv_field(stack) + '\n';
}

}  // namespace

std::string rank_averages::csv() const {
  const std::vector<std::string> counters = counter_names(rows);
  std::string out(rank_averages_csv_columns);
  for (const std::string& name : counters) out += ',' + csv_field(name + "_total") + ',' + csv_field(name + "_self");
  out += ",stack\n";
  for (const rank_average& r : rows) append_row(out, r, counters);
  return out;
}

}  // namespace proftrace
