// proftrace/profile_file_name.hpp — name a trace after the run's parameters
// (torch_geometric.profile.rename_profile_file).
//
//   p.export_chrome_trace("trace.pt.trace.json");
//   auto named = proftrace::rename_profile_file("trace.pt.trace.json", "GCN", 64, "cuda");
//   // named == "trace-GCN-64-cuda.pt.trace.json" (in the same directory)
//   p.export_chrome_trace(proftrace::profile_file_name("trace.json.gz", model, batch));
//
// Each parameter is written as by operator<< and joined with '-' after the
// file's stem, before its suffixes (everything from the first '.'); any
// ASCII character other than letters, digits and ._+=- becomes '_' (UTF-8
// text is kept).
#pragma once

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "config.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {

namespace detail {
std::filesystem::path profile_file_name_of(const std::filesystem::path& file, const std::vector<std::string>& params);
std::filesystem::path rename_profile_file_to(const std::filesystem::path& file, const std::vector<std::string>& params);

template <class... P>
std::vector<std::string> profile_file_params(const P&... params) {
  std::vector<std::string> out;
  (
      [&] {
        std::ostringstream s;
        s << params;
        out.push_back(s.str());
      }(),
      ...);
  return out;
}
}  // namespace detail

// The name `file` would have with the parameters (nothing is renamed).
template <class... P>
std::filesystem::path profile_file_name(const std::filesystem::path& file, const P&... params) {
  return detail::profile_file_name_of(file, detail::profile_file_params(params...));
}

// Renames `file` to profile_file_name(file, params...) and returns the new
// path; throws std::runtime_error naming both paths when it cannot.
template <class... P>
std::filesystem::path rename_profile_file(const std::filesystem::path& file, const P&... params) {
  return detail::rename_profile_file_to(file, detail::profile_file_params(params...));
}

}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
