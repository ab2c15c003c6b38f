// Internal: the bound on the names the C API interns, and the count of the
// names recorded over it. Both live here, below the C API that keeps the
// bound (lib/c_api/c_api.cpp) and the trace window that reports the count
// (lib/drain/trace_window.cpp), so neither reaches into the other.
//
// A name the C API records (a literal push's, an instant's, a counter's, an
// arg's key) becomes a site that ring records and per-thread caches point
// at, so it is never freed. To keep a program that makes a new name per
// call from growing without bound, a process interns at most
// max_interned_names distinct names and max_interned_name_bytes of their
// text; later new names are recorded as over_limit_name and counted.
//
//   if (table_full) { count_name_over_limit(); return over_limit_site; }  // the C API
//   const std::uint64_t at_open = names_over_limit();                     // a trace window
#pragma once

#include <cstddef>
#include <cstdint>

#include "proftrace/config.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

inline constexpr std::size_t max_interned_names = std::size_t{1} << 16;
inline constexpr std::size_t max_interned_name_bytes = std::size_t{16} << 20;
inline constexpr const char* over_limit_name = "[names over limit]";

// One more event or arg recorded as over_limit_name.
void count_name_over_limit() noexcept;

// The events and args recorded as over_limit_name since the process started.
std::uint64_t names_over_limit() noexcept;

}  // namespace proftrace::detail
