// Records: an async range (a PROF_ASYNC range, or a scope that ended on
// another thread) between its begin and its end.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "records/scope.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// An async range whose begin was seen and whose end was not yet.
struct open_async {
  const site* where = nullptr;
  std::int64_t begin_ns = 0;
  std::int64_t tid = 0;  // the thread that began it
  std::uint64_t external_id = 0;
  std::string dynamic_name{};  // a scope's runtime name (PROF_SCOPE_DYNAMIC, proftrace_push)
  bool truncated = false;  // written where it was last known open: its end was most likely lost
  // A scope that ended on another thread: what was recorded in it while it
  // was its first thread's innermost scope, written on the range.
  std::vector<std::int64_t> shapes{};  // as open_scope::shapes
  std::int64_t flops = 0;
  std::vector<scope_arg> args{};
  const char* name() const noexcept { return dynamic_name.empty() ? where->name : dynamic_name.c_str(); }
};

// An async range's end that reached the flusher before its begin (the
// beginning thread's ring was drained first): where and when it ended.
struct early_async_end {
  std::int64_t end_ns = 0;
  std::int64_t tid = 0;
};

}  // namespace proftrace::detail
