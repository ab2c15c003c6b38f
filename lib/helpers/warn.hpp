// Internal: emits warnings through the handler of <proftrace/warnings.hpp>.
#pragma once

#include "proftrace/config.hpp"

#include <string>
#include <string_view>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

void warn(std::string_view message) noexcept;
// Emits `message` only the first time `key` is seen in this process.
void warn_once(std::string_view key, std::string_view message) noexcept;

}  // namespace proftrace::detail
