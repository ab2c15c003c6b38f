#include "proftrace/stats_summary.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <system_error>

#include "proftrace/profile_file_name.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {

namespace {

// fold(acc, value) over the runs that have the figure; empty if none has it.
template <class Field, class Fold>
std::optional<std::int64_t> fold_present(std::span<const run_stats> runs, Field field, Fold fold) {
  std::optional<std::int64_t> out;
  for (const run_stats& r : runs)
    if (const auto& v = std::invoke(field, r)) out = out ? fold(*out, *v) : *v;
  return out;
}

std::int64_t max_of(std::int64_t a, std::int64_t b) { return std::max(a, b); }
std::int64_t min_of(std::int64_t a, std::int64_t b) { return std::min(a, b); }

std::string csv_number(std::optional<double> v, const char* format) {
  if (!v) return {};
  char text[64];
  std::snprintf(text, sizeof text, format, *v);
  return text;
}

std::string csv_megabytes(std::optional<std::int64_t> bytes) {
  if (!bytes) return {};
  return csv_number(byte_to_megabyte(*bytes), "%.2f");
}

std::string csv_text(std::string_view s) {
  if (s.find_first_of(",\"\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

// ASCII other than letters, digits and ._+=- becomes '_' (a '/' would make
// a directory); bytes past ASCII (UTF-8: "é", "模型") stay as they are.
std::string sanitized(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && !std::isalnum(u) && c != '.' && c != '_' && c != '+' && c != '=' && c != '-') c = '_';
  }
  return out;
}

}  // namespace

stats_summary get_stats_summary(std::span<const run_stats> runs) {
  if (runs.empty()) throw std::invalid_argument("proftrace: get_stats_summary(): the list of runs is empty");
  stats_summary s;
  s.runs = runs.size();
  double sum = 0;
  for (const run_stats& r : runs) sum += r.time;
  s.time_mean = sum / static_cast<double>(runs.size());
  if (runs.size() > 1) {
    double squares = 0;
    for (const run_stats& r : runs) squares += (r.time - s.time_mean) * (r.time - s.time_mean);
    s.time_std = std::sqrt(squares / static_cast<double>(runs.size() - 1));
  }
  double cpu_sum = 0;
  std::size_t cpu_runs = 0;
  for (const run_stats& r : runs)
    if (r.cpu_time) {
      cpu_sum += *r.cpu_time;
      ++cpu_runs;
    }
  if (cpu_runs) s.cpu_time_mean = cpu_sum / static_cast<double>(cpu_runs);
  s.max_peak_resident_bytes = fold_present(runs, &run_stats::peak_resident_bytes, max_of);
  s.max_allocated_gpu = fold_present(runs, &run_stats::max_allocated_gpu, max_of);
  s.max_reserved_gpu = fold_present(runs, &run_stats::max_reserved_gpu, max_of);
  s.max_active_gpu = fold_present(runs, &run_stats::max_active_gpu, max_of);
  s.min_nvidia_smi_free_cuda = fold_present(runs, &run_stats::nvidia_smi_free_cuda, min_of);
  s.max_nvidia_smi_used_cuda = fold_present(runs, &run_stats::nvidia_smi_used_cuda, max_of);
  return s;
}

double byte_to_megabyte(std::int64_t bytes, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(static_cast<double>(bytes) / (1024.0 * 1024.0) * scale) / scale;
}

double format_prof_time(double microseconds) { return std::round(microseconds / 1e6 * 1e3) / 1e3; }

void save_profile_data(const std::filesystem::path& path, std::span<const run_stats> runs) {
  std::string text =
      "device,time_s,cpu_time_s,peak_resident_mb,max_allocated_gpu_mb,max_reserved_gpu_mb,max_active_gpu_mb,"
      "nvidia_smi_free_cuda_mb,nvidia_smi_used_cuda_mb,gpu_absent_reason\n";
  for (const run_stats& r : runs) {
    text += csv_text(r.device) + ',' + csv_number(r.time, "%.9f") + ',' + csv_number(r.cpu_time, "%.9f") + ',' +
            csv_megabytes(r.peak_resident_bytes) + ',' + csv_megabytes(r.max_allocated_gpu) + ',' +
            csv_megabytes(r.max_reserved_gpu) + ',' + csv_megabytes(r.max_active_gpu) + ',' +
            csv_megabytes(r.nvidia_smi_free_cuda) + ',' + csv_megabytes(r.nvidia_smi_used_cuda) + ',' +
            csv_text(r.gpu_absent_reason) + '\n';
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("proftrace: cannot write profile data '" + path.string() + "': " + std::strerror(errno));
  out << text;
  out.flush();
  if (!out) throw std::runtime_error("proftrace: cannot write profile data '" + path.string() + "'");
}

namespace detail {

std::filesystem::path profile_file_name_of(const std::filesystem::path& file, const std::vector<std::string>& params) {
  const std::string name = file.filename().string();
  const auto dot = name.find('.', 1);  // a leading dot belongs to the stem
  std::string renamed = name.substr(0, dot);
  for (const std::string& p : params) renamed += '-' + sanitized(p);
  if (dot != std::string::npos) renamed += name.substr(dot);
  return file.parent_path() / renamed;
}

std::filesystem::path rename_profile_file_to(const std::filesystem::path& file, const std::vector<std::string>& params) {
  const std::filesystem::path target = profile_file_name_of(file, params);
  std::error_code ec;
  std::filesystem::rename(file, target, ec);
  if (ec)
    throw std::runtime_error("proftrace: cannot rename '" + file.string() + "' to '" + target.string() + "': " + ec.message());
  return target;
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
