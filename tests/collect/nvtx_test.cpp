// NVTX ranges as an NVTX tool sees them. This binary is its own tool: it
// defines NVTX's static injection hook (InitializeInjectionNvtx2_fnptr), so
// the library's NVTX calls land in the recorder below, as they would in
// Nsight Systems. CUPTI collection is off (PROFTRACE_DISABLE_CUDA), as when
// Nsight holds CUPTI: the ranges must not depend on it.
#include <doctest/doctest.h>

// This file provides the injection hook, in place of NVTX's weak null one.
#include <cstdint>
#define NVTX_STATIC_INJECTION_IMPL
extern "C" int (*InitializeInjectionNvtx2_fnptr)(const void* (*)(std::uint32_t));
#include <nvtx3/nvToolsExt.h>
#include <proftrace/proftrace.hpp>
#include <sys/syscall.h>
#include <unistd.h>

#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

struct nvtx_call {
  std::string what;  // "push" or "pop"
  std::string name;  // pushes: the range's name
  bool registered = false;
};

std::mutex mutex;
std::map<long, std::vector<nvtx_call>> calls;  // per OS thread
std::deque<std::string> strings;               // registered strings; their addresses are the handles
std::map<std::string, int> registrations;
std::string domain_name;
int domain_token = 0;

long this_tid() { return static_cast<long>(::syscall(SYS_gettid)); }

nvtxDomainHandle_t domain_create(const char* name) {
  std::lock_guard lock(mutex);
  domain_name = name;
  return reinterpret_cast<nvtxDomainHandle_t>(&domain_token);
}

nvtxStringHandle_t register_string(nvtxDomainHandle_t d, const char* s) {
  std::lock_guard lock(mutex);
  CHECK(d == reinterpret_cast<nvtxDomainHandle_t>(&domain_token));
  ++registrations[s];
  return reinterpret_cast<nvtxStringHandle_t>(&strings.emplace_back(s));
}

int range_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  std::lock_guard lock(mutex);
  CHECK(d == reinterpret_cast<nvtxDomainHandle_t>(&domain_token));
  nvtx_call c{"push", "", a->messageType == NVTX_MESSAGE_TYPE_REGISTERED};
  c.name = c.registered ? *reinterpret_cast<const std::string*>(a->message.registered) : a->message.ascii;
  auto& mine = calls[this_tid()];
  mine.push_back(c);
  return 0;
}

int range_pop(nvtxDomainHandle_t) {
  std::lock_guard lock(mutex);
  calls[this_tid()].push_back({"pop", "", false});
  return 0;
}

int initialize_injection(NvtxGetExportTableFunc_t get_export_table) {
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size)) return 0;
  *table[NVTX_CBID_CORE2_DomainCreateA] = reinterpret_cast<NvtxFunctionPointer>(&domain_create);
  *table[NVTX_CBID_CORE2_DomainRegisterStringA] = reinterpret_cast<NvtxFunctionPointer>(&register_string);
  *table[NVTX_CBID_CORE2_DomainRangePushEx] = reinterpret_cast<NvtxFunctionPointer>(&range_push);
  *table[NVTX_CBID_CORE2_DomainRangePop] = reinterpret_cast<NvtxFunctionPointer>(&range_pop);
  return 1;
}

std::map<long, std::vector<nvtx_call>> take_calls() {
  std::lock_guard lock(mutex);
  return std::exchange(calls, {});
}

// "push name" / "pop" lines of one thread, in order.
std::vector<std::string> script(const std::vector<nvtx_call>& c) {
  std::vector<std::string> out;
  for (const auto& x : c) out.push_back(x.what == "push" ? "push " + x.name : "pop");
  return out;
}

}  // namespace

int (*InitializeInjectionNvtx2_fnptr)(const void* (*)(std::uint32_t)) = &initialize_injection;

TEST_CASE("every recorded scope is an NVTX range in the proftrace domain, names registered once per site") {
  take_calls();
  proftrace::profile p({.schedule = proftrace::schedule({.wait = 1, .active = 2})});
  p.start();
  long worker_tid = 0;
  for (int i = 0; i < 3; ++i) {
    PROF_STEP();
    PROF_SCOPE("outer");
    {
      PROF_SCOPE_SHAPES("gemm", {4, 4});
    }
    if (i == 2) {
      std::thread([&] {
        worker_tid = this_tid();
        PROF_FUNCTION();
      }).join();
    }
  }
  p.stop();

  auto seen = take_calls();
  CHECK(proftrace::detail::nvtx_tool_attached());
  CHECK(domain_name == "proftrace");
  // Step 0 waits: nothing recorded, no range. Steps 1 and 2 record.
  const std::vector<std::string> main_thread{"push ProfilerStep#1", "push outer", "push gemm", "pop", "pop", "pop",
                                             "push ProfilerStep#2", "push outer", "push gemm", "pop", "pop", "pop"};
  CHECK(script(seen[this_tid()]) == main_thread);
  CHECK(script(seen[worker_tid]) == std::vector<std::string>{"push operator()", "pop"});
  for (const auto& c : seen[this_tid()])
    if (c.what == "push") CHECK_MESSAGE(c.registered == (c.name.rfind("ProfilerStep#", 0) != 0), c.name);
  std::lock_guard lock(mutex);
  CHECK(registrations["outer"] == 1);
  CHECK(registrations["gemm"] == 1);
}

TEST_CASE("no NVTX range without a recording session or without the nvtx activity") {
  take_calls();
  { PROF_SCOPE("no session"); }
  {
    proftrace::profile p({.activities = {proftrace::activity::cpu}});
    p.start();
    { PROF_SCOPE("cpu only"); }
    p.stop();
    CHECK(p.key_averages().rows.size() == 1);
  }
  CHECK(take_calls().empty());

  proftrace::profile p({.activities = {proftrace::activity::cpu, proftrace::activity::nvtx}});
  p.start();
  { PROF_SCOPE("both"); }
  p.stop();
  CHECK(script(take_calls()[this_tid()]) == std::vector<std::string>{"push both", "pop"});
}
