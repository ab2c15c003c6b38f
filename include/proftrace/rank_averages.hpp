// proftrace/rank_averages.hpp — one report for an MPI job: every rank's
// key_averages rows combined over MPI, per key the sums over the ranks, the
// min / mean / max of one rank's total time with the ranks of the min and
// the max, and the load imbalance.
//
//   // On every rank, at the same point (a collective: see reduce_rows_across_ranks):
//   const std::optional<proftrace::rank_averages> job = ...;  // the session's report
//   if (job && distributed_rank() == 0) {
//     std::cout << job->table({.sort_by = "cpu_time_total", .row_limit = 20});
//     std::ofstream("job.csv") << job->csv();
//     job->write_profile("job.cali.json");   // Thicket; `proftrace summary job.cali.json`
//   }
//   for (const proftrace::rank_average& row : job->rows)
//     if (row.imbalance_percent() > 20) warn(row.key, row.max_rank);
//
// Times are nanoseconds. A report with nothing behind it (no MPI, a rank
// other than 0, PROFTRACE_NO_RANK_REDUCTION, a build with
// PROFTRACE_ENABLED=0) has no rows and says why in `note`, which is then
// all its table prints.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"
#include "key_averages.hpp"

namespace proftrace {

// One rank's figures for one key, in the job profile (one row per node and rank).
struct rank_value {
  int rank = 0;
  std::int64_t calls = 0;
  std::int64_t total_ns = 0;  // inclusive
  std::int64_t self_ns = 0;
};

struct rank_average {
  std::string key;
  std::vector<std::string> stack;  // as event_average::stack: innermost first, "file(line): name"
  // Summed over the ranks.
  std::int64_t calls = 0;
  std::int64_t cpu_time_total_ns = 0;
  std::int64_t self_cpu_time_total_ns = 0;
  std::int64_t cuda_time_total_ns = 0;
  std::int64_t self_cuda_time_total_ns = 0;
  std::int64_t cpu_memory_usage = 0;
  std::int64_t self_cpu_memory_usage = 0;
  std::int64_t cuda_memory_usage = 0;
  std::int64_t self_cuda_memory_usage = 0;
  std::int64_t flops = 0;
  std::vector<counter_total> counters;
  // One rank's total (inclusive) time for the key, over ALL ranks of the
  // job: a rank without the key counts 0 (and can be min_rank). A tie goes
  // to the lowest rank.
  std::int64_t min_ns = 0;
  std::int64_t max_ns = 0;
  double mean_ns = 0;  // cpu_time_total_ns / ranks
  int min_rank = 0;
  int max_rank = 0;
  int ranks_with_calls = 0;
  int ranks = 0;  // the job's rank count, the mean's divisor
  std::vector<rank_value> per_rank;  // the ranks with calls, in rank order; empty when left out (rank_averages)

  // The slowest rank against the mean: 0 when balanced, 1 when the slowest
  // rank takes twice the mean (0 for a key with no time).
  double imbalance() const noexcept { return mean_ns > 0 ? static_cast<double>(max_ns) / mean_ns - 1.0 : 0.0; }
  // The imbalance percentage as CrayPat's pat_report gives it ("Imb.
  // Time%"): (max - mean) / max * P / (P - 1) * 100, i.e. one minus Cube's
  // load balance efficiency, mean / max (Scalasca's Cube guide, "Load
  // Balance Efficiency": apps.fz-juelich.de/scalasca/releases/cube/4.6/docs/
  // guide/html/AdvisorJSCTestsOmpLoad_balance.html), scaled by P / (P - 1)
  // so that 100 means one rank does all the work and the others none,
  // whatever P (pat_report's own page was not among the references
  // searched). 0 for one rank or a key with no time.
  double imbalance_percent() const noexcept {
    if (max_ns <= 0 || ranks < 2) return 0.0;
    const double max = static_cast<double>(max_ns), p = ranks;
    return (max - mean_ns) / max * p / (p - 1.0) * 100.0;
  }
};

// The CSV's columns before the counters' (each counter then adds
// "<name>_total" and "<name>_self") and the stack, last.
inline constexpr std::string_view rank_averages_csv_columns =
    "key,calls,cpu_time_total_ns,self_cpu_time_total_ns,min_ns,mean_ns,max_ns,min_rank,max_rank,imbalance,"
    "imbalance_percent,ranks_with_calls,ranks,cuda_time_total_ns,self_cuda_time_total_ns,cpu_memory_usage,"
    "self_cpu_memory_usage,cuda_memory_usage,self_cuda_memory_usage,flops";

#if !PROFTRACE_ENABLED
inline namespace compiled_out {
#endif

class rank_averages {
 public:
  std::vector<rank_average> rows;  // in the order of each key's first appearance, rank 0's first
  int ranks = 0;
  std::string note;  // why the report is empty; empty for a whole report
  // Empty when every row's per_rank is there; else why they were left out
  // (a job of more ranks than PROFTRACE_RANK_VALUES_MAX, default 1024, 0
  // never keeps them): the figures are whole, only the per-rank values and
  // the profile's per-rank rows are missing. table() prints it.
  std::string per_rank_note;

#if PROFTRACE_ENABLED
  // A fixed-width table: calls, total and self time summed, min / mean /
  // max with their ranks, the imbalance; CUDA time, memory, FLOPs and
  // counters where a row has them. sort_by: empty keeps the rows' order,
  // else one of torch's keys (cpu_time_total, self_cpu_time_total, count,
  // cpu_time, ...) or max_ns, imbalance, imbalance_percent, descending;
  // std::invalid_argument names the valid ones. row_limit, header and
  // max_name_column_width apply. The note, if any, is the last line.
  std::string table(const table_options& options = {}) const;
  // A header line (rank_averages_csv_columns, the counters', "stack"), then
  // one line per row; times in integer nanoseconds, the stack's frames
  // joined by ';'.
  std::string csv() const;
  // The job profile, Caliper's JSON-split layout (.cali.json): one row per
  // call-path node and rank, mpi.rank a value column; without per-rank
  // values (per_rank_note) one row per node, the figures summed, with the
  // min / max / mean columns. Thicket reads it and `proftrace summary`
  // prints table() from it. Throws std::runtime_error when the file cannot
  // be written.
  void write_profile(const std::filesystem::path& path) const;
#else
  std::string table(const table_options& = {}) const { return "Note: " + note + "\n"; }
  std::string csv() const { return std::string(rank_averages_csv_columns) + ",stack\n"; }
  void write_profile(const std::filesystem::path&) const {}
#endif
};

#if !PROFTRACE_ENABLED
}  // namespace compiled_out
#endif

}  // namespace proftrace
