#include "job_report.hpp"

#include <stdexcept>

#include <proftrace_trace_io/rank_profile.hpp>

#include "trace_reader.hpp"

namespace proftrace::tools {

std::optional<proftrace::rank_averages> read_job_report(const std::filesystem::path& path) {
  std::error_code ec;
  // Only a Caliper profile can be one (an OTF2 archive's anchor is refused as before).
  if (!path.filename().string().ends_with(".cali.json") || !std::filesystem::is_regular_file(path, ec))
    return std::nullopt;
  try {
    return proftrace::detail::read_rank_profile(path);
  } catch (const std::runtime_error& e) {
    throw trace_error(e.what());
  }
}

}  // namespace proftrace::tools
