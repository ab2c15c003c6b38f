// Internal to lib/session/: which ranks write traces (profile_options::
// trace_ranks, PROFTRACE_TRACE_RANKS): "0,7,100-131".
//
//   const auto list = parse_rank_list("0,7,100-131");  // nullopt: malformed
//   list->contains(120);  // true
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proftrace/config.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

struct rank_list {
  std::vector<std::pair<int, int>> ranges;  // inclusive, as written
  bool contains(int rank) const noexcept;
};

// Ranks and ranges of ranks >= 0 joined by ',' (or '+', PROFTRACE_CONFIG's
// separator within a value), blanks ignored; nullopt for anything else,
// an empty list included.
std::optional<rank_list> parse_rank_list(std::string_view text);

// Whether this process writes traces: the environment's list when
// PROFTRACE_TRACE_RANKS is set, else `option`'s; every rank when neither
// names one, or when the rank is unknown (`rank` < 0). Throws
// std::invalid_argument for a malformed `option`; a malformed environment
// value warns once and traces every rank.
bool traces_this_rank(std::string_view option, int rank);

}  // namespace proftrace::detail
