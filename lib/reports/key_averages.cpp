#include "proftrace/key_averages.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

namespace proftrace {
namespace {

constexpr int column_width = 12;
constexpr int spacing = 2;
constexpr std::size_t max_stack_entries = 5;  // torch's MAX_STACK_ENTRY

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

// A cell's width as torch counts it (Python's len): code points, not bytes.
// A cut falls before a byte that starts one, so it never splits a UTF-8
// character (a stray continuation byte counts with the one before it).
bool starts_code_point(char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }
std::size_t columns(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), starts_code_point));
}
// The byte offset of code point `n` (s.size() when s has fewer).
std::size_t offset_of_column(std::string_view s, std::size_t n) {
  for (std::size_t i = 0; i < s.size(); ++i)
    if (starts_code_point(s[i]) && n-- == 0) return i;
  return s.size();
}
std::string first_columns(std::string_view s, std::size_t n) { return std::string(s.substr(0, offset_of_column(s, n))); }
std::string last_columns(std::string_view s, std::size_t n) {
  const std::size_t total = columns(s);
  return std::string(s.substr(offset_of_column(s, total > n ? total - n : 0)));
}

// torch's trim_path: keep the end of a long source location.
std::string trim_path(const std::string& path, std::size_t width) {
  if (columns(path) <= width) return path;
  return width > 3 ? "..." + last_columns(path, width - 3) : last_columns(path, width);
}

struct sort_key {
  const char* name;
  double (*value)(const event_average&);
};

constexpr sort_key sort_keys[] = {
    {"cpu_time", [](const event_average& e) { return e.cpu_time_avg_us(); }},
    {"cuda_time", [](const event_average& e) { return e.cuda_time_avg_us(); }},
    {"cpu_time_total", [](const event_average& e) { return e.cpu_time_total_us(); }},
    {"cuda_time_total", [](const event_average& e) { return e.cuda_time_total_us(); }},
    {"self_cpu_time_total", [](const event_average& e) { return e.self_cpu_time_total_us(); }},
    {"self_cuda_time_total", [](const event_average& e) { return e.self_cuda_time_total_us(); }},
    {"cpu_memory_usage", [](const event_average& e) { return static_cast<double>(e.cpu_memory_usage); }},
    {"cuda_memory_usage", [](const event_average& e) { return static_cast<double>(e.cuda_memory_usage); }},
    {"self_cpu_memory_usage", [](const event_average& e) { return static_cast<double>(e.self_cpu_memory_usage); }},
    {"self_cuda_memory_usage", [](const event_average& e) { return static_cast<double>(e.self_cuda_memory_usage); }},
    {"count", [](const event_average& e) { return static_cast<double>(e.count); }},
    {"flops", [](const event_average& e) { return static_cast<double>(e.flops); }},
};

// torch's _format_memory: steps of 1024.
std::string format_memory(std::int64_t bytes) {
  constexpr double kb = 1024.0, mb = kb * 1024.0, gb = mb * 1024.0;
  const double b = static_cast<double>(bytes);
  if (std::abs(b) >= gb) return format("%.2f Gb", b / gb);
  if (std::abs(b) >= mb) return format("%.2f Mb", b / mb);
  if (std::abs(b) >= kb) return format("%.2f Kb", b / kb);
  return std::to_string(bytes) + " b";
}

// torch's auto_scale_flops: the unit of the smallest positive count (none: FLOPs).
std::pair<double, std::string> flops_scale(std::int64_t smallest) {
  if (smallest <= 0) return {1.0, "FLOPs"};
  static const char* const units[] = {"FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"};
  const double log = std::max(0.0, std::min(std::log10(static_cast<double>(smallest)) / 3.0, 5.0));
  const int k = static_cast<int>(std::floor(log));
  return {std::pow(10.0, -3.0 * k), units[k]};
}

std::int64_t smallest_positive_flops(const std::vector<event_average>& rows) {
  std::int64_t smallest = 0;
  for (const auto& r : rows)
    if (r.flops > 0 && (smallest == 0 || r.flops < smallest)) smallest = r.flops;
  return smallest;
}

// The columns of every report up to "# of Calls": torch's, with those of
// the quantities shown (one set for the table and the CSV).
std::vector<std::string> leading_headers(const event_averages::quantities& shown) {
  std::vector<std::string> h = {"Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"};
  if (shown.cuda_time) h.insert(h.end(), {"Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"});
  if (shown.cpu_memory) h.insert(h.end(), {"CPU Mem", "Self CPU Mem"});
  if (shown.cuda_memory) h.insert(h.end(), {"CUDA Mem", "Self CUDA Mem"});
  h.push_back("# of Calls");
  return h;
}

std::vector<std::string> leading_cells(const event_average& r, std::string name, const event_averages::quantities& shown,
                                       double self_total_us, double self_cuda_total_us) {
  std::vector<std::string> cells = {std::move(name),
                                    format_share(r.self_cpu_time_total_us(), self_total_us),
                                    format_time(r.self_cpu_time_total_us()),
                                    format_share(r.cpu_time_total_us(), self_total_us),
                                    format_time(r.cpu_time_total_us()),
                                    format_time(r.cpu_time_avg_us())};
  if (shown.cuda_time)
    cells.insert(cells.end(), {format_time(r.self_cuda_time_total_us()),
                               format_share(r.self_cuda_time_total_us(), self_cuda_total_us),
                               format_time(r.cuda_time_total_us()), format_time(r.cuda_time_avg_us())});
  if (shown.cpu_memory) cells.insert(cells.end(), {format_memory(r.cpu_memory_usage), format_memory(r.self_cpu_memory_usage)});
  if (shown.cuda_memory) cells.insert(cells.end(), {format_memory(r.cuda_memory_usage), format_memory(r.self_cuda_memory_usage)});
  cells.push_back(std::to_string(r.count));
  return cells;
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
      const auto pad = static_cast<std::size_t>(std::max(0, widths[i] - static_cast<int>(columns(cells[i]))));
      if (left[i]) out += cells[i] + std::string(pad, ' ');
      else out += std::string(pad, ' ') + cells[i];
      out += std::string(spacing, ' ');
    }
    return out;
  }
};

// The sort key of that name; std::invalid_argument naming the valid ones.
const sort_key& sort_key_named(const std::string& name) {
  const auto* key = std::find_if(std::begin(sort_keys), std::end(sort_keys), [&](const sort_key& k) { return name == k.name; });
  if (key == std::end(sort_keys)) {
    std::string valid;
    for (const auto& k : sort_keys) valid += std::string(valid.empty() ? "" : ", ") + k.name;
    throw std::invalid_argument("proftrace: unknown sort_by key '" + name + "' (valid keys: " + valid + ")");
  }
  return *key;
}

}  // namespace

std::int64_t event_averages::self_cpu_time_total_ns() const noexcept {
  std::int64_t total = 0;
  for (const auto& r : rows) total += r.self_cpu_time_total_ns;
  return total;
}

std::int64_t event_averages::self_cuda_time_total_ns() const noexcept {
  std::int64_t total = 0;
  for (const auto& r : rows) total += r.self_cuda_time_total_ns;
  return total;
}

event_average event_averages::total_average() const {
  event_average total;
  total.key = "Total";
  for (const auto& r : rows) total.merge(r);
  return total;
}

std::string event_averages::table(const table_options& options) const {
  // Nothing behind the report: the reason is the whole table (as compiled out).
  if (rows.empty() && !note.empty() && losses.total() == 0) {
    if (!options.sort_by.empty()) (void)sort_key_named(options.sort_by);
    return "Note: " + note + "\n";
  }
  std::vector<const event_average*> order;
  order.reserve(rows.size());
  for (const auto& r : rows)
    if (!options.top_level_events_only || r.top_level) order.push_back(&r);
  if (!options.sort_by.empty()) {
    const sort_key* key = &sort_key_named(options.sort_by);
    std::stable_sort(order.begin(), order.end(), [&](auto* a, auto* b) { return key->value(*a) > key->value(*b); });
  }
  if (options.row_limit >= 0 && order.size() > static_cast<std::size_t>(options.row_limit))
    order.resize(static_cast<std::size_t>(options.row_limit));

  // As torch's _build_table: the columns and their widths come from every
  // row, also those the row limit or --top-level-only leave out. An event
  // without shapes shows torch's "[]".
  const auto shapes_text = [](const event_average& r) { return r.input_shapes.empty() ? std::string("[]") : r.input_shapes; };
  std::size_t longest = 0, shapes_longest = 0, src_longest = 0;
  bool has_stack = false, has_input_shapes = false;
  for (const auto& r : rows) {
    longest = std::max(longest, columns(r.key));
    shapes_longest = std::max(shapes_longest, columns(shapes_text(r)));
    has_input_shapes = has_input_shapes || (grouped_by_input_shape && !r.input_shapes.empty() && r.input_shapes != "[]");
    for (std::size_t i = 0; i < r.stack.size() && i < max_stack_entries; ++i) src_longest = std::max(src_longest, columns(r.stack[i]));
    has_stack = has_stack || !r.stack.empty();
  }
  const int name_width = std::min(static_cast<int>(longest) + 4, options.max_name_column_width);
  const int shapes_width = std::min(static_cast<int>(shapes_longest) + 4, options.max_shapes_column_width);
  const int src_width = std::min(static_cast<int>(src_longest) + 4, options.max_src_column_width);

  const quantities shown = shown_quantities();
  const bool has_cuda_time = shown.cuda_time;
  const std::int64_t smallest_flops = smallest_positive_flops(rows);

  table_layout layout;
  std::vector<std::string> headers = leading_headers(shown);
  // torch right-aligns every column but the source location, Name and
  // Input Shapes included.
  layout.add(name_width);
  for (std::size_t i = 1; i < headers.size(); ++i) layout.add(column_width);
  if (has_input_shapes) {
    headers.push_back("Input Shapes");
    layout.add(shapes_width);
  }
  const std::size_t src_column = headers.size();
  if (has_stack) {
    headers.push_back("Source Location");
    layout.add(src_width, true);
  }
  const auto [flops_factor, flops_unit] = flops_scale(smallest_flops);
  if (smallest_flops > 0) {
    headers.push_back("Total " + flops_unit);
    layout.add(column_width);
  }
  // Counters (profile_options::counters): a total and a self column each,
  // in the order first seen; instructions per cycle where both are counted.
  std::vector<std::string> counter_names;
  for (const auto& r : rows)
    for (const auto& c : r.counters)
      if (std::find(counter_names.begin(), counter_names.end(), c.name) == counter_names.end()) counter_names.push_back(c.name);
  const auto counted = [&](const char* n) { return std::find(counter_names.begin(), counter_names.end(), n) != counter_names.end(); };
  const bool has_ipc = counted("instructions") && counted("cycles");
  for (const auto& n : counter_names) {
    for (const std::string& h : {n, "Self " + n}) {
      headers.push_back(h);
      layout.add(std::max(column_width, static_cast<int>(h.size())));
    }
  }
  if (has_ipc) {
    headers.push_back("IPC");
    layout.add(column_width);
  }

  const double self_total_us = static_cast<double>(self_cpu_time_total_ns()) / 1e3;
  const double self_cuda_total_us = static_cast<double>(self_cuda_time_total_ns()) / 1e3;
  // torch's line_length: the columns and the spaces between them, not the
  // two after the last.
  const std::size_t line_length = layout.separator.size() - spacing;
  std::string out;
  const auto line = [&](const std::string& s) { out += s + "\n"; };
  if (!options.header.empty()) {
    line(std::string(line_length, '='));
    line(options.header);
  }
  if (options.top_level_events_only) {
    line(std::string(line_length, '='));
    line("This report only display top-level ops statistics");
  }
  line(layout.separator);
  line(layout.row(headers));
  line(layout.separator);
  for (auto* r : order) {
    std::string name = r->key;
    const auto max_name = static_cast<std::size_t>(options.max_name_column_width);
    if (columns(name) >= max_name - 3) name = first_columns(name, max_name - 3) + "...";
    std::vector<std::string> cells = leading_cells(*r, name, shown, self_total_us, self_cuda_total_us);
    if (has_input_shapes) cells.push_back(first_columns(shapes_text(*r), static_cast<std::size_t>(shapes_width)));
    if (has_stack) cells.push_back(r->stack.empty() ? "" : trim_path(r->stack[0], static_cast<std::size_t>(src_width)));
    if (smallest_flops > 0) cells.push_back(r->flops <= 0 ? std::string("--") : format("%8.3f", static_cast<double>(r->flops) * flops_factor));
    for (const auto& n : counter_names) {
      const counter_total* c = r->counter(n);
      const bool is_time = n == "task-clock" || n == "cpu-clock";  // nanoseconds, as perf reports them
      for (const std::int64_t v : {c ? c->total : 0, c ? c->self : 0})
        cells.push_back(!c ? std::string("--") : is_time ? format_time(static_cast<double>(v) / 1e3) : std::to_string(v));
    }
    if (has_ipc) {
      const counter_total* ins = r->counter("instructions");
      const counter_total* cyc = r->counter("cycles");
      cells.push_back(ins && cyc && cyc->total > 0 ? format("%.2f", static_cast<double>(ins->total) / static_cast<double>(cyc->total))
                                                   : std::string("--"));
    }
    line(layout.row(cells));
    // Further stack frames go on their own lines under the source column.
    for (std::size_t i = 1; has_stack && i < r->stack.size() && i < max_stack_entries; ++i) {
      std::vector<std::string> more(cells.size());
      more[src_column] = trim_path(r->stack[i], static_cast<std::size_t>(src_width));
      line(layout.row(more));
    }
    // torch closes each row of a table with stacks with an empty row.
    if (has_stack) line(layout.row(std::vector<std::string>(cells.size())));
  }
  line(layout.separator);
  line("Self CPU time total: " + format_time(self_total_us));
  if (has_cuda_time) line("Self CUDA time total: " + format_time(self_cuda_total_us));
  if (losses.total() > 0) {
    line("Lost events: " + std::to_string(losses.total()) + " (dropped " + std::to_string(losses.dropped) +
         ", overwritten " + std::to_string(losses.overwritten) + ", unattached " + std::to_string(losses.unattached) +
         ", late " + std::to_string(losses.late) + ", unpaired " + std::to_string(losses.unpaired) + ")");
  }
  if (!note.empty()) line("Note: " + note);
  return out;
}

std::string event_averages::collapsed_stacks(std::string_view metric, frame_names names) const {
  if (metric != "self_cpu_time_total" && metric != "self_cuda_time_total")
    throw std::invalid_argument("proftrace: stacks metric must be self_cpu_time_total or self_cuda_time_total, not '" +
                                std::string(metric) + "'");
  // A step frame is ProfilerStep*, a worker's step span (its row "thread step") too.
  const auto clean = [names](std::string frame) {
    if (frame == "thread step") return std::string("ProfilerStep*");
    for (char& c : frame)
      if (names == frame_names::torch && (c == ' ' || c == ';' || c == '\t' || c == '\n')) c = '_';
      else if (names == frame_names::as_is && (c == '\n' || c == '\r')) c = ' ';
      else if (names == frame_names::as_is && c == ';') c = ':';
    return frame;
  };
  // Summed in ns, cut to whole us once per line: rows that share a stack
  // (one per input shape under record_shapes) each cut on their own would
  // lose up to a microsecond apiece, and `proftrace stacks` cuts once.
  std::vector<std::pair<std::string, std::int64_t>> lines;
  std::unordered_map<std::string, std::size_t> index;
  for (const auto& r : rows) {
    const std::int64_t value_ns = metric == "self_cpu_time_total" ? r.self_cpu_time_total_ns : r.self_cuda_time_total_ns;
    std::string stack;
    for (auto it = r.stack.rbegin(); it != r.stack.rend(); ++it) stack += clean(*it) + ";";
    stack += clean(r.key);
    auto [it, fresh] = index.try_emplace(stack, lines.size());
    if (fresh) lines.emplace_back(stack, 0);
    lines[it->second].second += value_ns;
  }
  std::string out;
  for (const auto& [stack, value_ns] : lines)
    if (value_ns >= 1000) out += stack + " " + std::to_string(value_ns / 1000) + "\n";
  return out;
}

std::string event_averages::csv() const {
  const auto quoted = [](const std::string& s) {
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  const auto line = [](const std::vector<std::string>& cells) {
    std::string l;
    for (const auto& c : cells) l += (l.empty() ? "" : ",") + c;
    return l + "\n";
  };
  const double self_total_us = static_cast<double>(self_cpu_time_total_ns()) / 1e3;
  const double self_cuda_total_us = static_cast<double>(self_cuda_time_total_ns()) / 1e3;
  const quantities shown = shown_quantities();
  const auto [flops_factor, flops_unit] = flops_scale(smallest_positive_flops(rows));
  std::vector<std::string> headers = leading_headers(shown);
  if (grouped_by_input_shape) headers.push_back("Input Shapes");
  if (shown.flops) headers.push_back("Total " + flops_unit);
  for (auto& h : headers) std::transform(h.begin(), h.end(), h.begin(), [](unsigned char c) { return std::toupper(c); });
  std::string out = line(headers);
  for (const auto& r : rows) {
    std::vector<std::string> cells = leading_cells(r, quoted(r.key), shown, self_total_us, self_cuda_total_us);
    if (grouped_by_input_shape) cells.push_back(quoted(r.input_shapes));
    if (shown.flops) cells.push_back(r.flops <= 0 ? std::string("--") : format("%.3f", static_cast<double>(r.flops) * flops_factor));
    out += line(cells);
  }
  return out;
}

}  // namespace proftrace
