// Internal: a calling-context profile as it is built: the tree of call paths
// (one node per distinct path from a root, labelled with its scope's name)
// and, per node and rank, sums in named metric columns. Memory is the
// number of distinct paths times ranks, whatever the number of events.
//
//   call_path_profile p;
//   const std::uint32_t main = p.child(call_path_profile::no_node, "main");
//   const std::uint32_t solve = p.child(main, "solve");
//   p.add(solve, /*rank=*/0, call_path_profile::inclusive_ns, 250e6);
//   p.add(solve, 0, p.metric("sum#flops"), 1e9);
//   for (std::int64_t rank : p.ranks()) ... p.values(solve, rank) ...
#pragma once

#include "proftrace/config.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

class call_path_profile {
 public:
  static constexpr std::uint32_t no_node = UINT32_MAX;
  // The columns every profile has first, in this order (Caliper's names);
  // times are summed in nanoseconds (exact), written in seconds.
  enum fixed_metric : std::size_t { calls, exclusive_ns, inclusive_ns };

  struct node {
    std::string label;
    std::uint32_t parent = no_node;  // no_node: a root
  };

  call_path_profile();

  // The node of `label` called from `parent` (no_node: a root), made at first use.
  std::uint32_t child(std::uint32_t parent, std::string_view label);
  // The index of the column named `name`, made at first use.
  std::size_t metric(std::string_view name);
  void add(std::uint32_t node, std::int64_t rank, std::size_t metric, double value);

  const std::vector<node>& nodes() const noexcept { return nodes_; }
  const std::vector<std::string>& metric_names() const noexcept { return metric_names_; }
  const std::set<std::int64_t>& ranks() const noexcept { return ranks_; }
  // The sums at (node, rank), one per column up to the last one added
  // there; null where nothing was added.
  const std::vector<double>* values(std::uint32_t node, std::int64_t rank) const;

 private:
  std::vector<node> nodes_;
  std::unordered_map<std::string, std::uint32_t> children_;  // the parent's index, '/', the label
  std::vector<std::string> metric_names_;
  std::unordered_map<std::string, std::size_t> metric_index_;
  std::map<std::pair<std::uint32_t, std::int64_t>, std::vector<double>> sums_;
  std::set<std::int64_t> ranks_;
};

}  // namespace proftrace::detail
