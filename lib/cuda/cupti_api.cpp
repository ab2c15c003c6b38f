#include "cupti_api.hpp"

#include <cuda_runtime_api.h>

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

const cupti_api& real_cupti_api() {
  static const cupti_api api{
      cuptiActivityRegisterCallbacks,
      cuptiActivityEnable,
      cuptiActivityDisable,
      cuptiActivityFlushAll,
      cuptiActivityGetNextRecord,
      cuptiActivityGetNumDroppedRecords,
      cuptiActivityPushExternalCorrelationId,
      cuptiActivityPopExternalCorrelationId,
      cuptiGetTimestamp,
      [](CUpti_CallbackDomain domain, std::uint32_t cbid, const char** name) {
        return cuptiGetCallbackName(domain, cbid, name);
      },
      cuptiGetResultString,
      [](int* count) { return static_cast<int>(cudaGetDeviceCount(count)); },
  };
  return api;
}

std::string describe(const cupti_api& api, CUptiResult result) {
  const char* text = nullptr;
  std::string out = api.get_result_string && api.get_result_string(result, &text) == CUPTI_SUCCESS && text
                        ? std::string(text)
                        : std::string("CUPTI error");
  return out + " (" + std::to_string(static_cast<int>(result)) + ")";
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
