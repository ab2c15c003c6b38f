// Internal: a writer's recent answers by key (a call site, a site and a
// thread), direct-mapped by the key's hash: scopes that nest (outer { mid
// { x } }) alternate their sites, which a one-entry "last key" cache misses
// every time. Holds pointers to values that stay where they are (the nodes
// of the writer's node-based map); a miss is the caller's to fill.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// A key's slot: call sites are static objects at least 16 bytes apart.
inline std::size_t recent_slot_hash(const void* where, std::int64_t salt = 0) noexcept {
  return static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(where) >> 4) ^ static_cast<std::size_t>(salt);
}

template <class Key, class Value, std::size_t N = 16>
class recent_cache {
  static_assert((N & (N - 1)) == 0, "a power of two");

 public:
  // The value cached for `k` (whose hash is `h`), or null.
  Value* find(const Key& k, std::size_t h) const noexcept {
    const slot& s = slots_[h & (N - 1)];
    return s.value != nullptr && s.key == k ? s.value : nullptr;
  }
  Value& put(const Key& k, std::size_t h, Value& v) noexcept {
    slots_[h & (N - 1)] = {k, &v};
    return v;
  }
  void clear() noexcept { slots_ = {}; }

 private:
  struct slot {
    Key key{};
    Value* value = nullptr;
  };
  std::array<slot, N> slots_{};
};

}  // namespace proftrace::detail
