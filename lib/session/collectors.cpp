// The collectors a session runs: started and stopped with it, their
// recording bits, the GPU work they hand each trace, CUDA profiler gating.
#include <iterator>
#include <stdexcept>

#include "collect/collector_hooks.hpp"
#include "helpers/warn.hpp"
#include "proftrace/cuda.hpp"
#include "proftrace/detail/recorder.hpp"
#include "session_impl.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {

// Starts the collectors asked for; drops from `activities` those that
// cannot collect now. CUDA named in `activities` and missing warns once
// per process; default activities take CUDA only where it is really
// there, silently, as torch, and the CPU profile is recorded instead.
void session::impl::start_collectors() {
  activities = requested;
  collecting = {};
  for (const detail::collector_hooks* c : detail::build_collectors()) {
    if (!activities.contains(c->kind)) continue;
    if (!c->start || c->start(opts, opts.activities.contains(c->kind), detail::in_forked_child))
      collecting = collecting | activity_set{c->kind};
    else
      activities = activity_set::from_bits(activities.bits() & ~activity_set{c->kind}.bits());
  }
  if (requested.contains(activity::cuda) && !collecting.contains(activity::cuda)) activities = activities | fallback;
}

void session::impl::stop_collectors() {
  for (const detail::collector_hooks* c : detail::build_collectors())
    if (c->stop && collecting.contains(c->kind)) c->stop();
  collecting = {};
}

std::uint32_t session::impl::recording_bits() const {
  std::uint32_t bits = detail::state_session;
  if (opts.record_shapes) bits |= detail::state_record_shapes;
  for (const detail::collector_hooks* c : detail::build_collectors())
    if (c->state_bits && activities.contains(c->kind)) bits |= c->state_bits(opts);
  return bits;
}

// The GPU work of the trace that closes now (none without CUDA).
detail::gpu_batch session::impl::take_gpu() {
  detail::gpu_batch all;
  for (const detail::collector_hooks* c : detail::build_collectors()) {
    if (!c->take || !collecting.contains(c->kind)) continue;
    detail::gpu_batch b = c->take();
    all.losses.add(b.losses);
    all.activities.insert(all.activities.end(), std::make_move_iterator(b.activities.begin()),
                          std::make_move_iterator(b.activities.end()));
  }
  return all;
}

// cudaProfilerStart/Stop around each trace (cuda_profiler_gating).
void session::impl::gate_cuda_profiler(bool start) {
  if (!opts.cuda_profiler_gating) return;
#if PROFTRACE_WITH_CUDA
  try {
    start ? cuda::profiler_start() : cuda::profiler_stop();
  } catch (const std::exception& e) {
    detail::warn(std::string(e.what()) + " (cuda_profiler_gating)");
  }
#else
  (void)start;
#endif
}

}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
