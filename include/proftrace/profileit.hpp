// proftrace/profileit.hpp — run a function and measure it: time, CPU time,
// peak memory, and the GPU's memory figures where there is a GPU
// (torch_geometric.profile.profileit, GPUStats / CUDAStats).
//
//   auto [loss, stats] = proftrace::profileit("cuda", train, model, batch);
//   std::cout << stats.time << " s, peak " << proftrace::byte_to_megabyte(*stats.max_allocated_gpu) << " MB\n";
//   std::vector<proftrace::run_stats> runs;
//   for (int i = 0; i < 5; ++i) runs.push_back(proftrace::profileit("cpu", step).stats);
//   auto summary = proftrace::get_stats_summary(runs);   // <proftrace/stats_summary.hpp>
//
// Every run has the wall time, the process's CPU time and the peak resident
// memory while fn ran. On "cuda" / "cuda:N" with a device (builds with the
// CUDA collector) the time includes the device's work (synchronised before
// each clock read), and the run has the peak of device memory allocated and
// reserved as proftrace's memory collector saw it (CUDA allocations through
// CUPTI, PROF_ALLOC on the device; profileit opens its own session for this,
// so the figures are absent, with the reason, while another session runs),
// and nvidia-smi's free and used memory (NVML). Without a GPU, a driver or a
// CUDA build, the same call returns the CPU figures, leaves every GPU figure
// empty with gpu_absent_reason saying why, and warns once per process: an
// absent figure is never a zero. An unknown device throws std::invalid_argument.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "config.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {

struct run_stats {
  std::string device;  // "cpu", "cuda:0", ...
  double time = 0;     // seconds, wall clock
  std::optional<double> cpu_time;  // seconds of the process's CPU time (user + system) while fn ran
  // Peak resident memory (VmHWM) while fn ran. Where the kernel refuses to
  // reset the peak, the process's peak so far, and peak_resident_is_process_peak.
  std::optional<std::int64_t> peak_resident_bytes;
  bool peak_resident_is_process_peak = false;
  // GPU figures in bytes (GPUStats / CUDAStats); empty without a GPU.
  std::optional<std::int64_t> max_allocated_gpu;
  std::optional<std::int64_t> max_reserved_gpu;
  // Peak of live (allocated, not yet freed) device memory; without a
  // caching allocator between the program and CUDA it equals max_allocated_gpu.
  std::optional<std::int64_t> max_active_gpu;
  std::optional<std::int64_t> nvidia_smi_free_cuda;  // NVML, as nvidia-smi reports it after the run
  std::optional<std::int64_t> nvidia_smi_used_cuda;
  std::string gpu_absent_reason;  // why GPU figures are missing (empty when all are present)

  bool has_gpu_figures() const noexcept {
    return max_allocated_gpu || max_reserved_gpu || max_active_gpu || nvidia_smi_free_cuda || nvidia_smi_used_cuda;
  }
};

template <class R>
struct profiled {
  R result;
  run_stats stats;
};
template <>
struct profiled<void> {
  run_stats stats;
};

namespace detail {
// Measures from construction to finish(); out of line (getrusage, /proc,
// CUDA, a private session).
class profileit_probe {
 public:
  explicit profileit_probe(std::string_view device);
  ~profileit_probe();
  profileit_probe(const profileit_probe&) = delete;
  profileit_probe& operator=(const profileit_probe&) = delete;
  run_stats finish();

 private:
  struct state;
  std::unique_ptr<state> state_;
};
}  // namespace detail

// device: "cpu", "cuda" (the current device) or "cuda:N".
template <class Fn, class... Args>
  requires std::invocable<Fn, Args...>
auto profileit(std::string_view device, Fn&& fn, Args&&... args) {
  using R = std::invoke_result_t<Fn, Args...>;
  detail::profileit_probe probe(device);
  if constexpr (std::is_void_v<R>) {
    std::invoke(std::forward<Fn>(fn), std::forward<Args>(args)...);
    return profiled<void>{probe.finish()};
  } else {
    R result = std::invoke(std::forward<Fn>(fn), std::forward<Args>(args)...);
    return profiled<R>{std::move(result), probe.finish()};
  }
}

}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
