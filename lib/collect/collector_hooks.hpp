// Internal: what each collector does at a session's edges, so that a
// session runs the collectors of this build through one list
// (collector_hooks.cpp) instead of knowing each of them.
//
//   for (const collector_hooks* c : build_collectors())
//     if (asked.contains(c->kind) && c->start(opts, named, forked)) collecting = collecting | activity_set{c->kind};
//
// A collector defines its hooks in its folder (collect/<name>/<name>_hooks.cpp,
// absent_collector() where the build lacks it) and adds one line to
// build_collectors()'s table. Every hook may be null (left out: nothing to do).
#pragma once

#include <cstdint>
#include <span>

#include "records/gpu_batch.hpp"
#include "proftrace/detail/recorder.hpp"
#include "drain/flusher.hpp"
#include "proftrace/collectors.hpp"
#include "proftrace/profile.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

struct collector_hooks {
  activity kind;
  // At start(): whether it collects in this process now. `named`: the
  // program asked for it by name, so a missing one warns (once).
  bool (*start)(const profile_options& opts, bool named, bool in_forked_child) = nullptr;
  // At stop(): ends what start() began.
  void (*stop)() = nullptr;
  // The recorder's state bits while it collects (recorder.hpp state_*).
  std::uint32_t (*state_bits)(const profile_options& opts) = nullptr;
  // What a trace window needs of it (devices, flags).
  void (*open_window)(const profile_options& opts, window_options& w) = nullptr;
  // Its records for the trace that closes now (GPU activities).
  gpu_batch (*take)() = nullptr;
  // False for a collector this build was configured without.
  bool in_build = true;
};

// What a collector this build lacks registers: its kind, nothing to call.
constexpr collector_hooks absent_collector(activity kind) noexcept {
  return {.kind = kind, .in_build = false};
}

// The collectors compiled into this build.
std::span<const collector_hooks* const> build_collectors();

}  // namespace proftrace::detail
