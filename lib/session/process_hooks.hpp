// Internal: what the running session does when the process ends, is
// signalled or forks without the program stopping it first.
#pragma once

#include <string_view>

#include "proftrace/config.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

struct session_access {
  // Once per process, at the first start(): the atexit handler and the
  // pthread_atfork handlers below.
  static void install_process_hooks();

  // Stops the running session, if any, as stop() would; a trace with no
  // on_trace_ready to take it is kept as a finished .pt.trace.json and named
  // in a warning that begins with `why`.
  static void finish_running(std::string_view why) noexcept;

  // MPI starting or ending under a running session (on_mpi_initialised,
  // on_mpi_finalizing in mpi/bridge.hpp).
  static void mpi_started() noexcept;
  static void mpi_ending() noexcept;

  static void prepare_fork() noexcept;
  static void parent_after_fork() noexcept;
  static void child_after_fork() noexcept;
};

}  // namespace proftrace::detail
