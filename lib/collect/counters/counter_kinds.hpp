// Internal: the counters a session may name (perf list's spellings), what
// perf_event_open calls each, and the arg key each scope's delta is written
// under (its site's name is the counter's name).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "proftrace/config.hpp"
#include "proftrace/detail/site.hpp"
#include "records/counter_keys.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

struct counter_kind {
  const char* name;   // perf list's name, the arg key and the table column
  const char* alias;  // another spelling perf accepts (nullptr: none)
  std::uint32_t type;  // perf_event_attr::type
  std::uint64_t config;
};

// Every kind, in a fixed order (indices are stable within a process).
std::span<const counter_kind> counter_kinds() noexcept;
// The index of the kind named `name` (or its alias); -1 if none.
int counter_kind_index(std::string_view name) noexcept;
// The site whose name keys a kind's delta in a scope's args.
const site* counter_key_site(std::size_t kind) noexcept;

// A session counts at most this many at once.
inline constexpr std::size_t max_session_counters = 8;

}  // namespace proftrace::detail
