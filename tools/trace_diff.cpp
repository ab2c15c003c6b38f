// The statistical diff of two sets of traces (see trace_diff.hpp).
#include "trace_diff.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include <proftrace_trace_io/torch_rules.hpp>
#include "trace_layout.hpp"
#include "trace_summary.hpp"

namespace proftrace::tools {

double diff_row::self_change_pct() const noexcept {
  if (self_a_ns == 0) return self_b_ns > 0 ? std::numeric_limits<double>::infinity() : 0.0;
  return static_cast<double>(self_b_ns - self_a_ns) * 100.0 / static_cast<double>(self_a_ns);
}

std::string diff_key(const proftrace::event_average& r) {
  return r.input_shapes.empty() ? r.key : r.key + " " + r.input_shapes;
}

std::vector<diff_row> diff(const proftrace::event_averages& a, const proftrace::event_averages& b) {
  std::vector<diff_row> rows;
  std::unordered_map<std::string, std::size_t> index;
  const auto key_of = diff_key;
  const auto row = [&](const proftrace::event_average& r) -> diff_row& {
    auto [it, fresh] = index.try_emplace(key_of(r), rows.size());
    if (fresh) rows.push_back(diff_row{.key = key_of(r)});
    return rows[it->second];
  };
  // One side's rows into its columns of the diff.
  using count_field = std::int64_t diff_row::*;
  const auto add_side = [&](const proftrace::event_averages& side, bool diff_row::*in, count_field count, count_field self,
                            count_field total) {
    for (const auto& r : side.rows) {
      auto& d = row(r);
      d.*in = true;
      proftrace::detail::add_saturating(d.*count, r.count);
      proftrace::detail::add_saturating(d.*self, r.self_cpu_time_total_ns);
      proftrace::detail::add_saturating(d.*total, r.cpu_time_total_ns);
    }
  };
  add_side(a, &diff_row::in_a, &diff_row::count_a, &diff_row::self_a_ns, &diff_row::total_a_ns);
  add_side(b, &diff_row::in_b, &diff_row::count_b, &diff_row::self_b_ns, &diff_row::total_b_ns);
  std::stable_sort(rows.begin(), rows.end(), [](const diff_row& x, const diff_row& y) {
    const auto ax = std::llabs(x.self_change_ns()), ay = std::llabs(y.self_change_ns());
    if (ax != ay) return ax > ay;
    return x.key < y.key;
  });
  return rows;
}

void add_trace(const std::filesystem::path& path, bool group_by_shape, const std::vector<diff_side*>& into,
               std::vector<std::string>& warnings, bool progress) {
  // Reservoirs by row, looked up once per key rather than once per call.
  std::vector<std::vector<sample_reservoir*>> by_row;
  const auto sink = [&](const proftrace::event_average& row, std::size_t index, std::int64_t self_ns) {
    if (index >= by_row.size()) by_row.resize(index + 1);
    if (by_row[index].empty())
      for (diff_side* side : into) by_row[index].push_back(&side->samples[diff_key(row)]);
    for (sample_reservoir* r : by_row[index]) r->add(static_cast<double>(self_ns));
  };
  const auto rows = summarize(path, group_by_shape, warnings, progress, nullptr, sink);
  for (diff_side* side : into) {
    side->rows.rows.insert(side->rows.rows.end(), rows.rows.begin(), rows.rows.end());
    ++side->traces;
  }
}

const char* to_string(diff_verdict v) noexcept {
  switch (v) {
    case diff_verdict::same: return "same";
    case diff_verdict::slower: return "slower";
    case diff_verdict::faster: return "faster";
    case diff_verdict::added: return "new";
    case diff_verdict::removed: return "gone";
    case diff_verdict::untested: break;
  }
  return "-";
}

double stat_row::median_change_pct() const noexcept {
  if (median_a_ns == 0) return median_b_ns > 0 ? std::numeric_limits<double>::infinity() : 0.0;
  return (median_b_ns - median_a_ns) * 100.0 / median_a_ns;
}

std::vector<stat_row> compare(const diff_side& a, const diff_side& b) {
  std::vector<stat_row> out;
  static const sample_reservoir none;
  const auto samples_of = [](const diff_side& side, const std::string& key) -> const std::vector<double>& {
    const auto it = side.samples.find(key);
    return it == side.samples.end() ? none.values() : it->second.values();
  };
  for (const diff_row& d : diff(a.rows, b.rows)) {
    stat_row r;
    static_cast<diff_row&>(r) = d;
    const auto& x = samples_of(a, d.key);
    const auto& y = samples_of(b, d.key);
    r.tested = !x.empty() && !y.empty();
    if (r.tested) {
      r.median_a_ns = stats::median(x);
      r.median_b_ns = stats::median(y);
      r.p = stats::mann_whitney(x, y).p;
      r.shift = stats::hodges_lehmann(x, y);
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::size_t tested_keys(const std::vector<stat_row>& rows) {
  return static_cast<std::size_t>(std::count_if(rows.begin(), rows.end(), [](const stat_row& r) { return r.tested; }));
}

void judge(std::vector<stat_row>& rows, std::size_t comparisons, const diff_criteria& c) {
  const double floor_ns = c.min_us * 1e3;
  for (stat_row& r : rows) {
    r.regression = false;
    if (!r.in_a || !r.in_b) {
      // A key on one side only counts as before: new with self time above
      // the floor is growth without bound.
      r.verdict = r.in_a ? diff_verdict::removed : diff_verdict::added;
      r.regression = c.gate && !r.in_a && static_cast<double>(r.self_b_ns) > floor_ns;
      continue;
    }
    if (!r.tested) {
      r.verdict = diff_verdict::untested;
      continue;
    }
    r.p_corrected = std::min(1.0, r.p * static_cast<double>(std::max<std::size_t>(comparisons, 1)));
    if (r.p_corrected >= c.alpha) {
      r.verdict = diff_verdict::same;
      continue;
    }
    r.verdict = r.median_b_ns > r.median_a_ns || (r.median_b_ns == r.median_a_ns && r.shift.estimate > 0)
                    ? diff_verdict::slower
                    : diff_verdict::faster;
    // The growth must pass the threshold at the low end of the shift's
    // interval too: on a noisy machine a significant +6% median with an
    // interval reaching down to +2% is no evidence of a +5% change.
    const double low_pct = r.median_a_ns > 0 ? r.shift.low * 100.0 / r.median_a_ns
                                             : (r.shift.low > 0 ? std::numeric_limits<double>::infinity() : 0.0);
    r.regression = c.gate && r.verdict == diff_verdict::slower && r.median_change_pct() > c.threshold_pct &&
                   low_pct > c.threshold_pct && static_cast<double>(r.self_change_ns()) > floor_ns;
  }
}

namespace {

// distributedInfo.rank from the metadata before the events; -1 without one
// (and for a .pftrace, whose metadata the probe does not read).
int rank_of(const std::filesystem::path& path) {
  for (const auto& m : probe_trace(path).metadata)
    if (m.key == "distributedInfo.rank")
      if (const auto rank = integer_value(m, 0, INT_MAX)) return static_cast<int>(*rank);
  return -1;
}

struct loaded_side {
  diff_side pooled;
  std::map<int, diff_side> ranks;
};

loaded_side load(const std::vector<std::filesystem::path>& files, bool by_shape, std::vector<std::string>& warnings) {
  loaded_side out;
  for (const auto& f : files) {
    const int rank = rank_of(f);
    std::vector<diff_side*> into{&out.pooled};
    if (rank >= 0) into.push_back(&out.ranks[rank]);
    add_trace(f, by_shape, into, warnings);
  }
  return out;
}

}  // namespace

std::vector<diff_section> diff_traces(const std::vector<std::filesystem::path>& a,
                                      const std::vector<std::filesystem::path>& b, bool group_by_shape,
                                      const diff_criteria& criteria, std::vector<std::string>& warnings) {
  const loaded_side A = load(a, group_by_shape, warnings), B = load(b, group_by_shape, warnings);
  std::set<int> ranks;
  for (const auto* side : {&A, &B})
    for (const auto& [rank, s] : side->ranks) ranks.insert(rank);
  std::vector<diff_section> out;
  if (ranks.size() >= 2) {
    for (int rank : ranks) {
      const auto x = A.ranks.find(rank), y = B.ranks.find(rank);
      if (x == A.ranks.end() || y == B.ranks.end()) {
        warnings.push_back("rank " + std::to_string(rank) + " has traces in " + (x == A.ranks.end() ? "B" : "A") +
                           " only: compared in the view across ranks alone");
        continue;
      }
      out.push_back({"rank " + std::to_string(rank), compare(x->second, y->second)});
    }
  }
  out.push_back({ranks.size() >= 2 ? "all ranks" : "", compare(A.pooled, B.pooled)});
  std::size_t comparisons = 0;
  for (const auto& s : out) comparisons += tested_keys(s.rows);
  for (auto& s : out) judge(s.rows, comparisons, criteria);
  return out;
}

namespace {

std::string signed_time(double ns) { return (ns > 0 ? "+" : "") + format_time_signed(ns / 1e3); }

std::string p_text(const stat_row& r) {
  if (!r.tested) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, r.p_corrected < 1e-4 ? "%.1e" : "%.4f", r.p_corrected);
  return buf;
}

std::vector<std::string> cells_of(const stat_row& r) {
  char pct[48];
  if (!r.tested) std::snprintf(pct, sizeof pct, "-");
  else if (std::isinf(r.median_change_pct())) std::snprintf(pct, sizeof pct, "from 0");
  else std::snprintf(pct, sizeof pct, "%+.2f%%", r.median_change_pct());
  const std::string shift = r.tested ? signed_time(r.shift.estimate) + " [" + signed_time(r.shift.low) + ", " +
                                           signed_time(r.shift.high) + "]"
                                     : "-";
  std::string name = r.key.size() > 55 ? r.key.substr(0, 52) + "..." : r.key;
  return {name,
          std::to_string(r.count_a),
          std::to_string(r.count_b),
          r.tested ? format_time_signed(r.median_a_ns / 1e3) : "-",
          r.tested ? format_time_signed(r.median_b_ns / 1e3) : "-",
          pct,
          shift,
          signed_time(static_cast<double>(r.self_change_ns())),
          p_text(r),
          r.regression ? "REGRESSION" : to_string(r.verdict)};
}

// Width in characters (Δ is two bytes in UTF-8).
std::size_t width_of(const std::string& s) {
  std::size_t chars = 0;
  for (unsigned char c : s) chars += (c & 0xC0) != 0x80;
  return chars;
}

}  // namespace

std::string stat_diff_table(const std::vector<stat_row>& rows, int row_limit) {
  std::vector<std::vector<std::string>> table{{"Name", "Calls A", "Calls B", "Median A", "Median B", "Median Δ%",
                                               "Shift B-A per call [95% CI]", "Self total Δ", "p (Bonf.)", "Verdict"}};
  for (std::size_t i = 0; i < rows.size() && (row_limit < 0 || i < static_cast<std::size_t>(row_limit)); ++i)
    table.push_back(cells_of(rows[i]));
  std::vector<std::size_t> widths(table[0].size(), 0);
  for (const auto& line : table)
    for (std::size_t c = 0; c < line.size(); ++c) widths[c] = std::max(widths[c], width_of(line[c]));
  std::string sep;
  for (auto w : widths) sep += std::string(w, '-') + "  ";
  std::string out = sep + "\n";
  for (std::size_t l = 0; l < table.size(); ++l) {
    for (std::size_t c = 0; c < table[l].size(); ++c) {
      const std::string pad(widths[c] - width_of(table[l][c]), ' ');
      out += (c == 0 ? table[l][c] + pad : pad + table[l][c]) + "  ";
    }
    out += "\n";
    if (l == 0) out += sep + "\n";
  }
  return out + sep + "\n";
}

}  // namespace proftrace::tools
