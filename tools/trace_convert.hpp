// tools/trace_convert.hpp — `proftrace convert`: a trace into another format or compression
// (tools/trace_convert.cpp).
#pragma once

#include <filesystem>

#include "trace_reader.hpp"

namespace proftrace::tools {

struct conversion_report {
  std::string summary;  // one line: what was converted
  std::vector<std::string> warnings;
};
// IN .json[.gz|.zst] -> OUT .pftrace[.gz]; IN .pftrace[.gz] -> OUT
// .json[.gz|.zst]; the same format on both sides re-encodes (or copies).
// Throws trace_error for unknown suffixes and unreadable or invalid input.
// (tools/trace_convert.cpp)
conversion_report convert_trace(const std::filesystem::path& input, const std::filesystem::path& output);

}  // namespace proftrace::tools
