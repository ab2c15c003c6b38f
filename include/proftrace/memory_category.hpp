// proftrace/memory_category.hpp — what an allocation holds, for the memory
// timeline (torch.profiler._memory_profiler.Category).
//
//   PROF_ALLOC(weights, bytes, -1, proftrace::memory_category::parameter);
//   {
//     PROF_MEMORY_CATEGORY(proftrace::memory_category::activation);  // this thread, this block
//     auto* buf = new float[n];     // hooked or PROF_ALLOC'd: an activation
//   }
//   p.export_memory_timeline("mem.html");   // stacked by category
//
// An allocation with no category given takes the category set on its thread
// by the innermost PROF_MEMORY_CATEGORY, else `unknown`.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace proftrace {

enum class memory_category : std::uint8_t {
  unknown = 0,  // torch's None
  parameter,
  optimizer_state,
  input,
  temporary,
  activation,
  gradient,
  autograd_detail,
};

inline constexpr std::size_t memory_category_count = 8;

// torch's plotting order (_CATEGORY_TO_COLORS): the index written in
// raw timelines and the position (plus one) in a timeline's size rows.
inline constexpr std::array<memory_category, memory_category_count> memory_categories_in_timeline_order{
    memory_category::parameter, memory_category::optimizer_state, memory_category::input,
    memory_category::temporary, memory_category::activation,      memory_category::gradient,
    memory_category::autograd_detail, memory_category::unknown};

constexpr std::size_t timeline_index(memory_category c) noexcept {
  for (std::size_t i = 0; i < memory_categories_in_timeline_order.size(); ++i)
    if (memory_categories_in_timeline_order[i] == c) return i;
  return memory_category_count - 1;  // a value outside the enum counts as unknown
}

constexpr std::string_view to_string(memory_category c) noexcept {
  switch (c) {
    case memory_category::parameter: return "PARAMETER";
    case memory_category::optimizer_state: return "OPTIMIZER_STATE";
    case memory_category::input: return "INPUT";
    case memory_category::temporary: return "TEMPORARY";
    case memory_category::activation: return "ACTIVATION";
    case memory_category::gradient: return "GRADIENT";
    case memory_category::autograd_detail: return "AUTOGRAD_DETAIL";
    case memory_category::unknown: break;
  }
  return "Unknown";
}

}  // namespace proftrace
