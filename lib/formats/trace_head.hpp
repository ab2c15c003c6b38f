// Internal: what every trace writer is told when a trace window opens.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "records/gpu_activity.hpp"
#include "records/thread.hpp"
#include "proftrace/profile.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

struct trace_head {
  std::int64_t pid = 0;
  std::string process_name;
  std::int64_t start_ns = 0;  // Unix ns when the window opened
  std::int64_t base_ns = 0;   // "baseTimeNanoseconds": shared by every process
  std::vector<gpu_device_properties> devices;
  // Raw JSON members written before "traceEvents", in order.
  std::vector<std::pair<std::string, std::string>> metadata;
  bool with_stack = false;    // "Call stack" args
  bool with_modules = false;  // "Module Hierarchy" args
};

// Most scopes carry no arg but their External id: writers take a short
// path for those.
inline bool only_external_id(const open_scope& s, const trace_head& h) noexcept {
  return !s.truncated && s.step != step_kind::thread_step && s.shapes.empty() && s.flops <= 0 && s.comm_bytes < 0 &&
         !h.with_stack && !h.with_modules && s.dynamic_name.empty() && s.args.empty();
}
// The same, and not a step: a plain slice. Pairing's leaf (thread_state::leaf)
// is one by construction (no step, nothing recorded but its times); only
// the head's options can add args to it.
inline bool plain_slice(const thread_state& ts, const open_scope& s, const trace_head& h) noexcept {
  if (&s == &ts.leaf) return !h.with_stack && !h.with_modules;
  return only_external_id(s, h) && s.step == step_kind::none;
}

}  // namespace proftrace::detail
