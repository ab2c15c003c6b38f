// tools/trace_diff.hpp — `proftrace diff` as a statistical test: per key, the
// distribution of per-call self times on side A against side B (Mann-Whitney
// U, Hodges-Lehmann shift), each side one or several traces pooled, and rank
// by rank for traces that carry ranks.
#pragma once

#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include "diff_statistics.hpp"
#include "sample_reservoir.hpp"
#include "trace_reader.hpp"

namespace proftrace::tools {

// ---- the plain diff: totals per key ----

struct diff_row {
  std::string key;
  std::int64_t count_a = 0, count_b = 0;
  std::int64_t self_a_ns = 0, self_b_ns = 0;
  std::int64_t total_a_ns = 0, total_b_ns = 0;
  bool in_a = false, in_b = false;
  std::int64_t self_change_ns() const noexcept { return self_b_ns - self_a_ns; }
  // Percent change of self time; +inf for a key new in B with self time.
  double self_change_pct() const noexcept;
};

// A row's key in a diff: its name, and its input shapes when grouped by them.
std::string diff_key(const proftrace::event_average& row);
// Rows sorted by |change of self time|, largest first (ties by key); a key's
// rows on one side (several traces pooled) are summed. The statistics and
// the table: tools/trace_diff.hpp.
std::vector<diff_row> diff(const proftrace::event_averages& a, const proftrace::event_averages& b);

// ---- the statistical diff ----

// One side of a diff: its traces pooled.
struct diff_side {
  proftrace::event_averages rows;  // every trace's rows in turn (diff() sums a key's)
  std::unordered_map<std::string, sample_reservoir> samples;  // per-call self times (ns), by diff_key
  std::size_t traces = 0;
};

// Reads `path` once into each of `into` (the pooled side, and its rank's).
void add_trace(const std::filesystem::path& path, bool group_by_shape, const std::vector<diff_side*>& into,
               std::vector<std::string>& warnings, bool progress = false);

enum class diff_verdict { untested, same, slower, faster, added, removed };
const char* to_string(diff_verdict v) noexcept;

struct stat_row : diff_row {
  double median_a_ns = 0, median_b_ns = 0;  // per-call self time
  stats::shift_estimate shift;              // of per-call self time, B - A, ns
  double p = 1;                             // Mann-Whitney's two-sided p
  double p_corrected = 1;                   // p times the comparisons made (Bonferroni), at most 1
  bool tested = false;                      // both sides have calls
  diff_verdict verdict = diff_verdict::untested;
  bool regression = false;
  // Percent change of the median per-call self time; +inf from a zero median.
  double median_change_pct() const noexcept;
};

struct diff_criteria {
  double alpha = 0.01;       // after the Bonferroni correction
  // The smallest growth of the median per-call self time that counts, in
  // percent; the low end of the shift's interval must exceed it too.
  double threshold_pct = 0;
  double min_us = 10;        // the smallest growth of the key's total self time that counts
  bool gate = true;          // false: verdicts only, no key is a regression (diff without --threshold)
};

// Per key, in diff()'s order, with the test's uncorrected p.
std::vector<stat_row> compare(const diff_side& a, const diff_side& b);
std::size_t tested_keys(const std::vector<stat_row>& rows);
// Corrects p for `comparisons` tests in all and sets each row's verdict.
void judge(std::vector<stat_row>& rows, std::size_t comparisons, const diff_criteria& criteria);

struct diff_section {
  std::string label;  // "rank 3", "all ranks", or empty (no ranks)
  std::vector<stat_row> rows;
};
// Side A's traces against side B's: rank by rank (ranks that both sides
// have) when the traces carry two ranks or more, then every trace pooled;
// the correction counts the comparisons of every section.
std::vector<diff_section> diff_traces(const std::vector<std::filesystem::path>& a,
                                      const std::vector<std::filesystem::path>& b, bool group_by_shape,
                                      const diff_criteria& criteria, std::vector<std::string>& warnings);

std::string stat_diff_table(const std::vector<stat_row>& rows, int row_limit = -1);

}  // namespace proftrace::tools
