// Internal: the table_options::sort_by keys of a report's rows (key_averages
// and rank_averages tables), each a name and the figure it sorts by.
//
//   constexpr sort_key<event_average> keys[] = {{"count", [](const event_average& e) { ... }}};
//   const auto& by = sort_key_named(std::span(keys), options.sort_by);  // throws naming the valid keys
#pragma once

#include <span>
#include <stdexcept>
#include <string>

#include "proftrace/config.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

template <class Row>
struct sort_key {
  const char* name;
  double (*value)(const Row&);
};

// The key of that name; std::invalid_argument naming the valid ones.
template <class Row>
const sort_key<Row>& sort_key_named(std::span<const sort_key<Row>> keys, const std::string& name) {
  for (const sort_key<Row>& k : keys)
    if (name == k.name) return k;
  std::string valid;
  for (const sort_key<Row>& k : keys) valid += std::string(valid.empty() ? "" : ", ") + k.name;
  throw std::invalid_argument("proftrace: unknown sort_by key '" + name + "' (valid keys: " + valid + ")");
}

}  // namespace proftrace::detail
