// proftrace/signals.hpp — finish the trace when the program is interrupted.
//
//   int main() {
//     proftrace::finish_trace_on_signals();  // SIGINT and SIGTERM
//     proftrace::profile p({.on_trace_ready = proftrace::tensorboard_trace_handler("./log")});
//     p.start();
//     train();  // Ctrl-C or `kill`: the trace so far is closed and handed to on_trace_ready,
//   }           // then the signal does what it did before (here: ends the program)
//
// Opt-in, because signal dispositions belong to the program. On the first of
// these signals a helper thread stops the running session as stop() would
// (the handler itself only wakes that thread and waits for it, at most
// `timeout`); then the handler puts back the action that was in place before
// and raises the signal again, so the program ends, or runs its own handler,
// exactly as it would have without proftrace. If the interrupted thread
// holds the profiler's lock (it was inside stop() or step()), the wait times
// out and the spool file keeps what was flushed, as after a kill.
//
// Fault signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) are refused: after
// a crash the heap cannot be trusted, and the spool already holds every
// flushed event. SIGKILL and SIGSTOP cannot be caught.
#pragma once

#include <chrono>
#include <csignal>
#include <initializer_list>

#include "config.hpp"

namespace proftrace {
inline namespace PROFTRACE_SESSION_NAMESPACE {

#if PROFTRACE_ENABLED
// Throws std::invalid_argument for a signal that cannot or must not be
// handled this way, std::system_error if the handler cannot be installed.
// Calling it again adds signals; one already handled keeps its first
// "previous action".
void finish_trace_on_signals(std::initializer_list<int> signals = {SIGINT, SIGTERM},
                             std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Puts back the actions that finish_trace_on_signals replaced.
void restore_signal_actions() noexcept;
#else
// Compiled out: there is never a trace to finish, so no handler is installed.
inline void finish_trace_on_signals(std::initializer_list<int> = {SIGINT, SIGTERM},
                                    std::chrono::milliseconds = std::chrono::seconds(10)) noexcept {}
inline void restore_signal_actions() noexcept {}
#endif

}  // namespace PROFTRACE_SESSION_NAMESPACE
}  // namespace proftrace
