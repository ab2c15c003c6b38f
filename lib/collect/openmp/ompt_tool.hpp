// Internal: the OMPT tool's start at a session's edge (ompt_tool.cpp).
#pragma once

#include "proftrace/profile.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// Whether OpenMP regions are recorded in this process now: the runtime
// loaded proftrace as its OMPT tool. Warns once (when `named`, or when a
// runtime without OMPT is loaded) otherwise.
bool start_openmp(const profile_options& opts, bool named, bool in_forked_child);

}  // namespace proftrace::detail
