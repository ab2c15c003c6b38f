// tools/job_report.hpp — a job's report across MPI ranks read back from the
// .cali.json that rank_averages::write_profile wrote (`proftrace summary
// job.cali.json` prints its table).
//
//   if (const auto job = read_job_report("job.cali.json")) std::cout << job->table(options);
#pragma once

#include <filesystem>
#include <optional>

#include <proftrace/rank_averages.hpp>

namespace proftrace::tools {

// Empty for a path that is no such report (not a file, not a .cali.json,
// or a trace converted to a Caliper profile). Throws trace_error, naming
// the file, for one that cannot be read or is an inconsistent report.
std::optional<proftrace::rank_averages> read_job_report(const std::filesystem::path& path);

}  // namespace proftrace::tools
