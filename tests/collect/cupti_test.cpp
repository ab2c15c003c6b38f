// The CUDA collector's CUPTI layer without a GPU: records built in the test
// and fed through an injected CUPTI table — decoding of every kind, the join
// to external ids across buffers in any order, CUDA-graph launches sharing a
// correlation id, zero-timestamp kernels, dropped records, the capped
// buffers, and each start-up outcome (no driver, no device, another CUPTI
// client (39), CUPTI_ERROR_UNKNOWN (999), the kill switch). Then the real
// libraries on this machine: no driver, so collection stays off with a reason.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "collect/cuda/cupti_collector.hpp"

namespace {

using namespace proftrace::detail;

// ---- the fake CUPTI ----
struct fake_buffer {
  std::vector<const CUpti_Activity*> records;
  std::size_t next = 0;
};
std::map<const std::uint8_t*, fake_buffer*> buffers;  // what get_next_record walks
int device_count_status = 0;
int device_count = 1;
CUptiResult enable_result = CUPTI_SUCCESS;
CUpti_ActivityKind failing_kind = CUPTI_ACTIVITY_KIND_INVALID;
std::vector<CUpti_ActivityKind> enabled, disabled;
std::size_t dropped = 0;
int flushes = 0;
CUpti_BuffersCallbackRequestFunc request_buffer = nullptr;
CUpti_BuffersCallbackCompleteFunc complete_buffer = nullptr;

void reset_fake() {
  buffers.clear();
  device_count_status = 0;
  device_count = 1;
  enable_result = CUPTI_SUCCESS;
  failing_kind = CUPTI_ACTIVITY_KIND_INVALID;
  enabled.clear();
  disabled.clear();
  dropped = 0;
  flushes = 0;
}

const cupti_api fake_api{
    [](CUpti_BuffersCallbackRequestFunc req, CUpti_BuffersCallbackCompleteFunc done) {
      request_buffer = req;
      complete_buffer = done;
      return CUPTI_SUCCESS;
    },
    [](CUpti_ActivityKind k) {
      if (k == failing_kind) return enable_result;
      enabled.push_back(k);
      return CUPTI_SUCCESS;
    },
    [](CUpti_ActivityKind k) {
      disabled.push_back(k);
      return CUPTI_SUCCESS;
    },
    [](std::uint32_t) {
      ++flushes;
      return CUPTI_SUCCESS;
    },
    [](std::uint8_t* buffer, std::size_t, CUpti_Activity** record) {
      auto it = buffers.find(buffer);
      if (it == buffers.end() || it->second->next >= it->second->records.size()) return CUPTI_ERROR_MAX_LIMIT_REACHED;
      *record = const_cast<CUpti_Activity*>(it->second->records[it->second->next++]);
      return CUPTI_SUCCESS;
    },
    [](CUcontext, std::uint32_t, std::size_t* n) {
      *n = dropped;
      dropped = 0;  // CUPTI resets the count on read
      return CUPTI_SUCCESS;
    },
    [](CUpti_ExternalCorrelationKind, std::uint64_t) { return CUPTI_SUCCESS; },
    [](CUpti_ExternalCorrelationKind, std::uint64_t* id) {
      *id = 0;
      return CUPTI_SUCCESS;
    },
    [](std::uint64_t* ns) {
      *ns = 0;
      return CUPTI_SUCCESS;
    },
    [](CUpti_CallbackDomain domain, std::uint32_t cbid, const char** name) {
      if (cbid == 211) {
        *name = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "cudaLaunchKernel_v7000" : "cuLaunchKernel";
        return CUPTI_SUCCESS;
      }
      return CUPTI_ERROR_INVALID_PARAMETER;
    },
    [](CUptiResult r, const char** text) {
      *text = r == CUPTI_ERROR_UNKNOWN ? "CUPTI_ERROR_UNKNOWN" : "CUPTI_ERROR_OTHER";
      return CUPTI_SUCCESS;
    },
    [](CUpti_ActivityThreadIdType) { return CUPTI_SUCCESS; },
    [](int* count) {
      *count = device_count;
      return device_count_status;
    },
    [] { return 0; },
    [](int device, gpu_device_properties* p) {
      p->id = device;
      p->name = "Fake GPU";
      p->num_sms = 132;
      return 0;
    },
};

// ---- records ----
cupti_kernel_record kernel(std::uint32_t correlation, std::uint64_t start, std::uint64_t end, std::uint32_t stream = 7) {
  cupti_kernel_record k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.queued = start - 100;
  k.deviceId = 0;
  k.contextId = 1;
  k.streamId = stream;
  k.correlationId = correlation;
  k.gridX = 4, k.gridY = 106, k.gridZ = 1;
  k.blockX = 128, k.blockY = 1, k.blockZ = 1;
  k.registersPerThread = 30;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 512;
  k.name = "axpy_kernel";
  return k;
}

CUpti_ActivityAPI api_call(CUpti_ActivityKind kind, std::uint32_t correlation, std::uint64_t start) {
  CUpti_ActivityAPI a{};
  a.kind = kind;
  a.cbid = 211;
  a.start = start;
  a.end = start + 50;
  a.processId = 1102;
  a.threadId = 77;
  a.correlationId = correlation;
  return a;
}

CUpti_ActivityExternalCorrelation external(std::uint32_t correlation, std::uint64_t id) {
  CUpti_ActivityExternalCorrelation e{};
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  e.externalId = id;
  e.correlationId = correlation;
  return e;
}

template <class... R>
fake_buffer make_buffer(const R&... records) {
  return fake_buffer{{reinterpret_cast<const CUpti_Activity*>(&records)...}};
}

void feed(activity_decoder& d, fake_buffer& b) {
  auto* key = reinterpret_cast<std::uint8_t*>(&b);
  buffers[key] = &b;
  d.consume(key, 1);
}

}  // namespace

TEST_CASE("every record kind decodes into Kineto's names and fields") {
  reset_fake();
  cupti_memcpy_record copy{};
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  copy.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  copy.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  copy.bytes = 256;
  copy.start = 2000, copy.end = 2256;
  copy.streamId = 7, copy.correlationId = 12;
  cupti_memset_record set{};
  set.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  set.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  set.bytes = 64, set.start = 3000, set.end = 3010, set.correlationId = 13;
  cupti_sync_record sync{};
  sync.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  sync.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  sync.start = 4000, sync.end = 4500, sync.contextId = 1, sync.streamId = 7;
  cupti_memory_record alloc{};
  alloc.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  alloc.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  alloc.address = 0x7f0000, alloc.bytes = 1 << 20, alloc.timestamp = 500, alloc.correlationId = 14;
  cupti_memory_record release = alloc;
  release.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  release.timestamp = 5000;
  cupti_overhead_record overhead{};
  overhead.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  overhead.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  overhead.objectId.pt.threadId = 77;
  overhead.start = 100, overhead.end = 200;
  const auto k = kernel(11, 1000, 1900);
  const auto launch = api_call(CUPTI_ACTIVITY_KIND_RUNTIME, 11, 900);
  const auto driver = api_call(CUPTI_ACTIVITY_KIND_DRIVER, 15, 950);
  CUpti_Activity unknown{CUPTI_ACTIVITY_KIND_PC_SAMPLING};

  activity_decoder d(fake_api, 1'000'000);  // CUPTI's clock is 1 ms behind the Unix clock
  auto b = make_buffer(k, launch, driver, copy, set, sync, alloc, release, overhead, unknown);
  feed(d, b);
  const auto r = d.take();
  CHECK(r.counts.unknown_records == 1);
  REQUIRE(r.activities.size() == 9);
  std::map<std::string, gpu_activity> by_name;
  for (const auto& a : r.activities) by_name[a.name] = a;

  const gpu_activity& kd = by_name.at("axpy_kernel");
  CHECK(kd.kind == gpu_activity_kind::kernel);
  CHECK(kd.start_ns == 1'001'000);
  CHECK(kd.end_ns == 1'001'900);
  CHECK(kd.queued_ns == 1'000'900);
  CHECK(kd.shared_memory == 1536);
  CHECK(kd.grid == std::array<std::int32_t, 3>{4, 106, 1});
  CHECK(kd.registers_per_thread == 30);
  CHECK(by_name.at("cudaLaunchKernel").kind == gpu_activity_kind::runtime);  // "_v7000" stripped
  CHECK(by_name.at("cudaLaunchKernel").thread == 77);
  CHECK(by_name.at("cuLaunchKernel").kind == gpu_activity_kind::driver);
  CHECK(by_name.at("Memcpy HtoD (Pageable -> Device)").bytes == 256);
  CHECK(by_name.at("Memset (Device)").bytes == 64);
  CHECK(by_name.at("Stream Sync").kind == gpu_activity_kind::sync);
  CHECK(by_name.at("alloc").address == 0x7f0000);
  CHECK(by_name.at("free").is_free);
  CHECK(by_name.at("CUPTI overhead").thread == 77);
  for (std::size_t i = 1; i < r.activities.size(); ++i) CHECK(r.activities[i - 1].start_ns <= r.activities[i].start_ns);
}

TEST_CASE("GPU work joins its launching scope's external id across buffers, in any order") {
  reset_fake();
  const auto k1 = kernel(21, 1000, 2000);
  const auto k2 = kernel(22, 3000, 4000);
  const auto graph_a = kernel(23, 5000, 5100, 9);  // one graph launch: its kernels share the correlation id
  const auto graph_b = kernel(23, 5200, 5300, 9);
  const auto orphan = kernel(24, 6000, 6100);      // launched with no scope open: external id 0
  const auto zero = kernel(25, 0, 0);              // CUPTI could not time it: skipped, counted
  const auto e1 = external(21, 101), e2 = external(22, 102), e3 = external(23, 103);
  const auto l1 = api_call(CUPTI_ACTIVITY_KIND_RUNTIME, 21, 900);

  activity_decoder d(fake_api);
  // The kernels' buffer completes before the buffer holding their external ids.
  auto gpu = make_buffer(k1, k2, graph_a, graph_b, orphan, zero);
  auto host = make_buffer(e1, l1, e2, e3);
  feed(d, gpu);
  feed(d, host);
  const auto r = d.take();
  CHECK(r.counts.zero_timestamp_kernels == 1);
  std::map<std::uint64_t, int> kernels_of;
  for (const auto& a : r.activities) {
    if (a.kind == gpu_activity_kind::kernel) ++kernels_of[a.external_id];
    if (a.kind == gpu_activity_kind::runtime) CHECK(a.external_id == 101);
  }
  CHECK(kernels_of == std::map<std::uint64_t, int>{{0, 1}, {101, 1}, {102, 1}, {103, 2}});
  CHECK(d.take().activities.empty());  // take() starts afresh
}

TEST_CASE("start-up: the kill switch, no driver, no device, another CUPTI client, CUPTI errors") {
  cupti_collector& c = cupti_collector::instance();
  reset_fake();
  c.use_api(&fake_api);

  ::setenv("PROFTRACE_DISABLE_CUDA", "1", 1);
  auto s = c.start();
  ::unsetenv("PROFTRACE_DISABLE_CUDA");
  CHECK(s.state == cuda_collection::disabled);
  CHECK(s.message.find("PROFTRACE_DISABLE_CUDA") != std::string::npos);

  device_count_status = 35;  // cudaErrorInsufficientDriver
  s = c.start();
  CHECK(s.state == cuda_collection::no_device);
  CHECK(s.message.find("35") != std::string::npos);
  CHECK(s.message.find("the CPU profile goes on") != std::string::npos);
  CHECK(enabled.empty());

  device_count_status = 0;
  device_count = 0;
  CHECK(c.start().state == cuda_collection::no_device);

  device_count = 1;
  failing_kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  enable_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  s = c.start();
  CHECK(s.state == cuda_collection::cupti_busy);
  CHECK(s.message.find("NVTX ranges and profiler gating still work") != std::string::npos);
  CHECK_FALSE(c.running());

  enabled.clear();
  disabled.clear();
  failing_kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  enable_result = CUPTI_ERROR_UNKNOWN;
  s = c.start();
  CHECK(s.state == cuda_collection::cupti_error);
  CHECK(s.message.find("CUPTI_ERROR_UNKNOWN (999)") != std::string::npos);
  CHECK(enabled.size() == 2);  // kernel and runtime were on ...
  CHECK(disabled.size() == 9);  // ... and everything is switched off again

  // An optional kind CUPTI refuses (MEMORY2 on an old driver) leaves collection on.
  failing_kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  s = c.start();
  CHECK(s.state == cuda_collection::on);
  CHECK(s.message.empty());
  CHECK(c.running());
  c.stop();
  CHECK_FALSE(c.running());
  CHECK(flushes == 1);
  c.use_api(nullptr);
}

TEST_CASE("activity buffers: capped, consumed when CUPTI completes them, drops counted") {
  cupti_collector& c = cupti_collector::instance();
  reset_fake();
  c.use_api(&fake_api, 2);
  REQUIRE(c.start().state == cuda_collection::on);
  REQUIRE(static_cast<bool>(request_buffer));

  std::uint8_t* b[3] = {};
  std::size_t size = 0, max_records = 1;
  for (auto& buffer : b) request_buffer(&buffer, &size, &max_records);
  CHECK(b[0] != nullptr);
  CHECK(b[1] != nullptr);
  CHECK(b[2] == nullptr);  // over the cap: CUPTI drops what it cannot store, and counts it
  CHECK(max_records == 0);
  CHECK(reinterpret_cast<std::uintptr_t>(b[0]) % 8 == 0);
  CHECK(c.buffers_outstanding() == 2);
  CHECK(c.buffers_refused() == 1);

  const auto k = kernel(31, 100, 200);
  const auto e = external(31, 7);
  auto records = make_buffer(k, e);
  buffers[b[0]] = &records;
  complete_buffer(nullptr, 0, b[0], cupti_collector::buffer_bytes, 64);
  complete_buffer(nullptr, 0, b[1], cupti_collector::buffer_bytes, 0);
  CHECK(c.buffers_outstanding() == 0);

  dropped = 5;
  c.stop();
  const auto r = c.take();
  CHECK(r.counts.dropped_records == 5);
  REQUIRE(r.activities.size() == 1);
  CHECK(r.activities[0].external_id == 7);
  c.use_api(nullptr);
}

#if !PROFTRACE_TEST_SANITIZED
TEST_CASE("the real CUPTI and CUDA runtime on this machine") {
  cupti_collector& c = cupti_collector::instance();
  c.use_api(nullptr);
  CHECK(describe(real_cupti_api(), CUPTI_ERROR_UNKNOWN).find("999") != std::string::npos);
  int devices = 0;
  const int status = real_cupti_api().get_device_count(&devices);
  const auto s = c.start();
  if (status != 0 || devices == 0) {
    // CI: libcupti and libcudart load without a driver, and collection stays off with its reason.
    CHECK(s.state == cuda_collection::no_device);
    CHECK_FALSE(s.message.empty());
    CHECK_FALSE(c.running());
  } else {
    MESSAGE("a CUDA device is present: collection " << (s.state == cuda_collection::on ? "started" : s.message));
    c.stop();
  }
}
#endif
