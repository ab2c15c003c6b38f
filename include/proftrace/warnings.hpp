// proftrace/warnings.hpp — where proftrace's warnings go.
//
//   std::vector<std::string> seen;
//   auto previous = proftrace::set_warning_handler([&](std::string_view m) { seen.emplace_back(m); });
//   ...
//   proftrace::set_warning_handler(previous);
//
// Warnings are torch's (for example "Incorrect schedule: WARMUP followed by
// NONE") plus proftrace's own (an unwritable spool, a failed write). The
// default handler prints "proftrace: warning: <message>" to stderr. The
// handler may be called from the flusher thread.
#pragma once

#include <functional>
#include <string_view>

namespace proftrace {

using warning_handler = std::function<void(std::string_view message)>;

// Installs `handler` (an empty one restores the default) and returns the
// previous one.
warning_handler set_warning_handler(warning_handler handler);

}  // namespace proftrace
