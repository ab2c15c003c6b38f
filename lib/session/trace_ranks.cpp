#include "trace_ranks.hpp"

#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <utility>

#include "helpers/warn.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

std::string_view trimmed(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

std::optional<int> parse_rank(std::string_view v) {
  v = trimmed(v);
  int n = -1;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || r.ec != std::errc() || r.ptr != v.data() + v.size() || n < 0) return std::nullopt;
  return n;
}

}  // namespace

bool rank_list::contains(int rank) const noexcept {
  for (const auto& [first, last] : ranges)
    if (rank >= first && rank <= last) return true;
  return false;
}

std::optional<rank_list> parse_rank_list(std::string_view text) {
  rank_list out;
  while (true) {
    const std::size_t end = text.find_first_of(",+");
    const std::string_view item = text.substr(0, end);
    const std::size_t dash = item.find('-');
    const auto first = parse_rank(item.substr(0, dash));
    const auto last = dash == std::string_view::npos ? first : parse_rank(item.substr(dash + 1));
    if (!first || !last || *last < *first) return std::nullopt;
    out.ranges.emplace_back(*first, *last);
    if (end == std::string_view::npos) return out;
    text.remove_prefix(end + 1);
  }
}

bool traces_this_rank(std::string_view option, int rank) {
  std::optional<rank_list> list;
  if (!trimmed(option).empty()) {
    list = parse_rank_list(option);
    if (!list)
      throw std::invalid_argument("proftrace: trace_ranks '" + std::string(option) +
                                  "' is not a list of ranks and ranges (\"0,7,100-131\")");
  }
  if (const char* env = std::getenv("PROFTRACE_TRACE_RANKS"); env && *env) {
    list = parse_rank_list(env);
    if (!list) {
      static bool warned = false;
      if (!std::exchange(warned, true))
        warn(std::string("PROFTRACE_TRACE_RANKS='") + env +
             "' is not a list of ranks and ranges (\"0,7,100-131\"): every rank writes its trace");
      return true;
    }
  }
  return !list || rank < 0 || list->contains(rank);
}

}  // namespace proftrace::detail
