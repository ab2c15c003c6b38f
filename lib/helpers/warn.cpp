#include "warn.hpp"

#include <cstdio>
#include <mutex>
#include <set>

#include "proftrace/warnings.hpp"

namespace proftrace {
namespace {

std::mutex& handler_mutex() {
  static std::mutex m;
  return m;
}
warning_handler& current_handler() {
  static warning_handler h;
  return h;
}

}  // namespace

warning_handler set_warning_handler(warning_handler handler) {
  std::lock_guard lock(handler_mutex());
  auto previous = std::move(current_handler());
  current_handler() = std::move(handler);
  return previous;
}

inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

void warn(std::string_view message) noexcept {
  try {
    std::lock_guard lock(handler_mutex());
    if (current_handler()) {
      current_handler()(message);
      return;
    }
  } catch (...) {
  }
  std::fprintf(stderr, "proftrace: warning: %.*s\n", static_cast<int>(message.size()), message.data());
}

void warn_once(std::string_view key, std::string_view message) noexcept {
  static std::mutex m;
  static std::set<std::string, std::less<>> seen;
  try {
    std::lock_guard lock(m);
    if (!seen.emplace(key).second) return;
  } catch (...) {
  }
  warn(message);
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
