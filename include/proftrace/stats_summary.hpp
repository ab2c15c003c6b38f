// proftrace/stats_summary.hpp — summaries of repeated runs and the small
// conversions around them (torch_geometric.profile's get_stats_summary,
// byte_to_megabyte, format_prof_time, save_profile_data).
//
//   std::vector<proftrace::run_stats> runs;
//   for (int i = 0; i < 5; ++i) runs.push_back(proftrace::profileit("cuda", step).stats);
//   proftrace::stats_summary s = proftrace::get_stats_summary(runs);
//   std::cout << s.time_mean << " +- " << s.time_std << " s\n";
//   proftrace::save_profile_data("runs.csv", runs);       // one row per run
//
// A memory figure is summarised over the runs that have it and stays empty
// when none has it (a CPU-only machine has no GPU figures, not zeros).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>

#include "config.hpp"
#include "profileit.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {

struct stats_summary {
  std::size_t runs = 0;
  double time_mean = 0;  // seconds
  double time_std = 0;   // sample standard deviation (n - 1); 0 for a single run
  std::optional<double> cpu_time_mean;                  // over the runs that have it
  std::optional<std::int64_t> max_peak_resident_bytes;  // max over the runs
  std::optional<std::int64_t> max_allocated_gpu;
  std::optional<std::int64_t> max_reserved_gpu;
  std::optional<std::int64_t> max_active_gpu;
  std::optional<std::int64_t> min_nvidia_smi_free_cuda;
  std::optional<std::int64_t> max_nvidia_smi_used_cuda;
};

// Throws std::invalid_argument for an empty list.
stats_summary get_stats_summary(std::span<const run_stats> runs);

// bytes / 2^20, rounded to `digits` decimals.
double byte_to_megabyte(std::int64_t bytes, int digits = 2);
// A profiler time in microseconds as seconds, rounded to 3 decimals.
double format_prof_time(double microseconds);

// Writes the runs as CSV: a header line, then one row per run (time and
// CPU time in seconds, memory in MB with 2 decimals, an absent figure an
// empty cell). Throws std::runtime_error naming the path when it cannot be
// written.
void save_profile_data(const std::filesystem::path& path, std::span<const run_stats> runs);

}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
