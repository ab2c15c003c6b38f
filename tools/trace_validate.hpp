// tools/trace_validate.hpp — `proftrace validate`: every layout problem of a
// trace, reported as it is found.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "trace_reader.hpp"

namespace proftrace::tools {

struct problem {
  std::int64_t index = -1;  // event index, -1 for the file as a whole
  std::string message;
};

// Reports every problem found through `on_problem`, as it is found (nothing
// is stored, so a huge broken trace costs no memory); returns their number.
// A read error (malformed JSON, truncation, corrupt compression) becomes the
// last problem, with index -1.
std::uint64_t validate(const std::filesystem::path& path, const std::function<void(const problem&)>& on_problem,
                       read_result* result = nullptr);

}  // namespace proftrace::tools
