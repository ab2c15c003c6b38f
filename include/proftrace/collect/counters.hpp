// proftrace/collect/counters.hpp — hardware and software counters per scope,
// through Linux's perf_event_open.
//
//   proftrace::profile p({.counters = {"task-clock", "context-switches", "page-faults", "instructions"}});
//   p.start();
//   { PROF_SCOPE("solve"); solve(); }   // "solve" carries each counter's delta as an arg
//   p.stop();
//   std::cout << p.key_averages().table();  // a total and a self column per counter
//
// Names are `perf list`'s: task-clock (ns, as perf reports it), cpu-clock,
// context-switches (cs), cpu-migrations, page-faults (faults), minor-faults,
// major-faults, cycles (cpu-cycles), instructions, ref-cycles, bus-cycles,
// cache-references, cache-misses, branches (branch-instructions),
// branch-misses, stalled-cycles-frontend, stalled-cycles-backend. Each thread
// opens its own counters on its first scope of the session; every recorded
// scope (PROF_SCOPE, PROF_FUNCTION, PROF_OP, PROF_SCOPE_DYNAMIC, steps) reads
// them at its begin and end — with rdpmc where the kernel maps the counter
// for user space, else one read() per counter (about a microsecond each on
// a VM: choose coarse scopes). A name the machine does not expose (no PMU in
// a VM: `cycles` answers ENOENT), that perf_event_paranoid forbids, or that
// is unknown gives one warning naming it at start(); the others work. The
// table derives instructions per cycle where both are counted.
//
// Compiled in with PROFTRACE_WITH_COUNTERS (ON on Linux); off, the
// `counters` option is ignored with one warning.
#pragma once

#include "../collectors.hpp"
#include "../config.hpp"

namespace proftrace {
namespace collect {
struct counters {
  static constexpr activity kind = activity::counters;
  static constexpr std::string_view name = "counters";
};
}  // namespace collect

template <>
struct is_available<collect::counters> : std::bool_constant<PROFTRACE_ENABLED != 0 && PROFTRACE_WITH_COUNTERS != 0> {};

}  // namespace proftrace
