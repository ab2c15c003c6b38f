// Internal: one thread's calls, given in nesting order (by start, the longer
// first at one start, then in file order), as a call_path_profile counts
// them: each call's node is its caller's child, its calls, inclusive time
// (its duration) and exclusive time (less its callees' inclusive time) go
// to that node for the thread's rank. A call that outlives its caller is
// cut at the caller's end, as the Perfetto converter cuts it.
//
//   nesting_walk walk(profile);
//   walk.begin_thread(/*rank=*/0);
//   const std::uint32_t n = walk.enter(begin_ns, end_ns, "solve");  // n: to add its other metrics to
//   const std::uint32_t at = walk.innermost_at(ts_ns);  // a memory event's scope (no_node: none)
//   walk.end_thread();
#pragma once

#include "proftrace/config.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

#include "call_path_profile.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

class nesting_walk {
 public:
  explicit nesting_walk(call_path_profile& profile) : profile_(profile) {}

  // Ends the previous thread's calls; the next calls are `rank`'s.
  void begin_thread(std::int64_t rank);
  // A call over [begin_ns, end_ns], after every call of this thread that began before it.
  std::uint32_t enter(std::int64_t begin_ns, std::int64_t end_ns, std::string_view label);
  // The innermost call open at `ts_ns` (the calls that ended by then closed); no_node when none.
  std::uint32_t innermost_at(std::int64_t ts_ns);
  void end_thread() { close_until(INT64_MAX); }
  std::int64_t rank() const noexcept { return rank_; }

 private:
  struct open_call {
    std::uint32_t node;
    std::int64_t begin_ns, end_ns;
    std::int64_t callees_ns = 0;
  };
  void close_until(std::int64_t ts_ns);

  call_path_profile& profile_;
  std::vector<open_call> open_;  // the innermost last
  std::int64_t rank_ = 0;
};

}  // namespace proftrace::detail
