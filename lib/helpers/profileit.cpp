#include "proftrace/profileit.hpp"

#include <sys/resource.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <fstream>
#include <stdexcept>
#include <string>

#include "proftrace/detail/recorder.hpp"
#include "proftrace/profile.hpp"
#include "warn.hpp"
#if PROFTRACE_WITH_CUDA
#include "collect/cuda/cuda_runtime.hpp"
#include "proftrace/cuda.hpp"
#endif

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

struct parsed_device {
  bool cuda = false;
  int index = -1;  // -1: the current device
};

parsed_device parse_device(std::string_view device) {
  if (device == "cpu") return {};
  if (device == "cuda") return {true, -1};
  if (device.starts_with("cuda:")) {
    const std::string_view n = device.substr(5);
    int index = -1;
    const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), index);
    if (ec == std::errc{} && end == n.data() + n.size() && index >= 0) return {true, index};
  }
  throw std::invalid_argument("proftrace: profileit: unknown device '" + std::string(device) +
                              "' (expected \"cpu\", \"cuda\" or \"cuda:N\")");
}

double cpu_seconds() {
  rusage u{};
  if (::getrusage(RUSAGE_SELF, &u) != 0) return -1;
  const auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

// Writing "5" to clear_refs resets the peak resident size (VmHWM), Linux >= 4.0.
bool reset_peak_resident() {
  std::ofstream f("/proc/self/clear_refs");
  if (!f) return false;
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}

std::optional<std::int64_t> peak_resident() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (!line.starts_with("VmHWM:")) continue;
    const auto digits = line.find_first_of("0123456789");
    if (digits == std::string::npos) break;
    return std::stoll(line.substr(digits)) * 1024;  // kB
  }
  rusage u{};
  if (::getrusage(RUSAGE_SELF, &u) == 0) return static_cast<std::int64_t>(u.ru_maxrss) * 1024;
  return std::nullopt;
}

void warn_once_no_gpu(const std::string& reason) {
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true))
    warn("profileit: " + reason + "; the GPU figures are absent, the CPU figures are reported (further runs not reported)");
}

}  // namespace

struct profileit_probe::state {
  run_stats stats;
  parsed_device device;
  bool gpu = false;  // a device is there to measure
  std::unique_ptr<session> own;  // collects the device's allocations
  std::chrono::steady_clock::time_point start;
  double cpu_start = 0;
};

profileit_probe::profileit_probe(std::string_view device) : state_(std::make_unique<state>()) {
  state& s = *state_;
  s.device = parse_device(device);
  s.stats.device = s.device.cuda ? "cuda" : "cpu";
  if (s.device.cuda) {
#if PROFTRACE_WITH_CUDA
    if (!cuda::available()) {
      const cuda::device_memory m = cuda::memory_info(s.device.index < 0 ? 0 : s.device.index);
      s.stats.gpu_absent_reason = "CUDA is not available (" + m.unavailable + ")";
      warn_once_no_gpu(s.stats.gpu_absent_reason);
    } else {
      if (s.device.index < 0) cuda::detail::runtime().get_device(&s.device.index);
      else cuda::detail::runtime().set_device(s.device.index);
      s.gpu = true;
      if (session_state.load(std::memory_order_relaxed) != 0) {
        s.stats.gpu_absent_reason =
            "a proftrace session is running, so profileit cannot collect the device's allocations with its own";
      } else {
        s.own = std::make_unique<profile>(profile_options{
            .activities = {activity::cpu, activity::cuda, activity::memory}, .profile_memory = true});
        s.own->start();
      }
    }
#else
    s.stats.gpu_absent_reason = "this build of proftrace has no CUDA collector";
    warn_once_no_gpu(s.stats.gpu_absent_reason);
#endif
    if (s.device.index < 0) s.device.index = 0;
    s.stats.device = "cuda:" + std::to_string(s.device.index);
  }
  s.stats.peak_resident_is_process_peak = !reset_peak_resident();
#if PROFTRACE_WITH_CUDA
  if (s.gpu) cuda::detail::runtime().device_synchronize();
#endif
  s.cpu_start = cpu_seconds();
  s.start = std::chrono::steady_clock::now();
}

profileit_probe::~profileit_probe() {
  if (state_ && state_->own) {
    try {
      state_->own->stop();
    } catch (...) {
    }
  }
}

run_stats profileit_probe::finish() {
  state& s = *state_;
#if PROFTRACE_WITH_CUDA
  if (s.gpu) cuda::detail::runtime().device_synchronize();
#endif
  const auto end = std::chrono::steady_clock::now();
  const double cpu_end = cpu_seconds();
  s.stats.time = std::chrono::duration<double>(end - s.start).count();
  if (s.cpu_start >= 0 && cpu_end >= 0) s.stats.cpu_time = cpu_end - s.cpu_start;
  s.stats.peak_resident_bytes = peak_resident();
#if PROFTRACE_WITH_CUDA
  if (s.gpu) {
    if (s.own) {
      std::unique_ptr<session> own = std::move(s.own);
      own->stop();
      bool seen = false;
      for (const device_memory_stats& d : own->memory_stats()) {
        if (d.device != s.device.index) continue;
        s.stats.max_allocated_gpu = d.trace.max_allocated;
        s.stats.max_reserved_gpu = d.trace.max_reserved;
        s.stats.max_active_gpu = d.trace.max_allocated;
        seen = true;
      }
      if (!seen) {  // nothing allocated on the device while fn ran: a measured zero
        s.stats.max_allocated_gpu = 0;
        s.stats.max_reserved_gpu = 0;
        s.stats.max_active_gpu = 0;
      }
    }
    const cuda::device_memory m = cuda::memory_info(s.device.index);
    if (m.nvml_free_bytes) s.stats.nvidia_smi_free_cuda = static_cast<std::int64_t>(*m.nvml_free_bytes);
    if (m.nvml_used_bytes) s.stats.nvidia_smi_used_cuda = static_cast<std::int64_t>(*m.nvml_used_bytes);
    if (!m.nvml_used_bytes && !m.unavailable.empty()) {
      if (!s.stats.gpu_absent_reason.empty()) s.stats.gpu_absent_reason += "; ";
      s.stats.gpu_absent_reason += m.unavailable;
    }
  }
#endif
  if (!s.device.cuda) s.stats.gpu_absent_reason = "the run was on the CPU";
  return s.stats;
}

}  // namespace proftrace::detail
