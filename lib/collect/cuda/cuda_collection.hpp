// Internal: what sessions and the flusher need of the CUDA collector, with
// no CUDA header (lib/collect/cuda/cupti_collector.cpp implements it).
#pragma once

#include <vector>

#include "records/gpu_batch.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

#if PROFTRACE_WITH_CUDA
// Starts CUPTI collection for a session. False when it stays off: with one
// warning per reason and process where CUDA is there and fails (another
// CUPTI client, a CUPTI error), or is missing (no library, driver or device)
// and the session `named` activity::cuda; silently for PROFTRACE_DISABLE_CUDA.
bool cuda_collection_start(bool named);
void cuda_collection_stop();
// Waits for the device, flushes CUPTI's buffers and returns what they held.
gpu_batch cuda_collection_take();
// The visible devices' properties, read when collection started.
std::vector<gpu_device_properties> cuda_devices();
#endif

}  // namespace proftrace::detail
