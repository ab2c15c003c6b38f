// Records: what the GPU side of one trace hands the writers and the
// aggregator (a collector's take() returns it), with no CUDA header.
#pragma once

#include <cstdint>
#include <vector>

#include "proftrace/detail/site.hpp"
#include "records/gpu_activity.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// What CUDA collection could not record, counted in the trace.
struct gpu_loss_counts {
  std::uint64_t dropped_records = 0;         // CUPTI's count: records it had no buffer for
  std::uint64_t zero_timestamp_kernels = 0;  // kernels CUPTI could not time: left out
  std::uint64_t refused_buffers = 0;         // buffer requests refused at the cap

  void add(const gpu_loss_counts& o) noexcept {
    dropped_records += o.dropped_records;
    zero_timestamp_kernels += o.zero_timestamp_kernels;
    refused_buffers += o.refused_buffers;
  }
};

// The GPU side of one trace: its activities (joined to external ids) and
// what could not be collected.
struct gpu_batch {
  std::vector<gpu_activity> activities;
  gpu_loss_counts losses;
};

// A scope's external id while CUPTI collects: bit 52 set (ids the flusher
// numbers itself stay far below), 16 bits of thread serial and 36 of
// sequence, all below 2^53 so JavaScript viewers keep them exact.
inline constexpr std::uint64_t cuda_external_id_marker = std::uint64_t{1} << 52;
constexpr bool is_cuda_external_id(std::uint64_t id) noexcept { return (id & cuda_external_id_marker) != 0; }


// A user scope projected onto a GPU stream its work ran on.
struct gpu_span {
  const site* where;
  std::uint64_t external_id;
  std::uint32_t device, stream;
  std::int64_t begin_ns, end_ns;
};

}  // namespace proftrace::detail
