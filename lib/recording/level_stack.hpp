// lib/recording/level_stack.hpp — a thread's per-nesting-level state, at any depth.
//
//   constinit thread_local level_stack<std::uint64_t[4], 64> levels{};
//   if (auto* s = levels.slot(depth)) ...;   // null only when memory ran out
//   levels.release();                        // at thread exit
//
// The first `InPlace` levels live in the object; deeper ones in a block
// grown on demand with realloc (no operator new: the memory collector's
// hook must not see the profiler's own allocations). Trivially
// destructible, so that a thread_local of it can still be read from
// another thread_local's destructor; release() frees the block.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <type_traits>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

template <class T, std::uint32_t InPlace>
struct level_stack {
  static_assert(std::is_trivially_copyable_v<T>, "levels are moved by realloc");
  T in_place[InPlace];
  T* deeper;
  std::uint32_t deeper_levels;

  // The slot of `level` (a slot past the grown block grows it; its
  // contents are moved with it).
  T* slot(std::uint32_t level) noexcept {
    if (level < InPlace) return &in_place[level];
    const std::uint32_t i = level - InPlace;
    if (i >= deeper_levels) {
      const std::uint32_t grown = deeper_levels == 0 ? InPlace : deeper_levels * 2;
      if (grown <= i) return nullptr;  // levels are entered one at a time: never more than one past the end
      void* more = std::realloc(static_cast<void*>(deeper), std::size_t{grown} * sizeof(T));
      if (!more) return nullptr;
      deeper = static_cast<T*>(more);
      deeper_levels = grown;
    }
    return &deeper[i];
  }
  void release() noexcept {
    std::free(static_cast<void*>(deeper));
    deeper = nullptr;
    deeper_levels = 0;
  }
};

}  // namespace proftrace::detail
