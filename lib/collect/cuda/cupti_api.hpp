// Internal: every CUPTI and CUDA runtime call the CUDA collector makes, as a
// table of function pointers. real_cupti_api() binds libcupti and libcudart,
// opened with dlopen at its first call (cuda_library.hpp); tests build their
// own table to drive the paths no CI machine can reach (records from
// hand-built buffers, error codes 999 and 39, dropped records). Only this
// header and its users need CUDA headers.
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "records/gpu_activity.hpp"
#include "proftrace/config.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

struct cupti_api {
  CUptiResult (*activity_register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
  CUptiResult (*activity_enable)(CUpti_ActivityKind);
  CUptiResult (*activity_disable)(CUpti_ActivityKind);
  CUptiResult (*activity_flush_all)(std::uint32_t flag);
  CUptiResult (*activity_get_next_record)(std::uint8_t* buffer, std::size_t valid_bytes, CUpti_Activity** record);
  CUptiResult (*activity_get_num_dropped_records)(CUcontext, std::uint32_t stream, std::size_t* dropped);
  CUptiResult (*push_external_correlation_id)(CUpti_ExternalCorrelationKind, std::uint64_t id);
  CUptiResult (*pop_external_correlation_id)(CUpti_ExternalCorrelationKind, std::uint64_t* id);
  CUptiResult (*get_timestamp)(std::uint64_t* ns);
  CUptiResult (*get_callback_name)(CUpti_CallbackDomain, std::uint32_t cbid, const char** name);
  CUptiResult (*get_result_string)(CUptiResult, const char** text);
  CUptiResult (*set_thread_id_type)(CUpti_ActivityThreadIdType);
  // cudaGetDeviceCount; returns the cudaError_t as an int (0: success).
  int (*get_device_count)(int* count);
  // cudaDeviceSynchronize on every device (0: success).
  int (*synchronize)();
  // cudaGetDeviceProperties into Kineto's fields (0: success).
  int (*get_device_properties)(int device, gpu_device_properties* out);
  // Set where the libraries could not be had: why ("libcupti.so.13 not
  // found (dlopen: ...)"); every call above then fails.
  const char* unavailable = nullptr;
};

// The toolkit's CUPTI and CUDA runtime, loaded on the first call (once,
// thread-safe); a table of failing calls with `unavailable` set where a
// library or a symbol is missing. Never call it during static initialisation.
const cupti_api& real_cupti_api();
// Every call fails; `reason` (kept by the caller) becomes `unavailable`.
cupti_api unavailable_cupti_api(const char* reason);

// "CUPTI_ERROR_UNKNOWN (999)"-style text for a result, through the table.
std::string describe(const cupti_api& api, CUptiResult result);

}  // namespace proftrace::detail
