// Internal: what every trace writer is told when a trace window opens.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cuda/gpu_activity.hpp"
#include "proftrace/profile.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

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

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
