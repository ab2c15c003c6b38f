#include "cupti_collector.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "helpers/warn.hpp"
#include "cuda_collection.hpp"
#include "proftrace/detail/recorder.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

// Kinds enabled, in order. The first three link GPU work to scopes and must
// all be on; the rest are enabled where CUPTI allows.
struct kind_entry {
  CUpti_ActivityKind kind;
  bool required;
};
constexpr kind_entry kinds[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, true},  // never KIND_KERNEL: it serialises kernels
    {CUPTI_ACTIVITY_KIND_RUNTIME, true},
    {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, true},
    {CUPTI_ACTIVITY_KIND_DRIVER, false},
    {CUPTI_ACTIVITY_KIND_MEMCPY, false},
    {CUPTI_ACTIVITY_KIND_MEMSET, false},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, false},
    {CUPTI_ACTIVITY_KIND_OVERHEAD, false},
    {CUPTI_ACTIVITY_KIND_MEMORY2, false},
};

constexpr std::size_t buffer_alignment = 8;

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

}  // namespace

cupti_collector& cupti_collector::instance() {
  static cupti_collector* c = new cupti_collector;  // CUPTI may call back until exit
  return *c;
}

const cupti_api& cupti_collector::not_started() {
  static const cupti_api none = unavailable_cupti_api("CUDA collection has not started");
  return none;
}

void cupti_collector::use_api(const cupti_api* api, std::size_t buffer_cap) {
  injected_ = api;
  buffer_cap_ = buffer_cap;
  callbacks_registered_ = false;
  reported_ = 0;
  std::lock_guard lock(mutex_);
  decoder_ = activity_decoder(api ? *api : not_started());
  outstanding_ = 0;
  refused_ = 0;
}

cuda_start cupti_collector::start() {
  if (running()) return {cuda_collection::on, {}};
  if (env_set("PROFTRACE_DISABLE_CUDA"))
    return {cuda_collection::disabled, "CUDA collection disabled by PROFTRACE_DISABLE_CUDA; the CPU profile goes on"};

  const cupti_api& a = api();
  if (a.unavailable)
    return {cuda_collection::no_library,
            std::string(a.unavailable) + "; CUDA collection is off, the CPU profile goes on"};

  int devices = 0;
  const int status = a.get_device_count(&devices);
  if (status != 0 || devices <= 0)
    return {cuda_collection::no_device,
            status != 0 ? "no usable CUDA driver (cudaGetDeviceCount returned " + std::to_string(status) +
                              "); CUDA collection is off, the CPU profile goes on"
                        : "no CUDA device; CUDA collection is off, the CPU profile goes on"};

  if (!callbacks_registered_) {
    const CUptiResult r = a.activity_register_callbacks(on_buffer_requested, on_buffer_completed);
    if (r != CUPTI_SUCCESS)
      return {cuda_collection::cupti_error,
              "CUPTI refused its buffer callbacks: " + describe(a, r) + "; CUDA collection is off"};
    callbacks_registered_ = true;
  }
  {
    std::lock_guard lock(mutex_);
    std::uint64_t now = 0;
    a.get_timestamp(&now);
    const auto host = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
    decoder_ = activity_decoder(a, now ? host - static_cast<std::int64_t>(now) : 0);
  }
  for (const kind_entry& k : kinds) {
    const CUptiResult r = a.activity_enable(k.kind);
    if (r == CUPTI_SUCCESS || !k.required) continue;
    disable_all();
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
      return {cuda_collection::cupti_busy,
              "another CUPTI client (Nsight Systems or Nsight Compute?) holds CUPTI: proftrace's CUDA collection is "
              "off; NVTX ranges and profiler gating still work"};
    return {cuda_collection::cupti_error,
            "CUPTI could not enable activity collection: " + describe(a, r) + "; CUDA collection is off"};
  }
  // Runtime and driver records then carry the system thread id, the "tid"
  // of the thread's events in the trace.
  a.set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  devices_.clear();
  for (int d = 0; d < devices; ++d) {
    gpu_device_properties p;
    if (a.get_device_properties(d, &p) == 0) devices_.push_back(std::move(p));
  }
  running_.store(true, std::memory_order_release);
  return {cuda_collection::on, {}};
}

bool cupti_collector::first_report(const cuda_start& s) {
  const unsigned bit = 1u << static_cast<unsigned>(s.state);
  const bool first = (reported_ & bit) == 0;
  reported_ |= bit;
  return first;
}

void cupti_collector::disable_all() {
  for (const kind_entry& k : kinds) api().activity_disable(k.kind);
}

void cupti_collector::flush() {
  if (!running()) return;
  api().activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // not under mutex_: it calls back
  std::size_t dropped = 0;
  if (api().activity_get_num_dropped_records(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped > 0) {
    std::lock_guard lock(mutex_);
    decoder_.add_dropped(dropped);
  }
}

void cupti_collector::stop() {
  if (!running()) return;
  api().synchronize();
  flush();
  disable_all();
  running_.store(false, std::memory_order_release);
}

activity_decoder::result cupti_collector::take() {
  std::lock_guard lock(mutex_);
  return decoder_.take();
}

std::size_t cupti_collector::buffers_outstanding() const {
  std::lock_guard lock(mutex_);
  return outstanding_;
}

std::uint64_t cupti_collector::buffers_refused() const {
  std::lock_guard lock(mutex_);
  return refused_;
}

std::uint64_t cupti_collector::take_refused() {
  std::lock_guard lock(mutex_);
  return std::exchange(refused_, 0);
}

void CUPTIAPI cupti_collector::on_buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  const in_profiler_guard own_allocation;  // CUPTI's thread: never the program's memory
  cupti_collector& c = instance();
  *max_records = 0;
  *buffer = nullptr;
  *size = 0;
  {
    std::lock_guard lock(c.mutex_);
    if (c.outstanding_ >= c.buffer_cap_) {
      ++c.refused_;  // CUPTI drops the records and counts them (activity_get_num_dropped_records)
      return;
    }
    ++c.outstanding_;
  }
  *buffer = static_cast<std::uint8_t*>(::operator new(buffer_bytes, std::align_val_t(buffer_alignment), std::nothrow));
  if (*buffer == nullptr) {
    std::lock_guard lock(c.mutex_);
    --c.outstanding_;
    ++c.refused_;
    return;
  }
  *size = buffer_bytes;
}

void CUPTIAPI cupti_collector::on_buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                                                   std::size_t valid_bytes) {
  const in_profiler_guard own_allocation;
  cupti_collector& c = instance();
  {
    std::lock_guard lock(c.mutex_);
    if (buffer && valid_bytes > 0) c.decoder_.consume(buffer, valid_bytes);
    if (buffer && c.outstanding_ > 0) --c.outstanding_;
  }
  ::operator delete(buffer, std::align_val_t(buffer_alignment));
}

// ---- what sessions and scopes use (cuda_collection.hpp, recorder.hpp) ----

namespace {
std::atomic<std::uint64_t> next_thread_serial{0};
constinit thread_local std::uint64_t next_external_id = 0;
constexpr std::uint64_t sequence_mask = (std::uint64_t{1} << 36) - 1;
}  // namespace

std::uint64_t push_cuda_correlation() noexcept {
  std::uint64_t& next = next_external_id;
  if ((next & sequence_mask) == 0)  // first use on this thread, or 2^36 ids later
    next = cuda_external_id_marker | ((next_thread_serial.fetch_add(1, std::memory_order_relaxed) & 0xFFFF) << 36) | 1;
  const std::uint64_t id = next++;
  const cupti_api& api = cupti_collector::instance().api();
  return api.push_external_correlation_id(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id) == CUPTI_SUCCESS ? id : 0;
}

void pop_cuda_correlation() noexcept {
  std::uint64_t id = 0;
  cupti_collector::instance().api().pop_external_correlation_id(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &id);
}

bool cuda_collection_start(bool named) {
  cupti_collector& c = cupti_collector::instance();
  const cuda_start s = c.start();
  // As torch: CUDA that is simply not there (no library, driver or device)
  // is worth a warning only to a session that named it. CUDA that is there
  // and fails (another CUPTI client, a CUPTI error) always is. The kill
  // switch is the user's own choice: never.
  const bool absent = s.state == cuda_collection::no_library || s.state == cuda_collection::no_device;
  if (s.state != cuda_collection::on && s.state != cuda_collection::disabled && (named || !absent) &&
      c.first_report(s))
    warn(s.message);
  return s.state == cuda_collection::on;
}

void cuda_collection_stop() { cupti_collector::instance().stop(); }

gpu_batch cuda_collection_take() {
  cupti_collector& c = cupti_collector::instance();
  if (c.running()) {
    c.api().synchronize();
    c.flush();
  }
  activity_decoder::result r = c.take();
  return {std::move(r.activities), {r.counts.dropped_records, r.counts.zero_timestamp_kernels, c.take_refused()}};
}

std::vector<gpu_device_properties> cuda_devices() { return cupti_collector::instance().devices(); }

}  // namespace proftrace::detail
