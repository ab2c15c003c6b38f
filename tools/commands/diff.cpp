// proftrace diff: see its help text below and tools/README.md.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "command.hpp"
#include "trace_diff.hpp"

namespace proftrace::tools::cli {

namespace {

const char* const diff_help =
    "usage: proftrace diff A B [--threshold PCT] [--min-us US] [--alpha P] [--group-by-shape] [--row-limit N]\n"
    "       proftrace diff A1 A2 ... -- B1 B2 ... [options]\n"
    "       proftrace diff DIR_A DIR_B [options]\n"
    "\n"
    "Per key (name, or name and input shapes): the distribution of per-call self\n"
    "CPU times in A against B. Each side may be several traces (pooled) or a\n"
    "directory of traces; traces that carry two or more ranks (distributedInfo)\n"
    "are also compared rank by rank. A table per comparison: calls A/B, median\n"
    "per-call self time A/B and its change, the Hodges-Lehmann shift B-A per call\n"
    "with its 95% interval, the change of total self time, the Mann-Whitney U\n"
    "test's two-sided p (Bonferroni-corrected over every key compared) and a\n"
    "verdict: same, slower, faster (p < alpha), new, gone, REGRESSION.\n"
    "Each side keeps at most 20000 calls per key (a deterministic uniform sample).\n"
    "\n"
    "options:\n"
    "  --threshold PCT     exit 3 when some key is a regression: significant\n"
    "                      (corrected p < --alpha), its median per-call self time\n"
    "                      grew by more than PCT percent, and so did the low end of\n"
    "                      the shift's interval, and its total self time grew by\n"
    "                      more than --min-us; a key new in B counts when its\n"
    "                      self time exceeds --min-us. Without it: a report, exit 0\n"
    "  --min-us US         the smallest growth of a key's total self time that counts\n"
    "                      (default 10; 0: no floor)\n"
    "  --alpha P           significance level after the correction (default 0.01)\n"
    "  --group-by-shape    keys include \"Input Dims\"\n"
    "  --row-limit N       at most N rows per table (default -1: all)\n"
    "  -h, --help          this text\n"
    "exit codes: 0 ok, 1 unreadable or invalid trace, 2 usage error (a missing\n"
    "            path, an empty side), 3 significant regression\n";

// diff's default noise floor, in microseconds of a key's total self time.
constexpr double default_min_us = 10.0;

// A side's traces: files as given, a directory's traces (see list_traces).
// A missing path, or a directory without a trace, is a usage error.
std::vector<std::filesystem::path> side_traces(const std::vector<std::string>& paths, const std::string& side) {
  std::vector<std::filesystem::path> out;
  for (const auto& p : paths) {
    std::error_code ec;
    if (!std::filesystem::exists(p, ec))
      throw usage_error{"side " + side + ": '" + p + "' " + (ec ? "cannot be read: " + ec.message() : "does not exist")};
    if (!is_directory(p)) {
      out.emplace_back(p);
      continue;
    }
    std::vector<pt::skipped_file> skipped;
    const auto files = pt::list_traces(p, skipped);
    print_skipped(skipped);
    if (files.empty()) throw usage_error{"side " + side + ": no trace in the directory '" + p + "'"};
    out.insert(out.end(), files.begin(), files.end());
  }
  return out;
}

// The paths of side A and side B: "A B", or "A1 A2 ... -- B1 B2 ...".
std::pair<std::vector<std::string>, std::vector<std::string>> diff_sides(const parsed_args& a) {
  const auto& p = a.positional;
  if (!a.separator) {
    if (p.size() != 2) throw usage_error{"diff takes A B, or A1 A2 ... -- B1 B2 ... (traces or directories)"};
    return {{p[0]}, {p[1]}};
  }
  const auto cut = p.begin() + static_cast<std::ptrdiff_t>(*a.separator);
  if (cut == p.begin()) throw usage_error{"nothing before '--': side A has no trace"};
  if (cut == p.end()) throw usage_error{"nothing after '--': side B has no trace"};
  return {{p.begin(), cut}, {cut, p.end()}};
}

pt::diff_criteria diff_criteria_of(const parsed_args& a) {
  pt::diff_criteria c;
  c.gate = a.threshold.has_value();
  if (a.threshold) c.threshold_pct = parse_pct("--threshold", *a.threshold);
  // The noise floor: 10 us of total self time (see tools/README.md).
  c.min_us = a.min_us ? parse_pct("--min-us", *a.min_us) : default_min_us;
  if (a.alpha) {
    c.alpha = parse_pct("--alpha", *a.alpha);
    if (!(c.alpha > 0 && c.alpha < 1)) throw usage_error{"option '--alpha' needs a number in (0, 1), not '" + *a.alpha + "'"};
  }
  return c;
}

std::string regression_text(const pt::stat_row& r) {
  char buf[512];
  const auto t = [](double ns) { return pt::format_time_signed(ns / 1e3); };
  if (!r.in_a) {
    std::snprintf(buf, sizeof buf, "new in B, total self time %s", t(static_cast<double>(r.self_b_ns)).c_str());
    return buf;
  }
  std::snprintf(buf, sizeof buf, "median per-call self time %+.2f%% (%s -> %s), shift %s [%s, %s] per call, total %s, p = %.2g",
                r.median_change_pct(), t(r.median_a_ns).c_str(), t(r.median_b_ns).c_str(), t(r.shift.estimate).c_str(),
                t(r.shift.low).c_str(), t(r.shift.high).c_str(), t(static_cast<double>(r.self_change_ns())).c_str(),
                r.p_corrected);
  return buf;
}

int report_regressions(const std::vector<pt::diff_section>& sections, const pt::diff_criteria& c) {
  std::size_t n = 0;
  for (const auto& s : sections)
    for (const auto& r : s.rows)
      if (r.regression) {
        ++n;
        std::cout << "regression: " << r.key << (s.label.empty() ? "" : " (" + s.label + ")") << ": "
                  << regression_text(r) << "\n";
      }
  char floor[160];
  std::snprintf(floor, sizeof floor, "%g%% of the median per call and %g us in all, at p < %g", c.threshold_pct,
                c.min_us, c.alpha);
  if (n == 0) {
    std::cout << "no key's self time grew significantly by more than " << floor << "\n";
    return exit_ok;
  }
  std::cerr << "proftrace: " << n << (n == 1 ? " key" : " keys") << (sections.size() > 1 ? " (by rank and across ranks)" : "")
            << " grew significantly by more than " << floor << "\n";
  return exit_regression;
}

int cmd_diff(const std::vector<std::string>& args) {
  const auto a = parse(args, {"--threshold", "--min-us", "--alpha", "--group-by-shape", "--row-limit"}, true);
  if (a.help) {
    std::cout << diff_help;
    return exit_ok;
  }
  const auto [side_a, side_b] = diff_sides(a);
  const auto criteria = diff_criteria_of(a);
  const int row_limit = a.row_limit ? parse_int("--row-limit", *a.row_limit) : -1;
  const auto files_a = side_traces(side_a, "A"), files_b = side_traces(side_b, "B");
  std::vector<std::string> warnings;
  const auto sections = pt::diff_traces(files_a, files_b, a.group_by_shape, criteria, warnings);
  print_warnings(warnings);
  const auto names = [](const std::vector<std::filesystem::path>& files) {
    std::string s;
    for (const auto& f : files) s += (s.empty() ? "" : ", ") + f.string();
    return s;
  };
  std::cout << "A: " << names(files_a) << "\nB: " << names(files_b) << "\n";
  for (const auto& s : sections) {
    if (!s.label.empty()) std::cout << "\n" << s.label << ":\n";
    std::cout << pt::stat_diff_table(s.rows, row_limit);
  }
  if (!criteria.gate) return exit_ok;
  return report_regressions(sections, criteria);
}

}  // namespace

const command diff_command{"diff", "  diff A B         per-key test of per-call self times, A vs B (a CI gate)\n", diff_help, cmd_diff};

}  // namespace proftrace::tools::cli
