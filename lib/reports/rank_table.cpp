// rank_averages::table(): the job's report as a fixed-width table.
#include <algorithm>
#include <span>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string_view>

#include "proftrace/rank_averages.hpp"
#include "reports/sort_keys.hpp"

namespace proftrace {
namespace {

constexpr int column_width = 12;
constexpr int spacing = 2;

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// As key_averages' table (torch's units): nanoseconds in, "1.234ms" out.
std::string format_time(double ns) {
  const double us = ns / 1e3;
  if (us >= 1e6) return format("%.3fs", us / 1e6);
  if (us >= 1e3) return format("%.3fms", us / 1e3);
  return format("%.3fus", us);
}

std::string format_bytes(std::int64_t b) {
  const double v = static_cast<double>(b);
  if (b >= (1 << 30) || b <= -(1 << 30)) return format("%.2f Gb", v / (1 << 30));
  if (b >= (1 << 20) || b <= -(1 << 20)) return format("%.2f Mb", v / (1 << 20));
  if (b >= (1 << 10) || b <= -(1 << 10)) return format("%.2f Kb", v / (1 << 10));
  return std::to_string(b) + " b";
}

using sort_key = detail::sort_key<rank_average>;
// torch's keys, where a rank_average has the figure, and the job's own.
constexpr sort_key sort_keys[] = {
    {"cpu_time_total", [](const rank_average& r) { return static_cast<double>(r.cpu_time_total_ns); }},
    {"self_cpu_time_total", [](const rank_average& r) { return static_cast<double>(r.self_cpu_time_total_ns); }},
    {"cpu_time", [](const rank_average& r) { return r.calls ? static_cast<double>(r.cpu_time_total_ns) / static_cast<double>(r.calls) : 0; }},
    {"count", [](const rank_average& r) { return static_cast<double>(r.calls); }},
    {"cuda_time_total", [](const rank_average& r) { return static_cast<double>(r.cuda_time_total_ns); }},
    {"self_cuda_time_total", [](const rank_average& r) { return static_cast<double>(r.self_cuda_time_total_ns); }},
    {"cuda_time", [](const rank_average& r) { return r.calls ? static_cast<double>(r.cuda_time_total_ns) / static_cast<double>(r.calls) : 0; }},
    {"cpu_memory_usage", [](const rank_average& r) { return static_cast<double>(r.cpu_memory_usage); }},
    {"self_cpu_memory_usage", [](const rank_average& r) { return static_cast<double>(r.self_cpu_memory_usage); }},
    {"cuda_memory_usage", [](const rank_average& r) { return static_cast<double>(r.cuda_memory_usage); }},
    {"self_cuda_memory_usage", [](const rank_average& r) { return static_cast<double>(r.self_cuda_memory_usage); }},
    {"flops", [](const rank_average& r) { return static_cast<double>(r.flops); }},
    {"max_ns", [](const rank_average& r) { return static_cast<double>(r.max_ns); }},
    {"imbalance", [](const rank_average& r) { return r.imbalance(); }},
    {"imbalance_percent", [](const rank_average& r) { return r.imbalance_percent(); }},
};

std::vector<const rank_average*> listed_rows(const std::vector<rank_average>& rows, const table_options& options) {
  std::vector<const rank_average*> order;
  for (const rank_average& r : rows) order.push_back(&r);
  if (!options.sort_by.empty()) {
    const sort_key& key = detail::sort_key_named(std::span<const sort_key>(sort_keys), options.sort_by);
    std::stable_sort(order.begin(), order.end(),
                     [&](const rank_average* a, const rank_average* b) { return key.value(*a) > key.value(*b); });
  }
  if (options.row_limit >= 0 && order.size() > static_cast<std::size_t>(options.row_limit))
    order.resize(static_cast<std::size_t>(options.row_limit));
  return order;
}

// A name cut to `width` columns with "..." at its end, never inside a UTF-8 character.
std::string fitted(const std::string& name, std::size_t width) {
  if (name.size() <= width) return name;
  std::size_t cut = width > 3 ? width - 3 : 0;
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
  return name.substr(0, cut) + "...";
}

struct column {
  std::string header;
  std::function<std::string(const rank_average&)> cell;
  int width = column_width;
};

bool any_row(const std::vector<rank_average>& rows, bool (*has)(const rank_average&)) {
  return std::any_of(rows.begin(), rows.end(), has);
}

void add_optional_columns(std::vector<column>& cols, const std::vector<rank_average>& rows) {
  if (any_row(rows, [](const rank_average& r) { return r.cuda_time_total_ns != 0 || r.self_cuda_time_total_ns != 0; })) {
    cols.push_back({"CUDA total", [](const rank_average& r) { return format_time(static_cast<double>(r.cuda_time_total_ns)); }});
    cols.push_back({"Self CUDA", [](const rank_average& r) { return format_time(static_cast<double>(r.self_cuda_time_total_ns)); }});
  }
  if (any_row(rows, [](const rank_average& r) { return r.cpu_memory_usage != 0 || r.self_cpu_memory_usage != 0; })) {
    cols.push_back({"CPU Mem", [](const rank_average& r) { return format_bytes(r.cpu_memory_usage); }});
    cols.push_back({"Self CPU Mem", [](const rank_average& r) { return format_bytes(r.self_cpu_memory_usage); }});
  }
  if (any_row(rows, [](const rank_average& r) { return r.cuda_memory_usage != 0 || r.self_cuda_memory_usage != 0; })) {
    cols.push_back({"CUDA Mem", [](const rank_average& r) { return format_bytes(r.cuda_memory_usage); }});
    cols.push_back({"Self CUDA Mem", [](const rank_average& r) { return format_bytes(r.self_cuda_memory_usage); }});
  }
  if (any_row(rows, [](const rank_average& r) { return r.flops > 0; }))
    cols.push_back({"Total MFLOPs", [](const rank_average& r) { return format("%.3f", static_cast<double>(r.flops) / 1e6); }});
  std::vector<std::string> counters;
  for (const rank_average& r : rows)
    for (const counter_total& c : r.counters)
      if (std::find(counters.begin(), counters.end(), c.name) == counters.end()) counters.push_back(c.name);
  for (const std::string& name : counters)
    cols.push_back({name, [name](const rank_average& r) {
                      for (const counter_total& c : r.counters)
                        if (c.name == name) return std::to_string(c.total);
                      return std::string("0");
                    }, std::max<int>(column_width, static_cast<int>(name.size()))});
}

std::vector<column> plan_columns(const std::vector<rank_average>& rows, const table_options& options) {
  std::size_t name_width = 4;
  for (const rank_average& r : rows) name_width = std::max(name_width, r.key.size());
  name_width = std::min(name_width, static_cast<std::size_t>(std::max(options.max_name_column_width, 4)));
  const auto time = [](std::int64_t rank_average::*ns) {
    return [ns](const rank_average& r) { return format_time(static_cast<double>(r.*ns)); };
  };
  std::vector<column> cols = {
      {"Name", [name_width](const rank_average& r) { return fitted(r.key, name_width); }, static_cast<int>(name_width)},
      {"# of Calls", [](const rank_average& r) { return std::to_string(r.calls); }},
      {"CPU total", time(&rank_average::cpu_time_total_ns)},
      {"Self CPU", time(&rank_average::self_cpu_time_total_ns)},
      {"Min", time(&rank_average::min_ns)},
      {"Min rank", [](const rank_average& r) { return std::to_string(r.min_rank); }},
      {"Mean", [](const rank_average& r) { return format_time(r.mean_ns); }},
      {"Max", time(&rank_average::max_ns)},
      {"Max rank", [](const rank_average& r) { return std::to_string(r.max_rank); }},
      {"Imbalance", [](const rank_average& r) { return format("%.3f", r.imbalance()); }},
      {"Imbalance %", [](const rank_average& r) { return format("%.2f%%", r.imbalance_percent()); }},
      {"Ranks", [](const rank_average& r) { return std::to_string(r.ranks_with_calls) + "/" + std::to_string(r.ranks); }},
  };
  add_optional_columns(cols, rows);
  for (column& c : cols) c.width = std::max(c.width, static_cast<int>(c.header.size()));
  return cols;
}

std::string line_of(const std::vector<column>& cols, const std::vector<std::string>& cells) {
  std::string out;
  for (std::size_t i = 0; i < cols.size(); ++i) {
    const std::size_t pad = cells[i].size() < static_cast<std::size_t>(cols[i].width)
                                ? static_cast<std::size_t>(cols[i].width) - cells[i].size() : 0;
    out += i == 0 ? cells[i] + std::string(pad, ' ') : std::string(pad, ' ') + cells[i];  // names left, figures right
    if (i + 1 < cols.size()) out += std::string(spacing, ' ');
  }
  return out + "\n";
}

}  // namespace

std::string rank_averages::table(const table_options& options) const {
  const std::vector<const rank_average*> order = listed_rows(rows, options);  // checks sort_by first
  if (rows.empty()) return "Note: " + (note.empty() ? std::string("no rows") : note) + "\n";
  const std::vector<column> cols = plan_columns(rows, options);
  std::string separator;
  for (std::size_t i = 0; i < cols.size(); ++i)
    separator += std::string(static_cast<std::size_t>(cols[i].width), '-') + (i + 1 < cols.size() ? "  " : "");
  separator += "\n";
  std::string out;
  if (!options.header.empty()) out += std::string(separator.size() - 1, '=') + "\n" + options.header + "\n";
  std::vector<std::string> cells;
  for (const column& c : cols) cells.push_back(c.header);
  out += separator + line_of(cols, cells) + separator;
  for (const rank_average* r : order) {
    cells.clear();
    for (const column& c : cols) cells.push_back(c.cell(*r));
    out += line_of(cols, cells);
  }
  out += separator + "Ranks: " + std::to_string(ranks) + " (min, mean and max: one rank's CPU total; a rank without "
                                                       "the key counts 0)\n";
  if (!per_rank_note.empty()) out += "Per-rank values: " + per_rank_note + "\n";
  if (!note.empty()) out += "Note: " + note + "\n";
  return out;
}

}  // namespace proftrace
