// Internal: CUPTI activity collection for a session — the start-up checks
// (kill switch, device count, another CUPTI client), the activity buffers
// (capped; what CUPTI drops is counted), external correlation per thread,
// and the decoded, joined records at the end of a trace.
//
// Start-up never throws and never stops the program: each reason to stay off
// comes back as one message for a warning, and the CPU profile goes on.
// Whether that warning is given is the session's call (cuda_collection_start).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "activity_decoder.hpp"
#include "cupti_api.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

enum class cuda_collection {
  on,
  disabled,     // PROFTRACE_DISABLE_CUDA is set
  no_library,   // libcupti or libcudart cannot be loaded (or lacks a symbol)
  no_device,    // no driver, or no device
  cupti_busy,   // another CUPTI client (Nsight Systems, ...) holds CUPTI: NVTX and gating still work
  cupti_error,  // CUPTI refused to enable collection
};

struct cuda_start {
  cuda_collection state = cuda_collection::no_device;
  std::string message;  // why collection is off (empty when on)
};

class cupti_collector {
 public:
  static constexpr std::size_t buffer_bytes = 4u << 20;  // as Kineto
  static constexpr std::size_t default_buffer_cap = 32;  // 128 MiB outstanding at most

  // The one collector CUPTI's C callbacks reach.
  static cupti_collector& instance();

  // Tests swap in their own table (and cap); null restores the real one.
  void use_api(const cupti_api* api, std::size_t buffer_cap = default_buffer_cap);
  // The table in use (the real one is loaded by the first start() past the
  // kill switch: a session that never asks for CUDA loads no library).
  const cupti_api& api() const { return injected_ ? *injected_ : real_cupti_api(); }

  cuda_start start();
  // Flushes every buffer and disables the kinds; idempotent.
  void stop();
  bool running() const noexcept { return running_.load(std::memory_order_acquire); }
  // What was decoded since the last take(), joined (call after stop(), or
  // after flush() while running).
  activity_decoder::result take();
  void flush();

  // Buffers handed out and not yet returned, and requests refused at the cap.
  std::size_t buffers_outstanding() const;
  std::uint64_t buffers_refused() const;
  // The refused requests since the last call (a trace reports its own).
  std::uint64_t take_refused();
  // The visible devices' properties, read at start().
  const std::vector<gpu_device_properties>& devices() const { return devices_; }

  // One warning per start-up outcome and process: false when `s`'s reason
  // was already reported (use_api() forgets what was reported).
  bool first_report(const cuda_start& s);

 private:
  cupti_collector() = default;
  static void CUPTIAPI on_buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records);
  static void CUPTIAPI on_buffer_completed(CUcontext context, std::uint32_t stream, std::uint8_t* buffer,
                                           std::size_t size, std::size_t valid_bytes);
  void disable_all();

  static const cupti_api& not_started();

  const cupti_api* injected_ = nullptr;
  std::size_t buffer_cap_ = default_buffer_cap;
  bool callbacks_registered_ = false;
  std::atomic<bool> running_{false};
  mutable std::mutex mutex_;  // guards the decoder and the counters; never held around CUPTI calls
  activity_decoder decoder_{not_started()};
  std::size_t outstanding_ = 0;
  std::uint64_t refused_ = 0;
  std::vector<gpu_device_properties> devices_;
  unsigned reported_ = 0;  // bit per cuda_collection value already warned about
};

}  // namespace proftrace::detail
