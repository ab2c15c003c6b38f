// Internal: the session PROFTRACE_CONFIG starts before main(), as the
// recorder and the session see it. Declared here, below both, and defined by
// the C API (lib/c_api/c_api.cpp), which parses the configuration.
#pragma once

#include "proftrace/config.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// Starts a session from $PROFTRACE_CONFIG (once per process; nothing when
// unset) and stops it at exit. Called before main() from the recorder's
// translation unit (registry.cpp), which every instrumented program links.
void start_from_environment() noexcept;

// session::start() of `starting`: a session PROFTRACE_CONFIG started stops
// (its trace kept) so that the program's own takes over.
void yield_environment_session(const void* starting) noexcept;

}  // namespace proftrace::detail
