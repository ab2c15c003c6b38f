#include "job_report.hpp"

#include <stdexcept>

#include <proftrace_trace_io/rank_profile.hpp>

#include "trace_input.hpp"
#include "trace_reader.hpp"

namespace proftrace::tools {

std::optional<proftrace::rank_averages> read_job_report(const std::filesystem::path& path) {
  std::error_code ec;
  if (export_only_reason(path).empty() || !std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  try {
    return proftrace::detail::read_rank_profile(path);
  } catch (const std::runtime_error& e) {
    throw trace_error(e.what());
  }
}

}  // namespace proftrace::tools
