// Records: a scope's counter deltas travel as integer args keyed by a
// counter's site (lib/collect/counters/ defines the kinds); what a reader of
// records needs to tell them from other args and sum them per kind.
#pragma once

#include <cstddef>

#include "proftrace/config.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// How many kinds there are; kind indices run below it.
std::size_t counter_kind_count() noexcept;
// Which kind an arg key (a site's name pointer) is; -1 for any other arg.
int counter_kind_of_key(const char* key) noexcept;

}  // namespace proftrace::detail
