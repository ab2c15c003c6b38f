#include "memory_timeline.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string_view>

#include "formats/json_text.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

// The records of one device that a timeline shows, in time order (an
// allocation live when the trace began, t = -1, first).
std::vector<memory_record> timeline_records(const std::vector<memory_record>& records, int device) {
  std::vector<memory_record> out;
  for (const auto& r : records)
    if (r.device == device && r.action != memory_action::reserve) out.push_back(r);
  std::stable_sort(out.begin(), out.end(), [](const memory_record& a, const memory_record& b) { return a.t_ns < b.t_ns; });
  return out;
}

void append_int_list(std::string& out, const std::vector<std::int64_t>& v) {
  out += '[';
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    append_int(out, v[i]);
  }
  out += ']';
}

// torch's _CATEGORY_TO_COLORS, in timeline order.
constexpr std::string_view category_colors[memory_category_count] = {
    "darkgreen", "goldenrod", "black", "mediumpurple", "red", "mediumblue", "royalblue", "grey"};

struct byte_unit {
  const char* name;
  double scale;
};
byte_unit unit_for(double max_bytes) {
  if (max_bytes >= 1024.0 * 1024 * 1024) return {"GiB", 1024.0 * 1024 * 1024};
  if (max_bytes >= 1024.0 * 1024) return {"MiB", 1024.0 * 1024};
  if (max_bytes >= 1024.0) return {"KiB", 1024.0};
  return {"B", 1.0};
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string device_name(int device) { return device < 0 ? std::string("cpu") : "cuda:" + std::to_string(device); }

}  // namespace

std::vector<device_memory_stats> memory_stats_of(const std::vector<memory_record>& records) {
  struct acc {
    device_memory_stats stats;
    std::int64_t latest = -2;
    std::map<std::int64_t, memory_peaks> steps;
  };
  std::map<int, acc> by_device;
  for (const auto& r : records) {
    acc& a = by_device[r.device];
    const memory_peaks p{r.total_allocated, r.total_reserved};
    a.stats.trace.merge(p);
    a.steps[r.step].merge(p);
    if (r.t_ns >= a.latest) {
      a.latest = r.t_ns;
      a.stats.current_allocated = r.total_allocated;
      a.stats.current_reserved = r.total_reserved;
    }
  }
  std::vector<device_memory_stats> out;
  for (auto& [device, a] : by_device) {
    a.stats.device = device;
    a.stats.session = a.stats.trace;
    for (const auto& [step, peaks] : a.steps) a.stats.steps.push_back({step, peaks});
    out.push_back(std::move(a.stats));
  }
  return out;
}

memory_timeline coalesce(const std::vector<memory_record>& records, int device) {
  memory_timeline t;
  std::int64_t t_min = -1;
  for (const auto& r : timeline_records(records, device)) {
    const std::int64_t us = r.t_ns == -1 ? -1 : r.t_ns / 1000;
    if (t_min == -1 || (us < t_min && us > 0)) t_min = us;
    if (t.times_us.empty()) {
      t.times_us.push_back(us);
      t.sizes.emplace_back(memory_category_count + 1, 0);
    } else if (us != t.times_us.back()) {
      t.times_us.push_back(us);
      t.sizes.push_back(t.sizes.back());
    }
    t.sizes.back()[timeline_index(r.category) + 1] += r.bytes;
  }
  for (auto& us : t.times_us)
    if (us < 0) us = t_min;
  return t;
}

std::string timeline_json(const memory_timeline& t) {
  std::string out = "[";
  append_int_list(out, t.times_us);
  out += ", [";
  for (std::size_t i = 0; i < t.sizes.size(); ++i) {
    if (i) out += ", ";
    append_int_list(out, t.sizes[i]);
  }
  out += "]]";
  return out;
}

std::string raw_timeline_json(const std::vector<memory_record>& records, int device) {
  std::string out = "[";
  bool first = true;
  for (const auto& r : timeline_records(records, device)) {
    if (!first) out += ", ";
    first = false;
    append_int_list(out, {r.t_ns, static_cast<std::int64_t>(r.action), r.bytes,
                          static_cast<std::int64_t>(timeline_index(r.category))});
  }
  out += ']';
  return out;
}

namespace {

// A round step for an axis: 1, 2 or 5 times a power of ten, giving about
// `target` intervals over `range`.
double nice_step(double range, int target) {
  if (!(range > 0)) return 1.0;
  const double raw = range / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  return (norm <= 1.0 ? 1.0 : norm <= 2.0 ? 2.0 : norm <= 5.0 ? 5.0 : 10.0) * mag;
}

// A tick label: as few decimals as the step needs.
std::string tick_text(double v, double step) {
  const int decimals = step >= 1.0 ? 0 : std::min(9, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  return fixed(v, decimals);
}

// Runs of equal values [from, to) of f over columns 0..count.
template <class F>
std::vector<std::pair<std::size_t, std::size_t>> equal_runs(std::size_t count, const F& f) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t col = 0; col < count;) {
    std::size_t end = col + 1;
    while (end < count && f(end) == f(col)) ++end;
    out.emplace_back(col, end);
    col = end;
  }
  return out;
}

// One device's timeline as an SVG page: measured once (the categories
// present, the peak, the envelope, the axes' scales), then written.
struct timeline_plot {
  // The drawing's own coordinates: the page scales it to its width.
  static constexpr double width = 1200, height = 520, left = 90, right = 190, top = 70, bottom = 50;
  static constexpr double plot_w = width - left - right, plot_h = height - top - bottom;
  // One column per unit of plot width: a long timeline is drawn as its
  // envelope, the max of each stacked edge per column, so a peak is never lost
  // and the page stays small and readable at any length.
  static constexpr std::size_t columns = static_cast<std::size_t>(plot_w);

  const memory_timeline& t;
  const memory_peaks& peaks;
  std::size_t n;  // samples
  std::vector<bool> present = std::vector<bool>(memory_category_count, false);
  double max_total = 0;
  std::size_t peak_at = 0;
  std::int64_t t0 = 0;
  double span_ms = 0;
  // env[col][c] = the max over the column's time of the stacked edge c.
  std::vector<std::vector<double>> env;
  byte_unit unit{};
  double y_step = 0, y_max = 0;
  bool seconds = false;
  double time_scale = 1;  // ms per axis unit
  double x_step = 0;

  timeline_plot(const memory_timeline& timeline, const memory_peaks& device_peaks)
      : t(timeline), peaks(device_peaks), n(timeline.times_us.size()) {
    find_peak();
    t0 = n ? t.times_us.front() : 0;
    const double data_ms = n ? static_cast<double>(t.times_us.back() - t0) / 1000.0 : 0.0;
    // A little room after the last point, so that its value shows.
    span_ms = std::max(data_ms * 1.02, 1e-3);
    build_envelope();
    choose_scales();
  }

  double x_of_ms(double ms) const { return left + ms / span_ms * plot_w; }
  double y_of(double bytes) const { return top + plot_h - std::max(bytes, 0.0) / y_max * plot_h; }
  double col_x(std::size_t col) const {
    return left + plot_w * static_cast<double>(col) / static_cast<double>(columns);
  }

  // Sample i's sums of categories 0..c into stacked[c]; returns its total.
  double stack(std::size_t i, std::vector<double>& stacked) const {
    double sum = 0;
    for (std::size_t c = 0; c < memory_category_count; ++c) {
      sum += static_cast<double>(t.sizes[i][c + 1]);
      stacked[c] = sum;
    }
    return sum;
  }

  void find_peak() {
    std::vector<double> stacked(memory_category_count, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t c = 0; c < memory_category_count; ++c)
        if (t.sizes[i][c + 1] != 0) present[c] = true;
      const double sum = stack(i, stacked);
      if (sum > max_total) {
        max_total = sum;
        peak_at = i;
      }
    }
  }

  // A column's envelope counts the value held from before the column;
  // columns no sample reaches hold the previous value.
  void build_envelope() {
    env.assign(columns, std::vector<double>(memory_category_count, 0.0));
    std::size_t i = 0;
    std::vector<double> stacked(memory_category_count, 0.0);
    std::vector<double> held(memory_category_count, 0.0);
    bool have_held = false;
    for (std::size_t col = 0; col < columns; ++col) {
      const double col_end_ms = span_ms * static_cast<double>(col + 1) / static_cast<double>(columns);
      auto& e = env[col];
      if (have_held) e = held;
      for (; i < n && (static_cast<double>(t.times_us[i] - t0) / 1000.0 < col_end_ms || col + 1 == columns); ++i) {
        stack(i, stacked);
        for (std::size_t c = 0; c < memory_category_count; ++c) e[c] = std::max(e[c], stacked[c]);
        held = stacked;
        have_held = true;
      }
      if (!have_held) e.assign(memory_category_count, 0.0);
    }
  }

  // Round ticks: bytes in the unit of the peak, time in ms or s.
  void choose_scales() {
    unit = unit_for(std::max({max_total, static_cast<double>(peaks.max_reserved), 1.0}));
    y_step = nice_step(std::max(max_total, 1.0) / unit.scale * 1.05, 5);
    y_max = std::max(std::ceil(std::max(max_total, 1.0) / unit.scale * 1.05 / y_step), 1.0) * y_step * unit.scale;
    seconds = span_ms >= 2000;
    time_scale = seconds ? 1000.0 : 1.0;
    x_step = nice_step(span_ms / time_scale, 8);
  }

  std::string html(int device) const {
    std::string h = head(device);
    append_grid(h);
    append_axes(h);
    append_series(h);
    if (n > 0 && max_total > 0) append_peak_marker(h);
    h += "</svg>\n</body>\n</html>\n";
    return h;
  }

  // The page up to the opening of the drawing, with the peaks' line.
  std::string head(int device) const {
    const std::string title = "Memory timeline (" + device_name(device) + ")";
    std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
                    html_escape(title) +
                    "</title>\n<style>body{font-family:sans-serif;margin:16px}svg{display:block;width:100%;height:auto}"
                    "svg text{font-size:12px}"
                    ".axis{stroke:#333}.grid{stroke:#ddd}.peak{stroke:#c00;stroke-dasharray:6 4}</style>\n</head>\n<body>\n";
    h += "<h1>" + html_escape(title) + "</h1>\n";
    h += "<p id=\"peaks\">Max memory allocated: " + fixed(static_cast<double>(peaks.max_allocated) / unit.scale, 2) + " " +
         unit.name + " &middot; Max memory reserved: " + fixed(static_cast<double>(peaks.max_reserved) / unit.scale, 2) +
         " " + unit.name + "</p>\n";
    if (n == 0) h += "<p id=\"empty\">No memory events were recorded for " + device_name(device) + ".</p>\n";
    h += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100%\" viewBox=\"0 0 " + fixed(width, 0) + " " + fixed(height, 0) +
         "\" preserveAspectRatio=\"xMidYMid meet\" role=\"img\" data-columns=\"" + std::to_string(columns) + "\" data-samples=\"" +
         std::to_string(n) + "\">\n";
    return h;
  }

  // Grid lines and tick labels at round values.
  void append_grid(std::string& h) const {
    for (int k = 0;; ++k) {
      const double v = y_step * k;
      if (v * unit.scale > y_max * (1 + 1e-9)) break;
      const double y = y_of(v * unit.scale);
      h += "<line class=\"grid\" x1=\"" + fixed(left, 1) + "\" y1=\"" + fixed(y, 1) + "\" x2=\"" + fixed(left + plot_w, 1) +
           "\" y2=\"" + fixed(y, 1) + "\"/><text class=\"ytick\" x=\"" + fixed(left - 6, 1) + "\" y=\"" + fixed(y + 4, 1) +
           "\" text-anchor=\"end\">" + tick_text(v, y_step) + "</text>\n";
    }
    for (int k = 0;; ++k) {
      const double v = x_step * k;
      if (v * time_scale > span_ms * (1 + 1e-9)) break;
      const double x = x_of_ms(v * time_scale);
      h += "<line class=\"grid\" x1=\"" + fixed(x, 1) + "\" y1=\"" + fixed(top, 1) + "\" x2=\"" + fixed(x, 1) + "\" y2=\"" +
           fixed(top + plot_h, 1) + "\"/><text class=\"xtick\" x=\"" + fixed(x, 1) + "\" y=\"" + fixed(top + plot_h + 18, 1) +
           "\" text-anchor=\"middle\">" + tick_text(v, x_step) + "</text>\n";
    }
  }

  void append_axes(std::string& h) const {
    h += "<line class=\"axis\" x1=\"" + fixed(left, 1) + "\" y1=\"" + fixed(top + plot_h, 1) + "\" x2=\"" +
         fixed(left + plot_w, 1) + "\" y2=\"" + fixed(top + plot_h, 1) + "\"/>";
    h += "<line class=\"axis\" x1=\"" + fixed(left, 1) + "\" y1=\"" + fixed(top, 1) + "\" x2=\"" + fixed(left, 1) +
         "\" y2=\"" + fixed(top + plot_h, 1) + "\"/>\n";
    h += "<text x=\"" + fixed(left + plot_w / 2, 1) + "\" y=\"" + fixed(height - 10, 1) + "\" text-anchor=\"middle\">Time (" +
         (seconds ? "s" : "ms") + ")</text>";
    h += "<text transform=\"translate(20," + fixed(top + plot_h / 2, 1) + ") rotate(-90)\" text-anchor=\"middle\">Memory (" +
         unit.name + ")</text>\n";
  }

  // Category c's stacked area: its upper edge column by column left to
  // right (a run of equal columns as one segment), then its lower edge (the
  // category below's upper edge) back.
  std::string area_path(std::size_t c) const {
    std::string d;
    const auto upper = [&](std::size_t col) { return env[col][c]; };
    const auto lower = [&](std::size_t col) { return c == 0 ? 0.0 : env[col][c - 1]; };
    for (const auto& [from, to] : equal_runs(columns, upper)) {
      const std::string y = fixed(y_of(upper(from)), 2);
      d += (d.empty() ? "M" : " L") + fixed(col_x(from), 2) + " " + y + " L" + fixed(col_x(to), 2) + " " + y;
    }
    const auto back = equal_runs(columns, lower);
    for (auto it = back.rbegin(); it != back.rend(); ++it) {
      const std::string y = fixed(y_of(lower(it->first)), 2);
      d += " L" + fixed(col_x(it->second), 2) + " " + y + " L" + fixed(col_x(it->first), 2) + " " + y;
    }
    d += " Z";
    return d;
  }

  // One stacked area, and its legend row, per category that holds memory.
  void append_series(std::string& h) const {
    std::size_t legend_row = 0;
    for (std::size_t c = 0; c < memory_category_count; ++c) {
      if (!present[c]) continue;
      const std::string d = n > 0 ? area_path(c) : std::string();
      const std::string name(to_string(memory_categories_in_timeline_order[c]));
      h += "<path class=\"series\" data-category=\"" + name + "\" fill=\"" + std::string(category_colors[c]) +
           "\" fill-opacity=\"0.7\" stroke=\"none\" d=\"" + d + "\"><title>" + name + "</title></path>\n";
      const double ly = top + 10 + 20 * static_cast<double>(legend_row++);
      h += "<rect x=\"" + fixed(width - right + 20, 1) + "\" y=\"" + fixed(ly - 10, 1) + "\" width=\"14\" height=\"14\" fill=\"" +
           std::string(category_colors[c]) + "\" fill-opacity=\"0.7\"/><text x=\"" + fixed(width - right + 40, 1) +
           "\" y=\"" + fixed(ly + 2, 1) + "\">" + name + "</text>\n";
    }
  }

  void append_peak_marker(std::string& h) const {
    const double peak_ms = static_cast<double>(t.times_us[peak_at] - t0) / 1000.0;
    const double px = x_of_ms(peak_ms), py = y_of(max_total);
    h += "<g class=\"peak-marker\"><line class=\"peak\" x1=\"" + fixed(left, 1) + "\" y1=\"" + fixed(py, 2) + "\" x2=\"" +
         fixed(left + plot_w, 1) + "\" y2=\"" + fixed(py, 2) + "\"/><circle cx=\"" + fixed(px, 2) + "\" cy=\"" +
         fixed(py, 2) + "\" r=\"4\" fill=\"#c00\"/><text x=\"" + fixed(std::min(px + 8, left + plot_w - 150), 1) +
         "\" y=\"" + fixed(py - 8, 1) + "\" fill=\"#c00\">peak " + fixed(max_total / unit.scale, 2) + " " + unit.name +
         " at " + fixed(peak_ms, 3) + " ms</text></g>\n";
  }
};

}  // namespace

std::string timeline_html(const memory_timeline& t, int device, const memory_peaks& peaks) {
  return timeline_plot(t, peaks).html(device);
}

int parse_memory_device(std::string_view name) {
  if (name == "cpu") return -1;
  if (name == "cuda") return 0;
  if (name.starts_with("cuda:")) {
    int id = -1;
    const auto digits = name.substr(5);
    const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), id);
    if (r.ec == std::errc{} && r.ptr == digits.data() + digits.size() && id >= 0) return id;
  }
  throw std::invalid_argument("proftrace: unknown memory device '" + std::string(name) +
                              "' (expected \"cpu\", \"cuda\" or \"cuda:N\")");
}

}  // namespace proftrace::detail
