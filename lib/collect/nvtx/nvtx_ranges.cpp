// NVTX3 ranges for recorded scopes: Nsight Systems (or any NVTX tool) sees
// each scope under its own name in the "proftrace" domain. With no tool
// attached every call below returns at NVTX's null function pointer.
#include <nvtx3/nvToolsExt.h>

#include <string>

#include "proftrace/detail/recorder.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

nvtxDomainHandle_t proftrace_domain() noexcept {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA("proftrace");
  return domain;
}

// A site's slot once registration was tried and the tool gave no handle
// (no tool attached): its name then goes as a plain string.
const char not_registered = 0;

nvtxEventAttributes_t attributes_named(const char* name) noexcept {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = name;
  return a;
}

}  // namespace

void push_nvtx_range(const site* s) noexcept {
  const void* handle = s->nvtx_name.load(std::memory_order_acquire);
  if (handle == nullptr) {
    // Two threads may race here: both register the same string, which NVTX
    // allows; either handle names it.
    handle = nvtxDomainRegisterStringA(proftrace_domain(), s->name);
    if (handle == nullptr) handle = &not_registered;
    s->nvtx_name.store(handle, std::memory_order_release);
  }
  nvtxEventAttributes_t a = attributes_named(s->name);
  if (handle != &not_registered) {
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = static_cast<nvtxStringHandle_t>(const_cast<void*>(handle));
  }
  nvtxDomainRangePushEx(proftrace_domain(), &a);
}

void push_nvtx_step(std::int64_t step) noexcept {
  char name[32];
  std::snprintf(name, sizeof name, "ProfilerStep#%lld", static_cast<long long>(step));
  const nvtxEventAttributes_t a = attributes_named(name);
  nvtxDomainRangePushEx(proftrace_domain(), &a);
}

void pop_nvtx_range() noexcept { nvtxDomainRangePop(proftrace_domain()); }

// NVTX hands out no domain while no tool is attached (its creation call is
// a null function pointer then), and a tool attaches only when the process
// starts, so this answer holds for the process's life.
bool nvtx_tool_attached() noexcept { return proftrace_domain() != nullptr; }

}  // namespace proftrace::detail
