#include "call_path_profile.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

call_path_profile::call_path_profile() {
  for (const char* name : {"count", "sum#time.duration", "inclusive#sum#time.duration"}) metric(name);
}

std::uint32_t call_path_profile::child(std::uint32_t parent, std::string_view label) {
  std::string key = std::to_string(parent);
  key += '/';
  key += label;
  const auto [it, fresh] = children_.try_emplace(std::move(key), static_cast<std::uint32_t>(nodes_.size()));
  if (fresh) nodes_.push_back({std::string(label), parent});
  return it->second;
}

std::size_t call_path_profile::metric(std::string_view name) {
  const auto [it, fresh] = metric_index_.try_emplace(std::string(name), metric_names_.size());
  if (fresh) metric_names_.emplace_back(name);
  return it->second;
}

void call_path_profile::add(std::uint32_t node, std::int64_t rank, std::size_t metric, double value) {
  std::vector<double>& sums = sums_[{node, rank}];
  if (sums.size() <= metric) sums.resize(metric + 1, 0.0);
  sums[metric] += value;
  ranks_.insert(rank);
}

const std::vector<double>* call_path_profile::values(std::uint32_t node, std::int64_t rank) const {
  const auto it = sums_.find({node, rank});
  return it == sums_.end() ? nullptr : &it->second;
}

}  // namespace proftrace::detail
