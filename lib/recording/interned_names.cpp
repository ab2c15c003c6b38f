// The count of names recorded over the C API's bound (interned_names.hpp).
#include "interned_names.hpp"

#include <atomic>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {
std::atomic<std::uint64_t> over_limit_uses{0};
}  // namespace

void count_name_over_limit() noexcept { over_limit_uses.fetch_add(1, std::memory_order_relaxed); }

std::uint64_t names_over_limit() noexcept { return over_limit_uses.load(std::memory_order_relaxed); }

}  // namespace proftrace::detail
