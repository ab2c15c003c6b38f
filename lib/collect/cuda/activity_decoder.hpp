// Internal: CUPTI's activity records decoded into gpu_activity, and each GPU
// op and API call joined to the external id its thread pushed (the scope
// that launched it). Buffers may complete in any order and a correlation's
// records may sit in different buffers (per-thread buffers are the default
// since CUDA 13): the join runs over everything consumed, in take().
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "cupti_api.hpp"
#include "records/gpu_activity.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// The record structs of this toolkit's CUPTI (newer versions append fields).
#if CUPTI_API_VERSION >= 130000
using cupti_kernel_record = CUpti_ActivityKernel10;
using cupti_memcpy_record = CUpti_ActivityMemcpy6;
using cupti_memory_record = CUpti_ActivityMemory4;
#else
using cupti_kernel_record = CUpti_ActivityKernel9;
using cupti_memcpy_record = CUpti_ActivityMemcpy5;
using cupti_memory_record = CUpti_ActivityMemory3;
#endif
using cupti_memset_record = CUpti_ActivityMemset4;
using cupti_sync_record = CUpti_ActivitySynchronization2;
using cupti_overhead_record = CUpti_ActivityOverhead3;

struct decode_counts {
  std::uint64_t zero_timestamp_kernels = 0;  // start and end both 0: skipped
  std::uint64_t unknown_records = 0;         // kinds proftrace does not enable
  std::uint64_t dropped_records = 0;         // CUPTI's own count (buffers it could not get)
};

// One record, CUPTI timestamps moved by `offset_ns` onto the Unix clock. An
// external-correlation record fills `external` instead and returns nothing.
std::optional<gpu_activity> decode_record(const CUpti_Activity& record, const cupti_api& api, std::int64_t offset_ns,
                                          std::unordered_map<std::uint32_t, std::uint64_t>& external,
                                          decode_counts& counts);

class activity_decoder {
 public:
  explicit activity_decoder(const cupti_api& api, std::int64_t offset_ns = 0) : api_(&api), offset_ns_(offset_ns) {}

  // Every record of one completed buffer.
  void consume(std::uint8_t* buffer, std::size_t valid_bytes);
  void add_dropped(std::uint64_t n) { counts_.dropped_records += n; }

  struct result {
    std::vector<gpu_activity> activities;  // joined, by start time
    decode_counts counts;
  };
  // Joins what was consumed since the last take() and starts afresh.
  result take();

 private:
  const cupti_api* api_;
  std::int64_t offset_ns_;
  std::vector<gpu_activity> activities_;
  std::unordered_map<std::uint32_t, std::uint64_t> external_;  // correlation id -> external id
  decode_counts counts_;
};

}  // namespace proftrace::detail
