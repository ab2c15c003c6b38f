#include "proftrace/key_averages.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace proftrace {
namespace {

constexpr int column_width = 12;
constexpr int spacing = 2;

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// torch's _format_time: microseconds in, "1.234ms" out.
std::string format_time(double us) {
  if (us >= 1e6) return format("%.3fs", us / 1e6);
  if (us >= 1e3) return format("%.3fms", us / 1e3);
  return format("%.3fus", us);
}

std::string format_share(double us, double total_us) {
  if (total_us == 0) return "0.00%";
  return format("%.2f%%", us * 100.0 / total_us);
}

struct table_layout {
  std::vector<int> widths;
  std::vector<bool> left;
  std::string separator;

  void add(int width, bool left_aligned = false) {
    widths.push_back(width);
    left.push_back(left_aligned);
    separator += std::string(static_cast<std::size_t>(width), '-') + std::string(spacing, ' ');
  }
  std::string row(const std::vector<std::string>& cells) const {
    std::string out;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const auto pad = static_cast<std::size_t>(std::max(0, widths[i] - static_cast<int>(cells[i].size())));
      if (left[i]) out += cells[i] + std::string(pad, ' ');
      else out += std::string(pad, ' ') + cells[i];
      out += std::string(spacing, ' ');
    }
    return out;
  }
};

}  // namespace

std::int64_t event_averages::self_cpu_time_total_ns() const noexcept {
  std::int64_t total = 0;
  for (const auto& r : rows) total += r.self_cpu_time_total_ns;
  return total;
}

std::string event_averages::table(const table_options& options) const {
  std::vector<const event_average*> order;
  order.reserve(rows.size());
  for (const auto& r : rows) order.push_back(&r);
  if (!options.sort_by.empty()) {
    using key_fn = double (*)(const event_average&);
    key_fn key = nullptr;
    const std::string& s = options.sort_by;
    if (s == "cpu_time") key = [](const event_average& e) { return e.cpu_time_avg_us(); };
    else if (s == "cpu_time_total") key = [](const event_average& e) { return e.cpu_time_total_us(); };
    else if (s == "self_cpu_time_total") key = [](const event_average& e) { return e.self_cpu_time_total_us(); };
    else if (s == "count") key = [](const event_average& e) { return static_cast<double>(e.count); };
    else throw std::invalid_argument("proftrace: unknown sort_by key '" + s + "'");
    std::stable_sort(order.begin(), order.end(), [&](auto* a, auto* b) { return key(*a) > key(*b); });
  }
  if (options.row_limit >= 0 && order.size() > static_cast<std::size_t>(options.row_limit))
    order.resize(static_cast<std::size_t>(options.row_limit));

  std::size_t longest = 0;
  for (auto* r : order) longest = std::max(longest, r->key.size());
  const int name_width = std::min(static_cast<int>(longest) + 4, options.max_name_column_width);
  std::size_t shapes_width = 0;
  if (grouped_by_input_shape)
    for (auto* r : order) shapes_width = std::max(shapes_width, r->input_shapes.size());

  table_layout layout;
  std::vector<std::string> headers = {"Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"};
  layout.add(name_width, true);
  for (std::size_t i = 1; i < headers.size(); ++i) layout.add(column_width);
  if (grouped_by_input_shape) {
    headers.push_back("Input Shapes");
    layout.add(static_cast<int>(std::min<std::size_t>(std::max<std::size_t>(shapes_width + 4, column_width), 80)), true);
  }

  const double self_total_us = static_cast<double>(self_cpu_time_total_ns()) / 1e3;
  const std::size_t line_length = layout.separator.size();
  std::string out;
  const auto line = [&](const std::string& s) { out += s + "\n"; };
  if (!options.header.empty()) {
    line(std::string(line_length, '='));
    line(options.header);
  }
  line(layout.separator);
  line(layout.row(headers));
  line(layout.separator);
  for (auto* r : order) {
    std::string name = r->key;
    const auto max_name = static_cast<std::size_t>(options.max_name_column_width);
    if (name.size() >= max_name - 3) name = name.substr(0, max_name - 3) + "...";
    std::vector<std::string> cells = {name,
                                      format_share(r->self_cpu_time_total_us(), self_total_us),
                                      format_time(r->self_cpu_time_total_us()),
                                      format_share(r->cpu_time_total_us(), self_total_us),
                                      format_time(r->cpu_time_total_us()),
                                      format_time(r->cpu_time_avg_us()),
                                      std::to_string(r->count)};
    if (grouped_by_input_shape) cells.push_back(r->input_shapes.substr(0, 80));
    line(layout.row(cells));
  }
  line(layout.separator);
  line("Self CPU time total: " + format_time(self_total_us));
  if (losses.total() > 0) {
    line("Lost events: " + std::to_string(losses.total()) + " (dropped " + std::to_string(losses.dropped) +
         ", overwritten " + std::to_string(losses.overwritten) + ", unattached " + std::to_string(losses.unattached) +
         ", late " + std::to_string(losses.late) + ", unpaired " + std::to_string(losses.unpaired) + ")");
  }
  return out;
}

}  // namespace proftrace
