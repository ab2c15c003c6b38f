#include "proftrace/key_averages.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <span>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "reports/sort_keys.hpp"

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

using sort_key = detail::sort_key<event_average>;

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

// An event without shapes shows torch's "[]".
std::string shapes_text(const event_average& r) { return r.input_shapes.empty() ? std::string("[]") : r.input_shapes; }

void add_line(std::string& out, const std::string& s) { out += s + "\n"; }

// The rows the table lists, in its order: top-level only, sorted, limited.
std::vector<const event_average*> listed_rows(const std::vector<event_average>& rows, const table_options& options) {
  std::vector<const event_average*> order;
  order.reserve(rows.size());
  for (const auto& r : rows)
    if (!options.top_level_events_only || r.top_level) order.push_back(&r);
  if (!options.sort_by.empty()) {
    const sort_key* key = &detail::sort_key_named(std::span<const sort_key>(sort_keys), options.sort_by);
    std::stable_sort(order.begin(), order.end(), [&](auto* a, auto* b) { return key->value(*a) > key->value(*b); });
  }
  if (options.row_limit >= 0 && order.size() > static_cast<std::size_t>(options.row_limit))
    order.resize(static_cast<std::size_t>(options.row_limit));
  return order;
}

// The table's columns and what its rows share.
struct table_columns {
  event_averages::quantities shown;
  table_layout layout;
  std::vector<std::string> headers;
  int shapes_width = 0;
  int src_width = 0;
  bool has_input_shapes = false;
  bool has_stack = false;
  std::size_t src_column = 0;
  std::int64_t smallest_flops = 0;
  double flops_factor = 1;
  std::vector<std::string> counter_names;  // in the order first seen
  bool has_ipc = false;
  double self_total_us = 0;
  double self_cuda_total_us = 0;
};

// Counters (profile_options::counters): a total and a self column each,
// in the order first seen; instructions per cycle where both are counted.
void add_counter_columns(table_columns& cols, const std::vector<event_average>& rows) {
  for (const auto& r : rows)
    for (const auto& c : r.counters)
      if (std::find(cols.counter_names.begin(), cols.counter_names.end(), c.name) == cols.counter_names.end())
        cols.counter_names.push_back(c.name);
  const auto counted = [&](const char* n) {
    return std::find(cols.counter_names.begin(), cols.counter_names.end(), n) != cols.counter_names.end();
  };
  cols.has_ipc = counted("instructions") && counted("cycles");
  for (const auto& n : cols.counter_names) {
    for (const std::string& h : {n, "Self " + n}) {
      cols.headers.push_back(h);
      cols.layout.add(std::max(column_width, static_cast<int>(h.size())));
    }
  }
  if (cols.has_ipc) {
    cols.headers.push_back("IPC");
    cols.layout.add(column_width);
  }
}

// As torch's _build_table: the columns and their widths come from every
// row, also those the row limit or --top-level-only leave out.
table_columns plan_columns(const event_averages& averages, const table_options& options) {
  table_columns cols;
  std::size_t longest = 0, shapes_longest = 0, src_longest = 0;
  for (const auto& r : averages.rows) {
    longest = std::max(longest, columns(r.key));
    shapes_longest = std::max(shapes_longest, columns(shapes_text(r)));
    cols.has_input_shapes =
        cols.has_input_shapes || (averages.grouped_by_input_shape && !r.input_shapes.empty() && r.input_shapes != "[]");
    for (std::size_t i = 0; i < r.stack.size() && i < max_stack_entries; ++i) src_longest = std::max(src_longest, columns(r.stack[i]));
    cols.has_stack = cols.has_stack || !r.stack.empty();
  }
  const int name_width = std::min(static_cast<int>(longest) + 4, options.max_name_column_width);
  cols.shapes_width = std::min(static_cast<int>(shapes_longest) + 4, options.max_shapes_column_width);
  cols.src_width = std::min(static_cast<int>(src_longest) + 4, options.max_src_column_width);
  cols.shown = averages.shown_quantities();
  cols.smallest_flops = smallest_positive_flops(averages.rows);

  cols.headers = leading_headers(cols.shown);
  // torch right-aligns every column but the source location, Name and
  // Input Shapes included.
  cols.layout.add(name_width);
  for (std::size_t i = 1; i < cols.headers.size(); ++i) cols.layout.add(column_width);
  if (cols.has_input_shapes) {
    cols.headers.push_back("Input Shapes");
    cols.layout.add(cols.shapes_width);
  }
  cols.src_column = cols.headers.size();
  if (cols.has_stack) {
    cols.headers.push_back("Source Location");
    cols.layout.add(cols.src_width, true);
  }
  const auto [flops_factor, flops_unit] = flops_scale(cols.smallest_flops);
  cols.flops_factor = flops_factor;
  if (cols.smallest_flops > 0) {
    cols.headers.push_back("Total " + flops_unit);
    cols.layout.add(column_width);
  }
  add_counter_columns(cols, averages.rows);
  cols.self_total_us = static_cast<double>(averages.self_cpu_time_total_ns()) / 1e3;
  cols.self_cuda_total_us = static_cast<double>(averages.self_cuda_time_total_ns()) / 1e3;
  return cols;
}

void append_counter_cells(std::vector<std::string>& cells, const table_columns& cols, const event_average& r) {
  for (const auto& n : cols.counter_names) {
    const counter_total* c = r.counter(n);
    const bool is_time = n == "task-clock" || n == "cpu-clock";  // nanoseconds, as perf reports them
    for (const std::int64_t v : {c ? c->total : 0, c ? c->self : 0})
      cells.push_back(!c ? std::string("--") : is_time ? format_time(static_cast<double>(v) / 1e3) : std::to_string(v));
  }
  if (cols.has_ipc) {
    const counter_total* ins = r.counter("instructions");
    const counter_total* cyc = r.counter("cycles");
    cells.push_back(ins && cyc && cyc->total > 0 ? format("%.2f", static_cast<double>(ins->total) / static_cast<double>(cyc->total))
                                                 : std::string("--"));
  }
}

std::vector<std::string> row_cells(const table_columns& cols, const event_average& r, const table_options& options) {
  std::string name = r.key;
  const auto max_name = static_cast<std::size_t>(options.max_name_column_width);
  if (columns(name) >= max_name - 3) name = first_columns(name, max_name - 3) + "...";
  std::vector<std::string> cells = leading_cells(r, name, cols.shown, cols.self_total_us, cols.self_cuda_total_us);
  if (cols.has_input_shapes) cells.push_back(first_columns(shapes_text(r), static_cast<std::size_t>(cols.shapes_width)));
  if (cols.has_stack) cells.push_back(r.stack.empty() ? "" : trim_path(r.stack[0], static_cast<std::size_t>(cols.src_width)));
  if (cols.smallest_flops > 0)
    cells.push_back(r.flops <= 0 ? std::string("--") : format("%8.3f", static_cast<double>(r.flops) * cols.flops_factor));
  append_counter_cells(cells, cols, r);
  return cells;
}

// A row's line, and under a table with stacks its further frames' lines.
void append_row(std::string& out, const table_columns& cols, const event_average& r, const table_options& options) {
  const std::vector<std::string> cells = row_cells(cols, r, options);
  add_line(out, cols.layout.row(cells));
  // Further stack frames go on their own lines under the source column.
  for (std::size_t i = 1; cols.has_stack && i < r.stack.size() && i < max_stack_entries; ++i) {
    std::vector<std::string> more(cells.size());
    more[cols.src_column] = trim_path(r.stack[i], static_cast<std::size_t>(cols.src_width));
    add_line(out, cols.layout.row(more));
  }
  // torch closes each row of a table with stacks with an empty row.
  if (cols.has_stack) add_line(out, cols.layout.row(std::vector<std::string>(cells.size())));
}

// The totals, the losses and the note under the table.
void append_footer(std::string& out, const event_averages& averages, const table_columns& cols) {
  add_line(out, "Self CPU time total: " + format_time(cols.self_total_us));
  if (cols.shown.cuda_time) add_line(out, "Self CUDA time total: " + format_time(cols.self_cuda_total_us));
  const loss_counts& losses = averages.losses;
  if (losses.total() > 0) {
    add_line(out, "Lost events: " + std::to_string(losses.total()) + " (dropped " + std::to_string(losses.dropped) +
                      ", overwritten " + std::to_string(losses.overwritten) + ", unattached " +
                      std::to_string(losses.unattached) + ", late " + std::to_string(losses.late) + ", unpaired " +
                      std::to_string(losses.unpaired) + ")");
  }
  if (!averages.note.empty()) add_line(out, "Note: " + averages.note);
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
    if (!options.sort_by.empty()) (void)detail::sort_key_named(std::span<const sort_key>(sort_keys), options.sort_by);
    return "Note: " + note + "\n";
  }
  const std::vector<const event_average*> order = listed_rows(rows, options);
  const table_columns cols = plan_columns(*this, options);
  // torch's line_length: the columns and the spaces between them, not the
  // two after the last.
  const std::size_t line_length = cols.layout.separator.size() - spacing;
  std::string out;
  if (!options.header.empty()) {
    add_line(out, std::string(line_length, '='));
    add_line(out, options.header);
  }
  if (options.top_level_events_only) {
    add_line(out, std::string(line_length, '='));
    add_line(out, "This report only display top-level ops statistics");
  }
  add_line(out, cols.layout.separator);
  add_line(out, cols.layout.row(cols.headers));
  add_line(out, cols.layout.separator);
  for (const event_average* r : order) append_row(out, cols, *r, options);
  add_line(out, cols.layout.separator);
  append_footer(out, *this, cols);
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
