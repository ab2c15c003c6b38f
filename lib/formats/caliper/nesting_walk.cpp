#include "nesting_walk.hpp"

#include <algorithm>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

void nesting_walk::begin_thread(std::int64_t rank) {
  end_thread();
  rank_ = rank;
}

std::uint32_t nesting_walk::enter(std::int64_t begin_ns, std::int64_t end_ns, std::string_view label) {
  close_until(begin_ns);
  const std::uint32_t caller = open_.empty() ? call_path_profile::no_node : open_.back().node;
  const std::int64_t end = open_.empty() ? std::max(end_ns, begin_ns) : std::clamp(end_ns, begin_ns, open_.back().end_ns);
  const std::uint32_t node = profile_.child(caller, label);
  profile_.add(node, rank_, call_path_profile::calls, 1);
  open_.push_back({node, begin_ns, end});
  return node;
}

std::uint32_t nesting_walk::innermost_at(std::int64_t ts_ns) {
  close_until(ts_ns);
  return open_.empty() ? call_path_profile::no_node : open_.back().node;
}

// A call that ends exactly when the next begins is closed first: the next is its sibling.
void nesting_walk::close_until(std::int64_t ts_ns) {
  while (!open_.empty() && open_.back().end_ns <= ts_ns) {
    const open_call done = open_.back();
    open_.pop_back();
    const std::int64_t inclusive = done.end_ns - done.begin_ns;
    profile_.add(done.node, rank_, call_path_profile::inclusive_ns, static_cast<double>(inclusive));
    profile_.add(done.node, rank_, call_path_profile::exclusive_ns, static_cast<double>(inclusive - done.callees_ns));
    if (!open_.empty()) open_.back().callees_ns += inclusive;
  }
}

}  // namespace proftrace::detail
