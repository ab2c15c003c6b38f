// The CUDA collector inside real sessions, with a fake CUPTI that turns each
// "launch" into the records a GPU would produce (external correlation,
// runtime call, kernel): kernels carry their launching scope's External id,
// flows and deviceProperties are written, GPU time lands on the launching
// scope (Self CUDA) and its ancestors (CUDA total), user scopes are projected
// onto their streams, stacks by self CUDA time; then the ways collection
// stays off (another CUPTI client, the kill switch, no driver) with one
// warning each and a complete CPU profile.
#include <doctest/doctest.h>

#include <proftrace/cuda.hpp>
#include <proftrace/proftrace.hpp>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "collect/cuda/cupti_collector.hpp"
#include "test_support.hpp"

namespace {

using namespace proftrace::detail;

std::uint64_t realtime_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

// ---- a fake GPU behind the CUPTI table ----
enum class gpu_op { kernel, alloc, free };
struct launch {
  std::uint64_t external_id;
  std::uint32_t thread;
  std::uint64_t at;
  std::uint64_t duration;
  std::uint32_t stream;
  gpu_op op = gpu_op::kernel;
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  CUpti_ActivityMemoryKind memory_kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
};
std::mutex mutex;
std::vector<launch> launches;
thread_local std::vector<std::uint64_t> pushed;  // this thread's external-correlation stack
CUpti_BuffersCallbackRequestFunc request_buffer = nullptr;
CUpti_BuffersCallbackCompleteFunc complete_buffer = nullptr;
CUptiResult enable_result = CUPTI_SUCCESS;
std::map<const std::uint8_t*, std::vector<std::vector<std::uint8_t>>*> filled;  // buffer -> its records
std::map<const std::uint8_t*, std::size_t> cursor;

// What the program does on the GPU: one kernel of `duration` ns on `stream`.
void gpu_launch(std::uint64_t duration, std::uint32_t stream = 7) {
  std::lock_guard lock(mutex);
  launches.push_back({pushed.empty() ? 0 : pushed.back(), static_cast<std::uint32_t>(::syscall(SYS_gettid)),
                      realtime_ns(), duration, stream});
}

// cudaMalloc / cudaMallocHost and cudaFree: a MEMORY2 record each.
void gpu_memory(gpu_op op, std::uint64_t address, std::uint64_t bytes = 0,
                CUpti_ActivityMemoryKind kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) {
  std::lock_guard lock(mutex);
  launches.push_back({pushed.empty() ? 0 : pushed.back(), static_cast<std::uint32_t>(::syscall(SYS_gettid)),
                      realtime_ns(), 0, 0, op, address, bytes, kind});
}

template <class R>
std::vector<std::uint8_t> bytes_of(const R& r) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(&r);
  return {p, p + sizeof r};
}

// CUPTI's flush: every launch since the last flush becomes records in one buffer.
CUptiResult flush_all(std::uint32_t) {
  auto* records = new std::vector<std::vector<std::uint8_t>>;
  {
    std::lock_guard lock(mutex);
    std::uint32_t correlation = 1000;
    for (const launch& l : launches) {
      ++correlation;
      if (l.external_id) {
        CUpti_ActivityExternalCorrelation e{};
        e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
        e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
        e.externalId = l.external_id;
        e.correlationId = correlation;
        records->push_back(bytes_of(e));
      }
      CUpti_ActivityAPI call{};
      call.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
      call.cbid = 211;
      call.start = l.at;
      call.end = l.at + 300;
      call.threadId = l.thread;
      call.correlationId = correlation;
      records->push_back(bytes_of(call));
      if (l.op != gpu_op::kernel) {
        cupti_memory_record m{};
        m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
        m.memoryOperationType = l.op == gpu_op::alloc ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION
                                                      : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
        m.memoryKind = l.memory_kind;
        m.correlationId = correlation;
        m.address = l.address;
        m.bytes = l.bytes;
        m.timestamp = l.at + 100;
        records->push_back(bytes_of(m));
        continue;
      }
      cupti_kernel_record k{};
      k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
      k.start = l.at + 1000;
      k.end = l.at + 1000 + l.duration;
      k.streamId = l.stream;
      k.contextId = 1;
      k.correlationId = correlation;
      k.gridX = k.gridY = k.gridZ = 1;
      k.blockX = 256, k.blockY = k.blockZ = 1;
      k.name = "fake_kernel";
      records->push_back(bytes_of(k));
    }
    launches.clear();
  }
  std::uint8_t* buffer = nullptr;
  std::size_t size = 0, max_records = 0;
  request_buffer(&buffer, &size, &max_records);
  REQUIRE(buffer != nullptr);
  filled[buffer] = records;
  cursor[buffer] = 0;
  complete_buffer(nullptr, 0, buffer, size, 1);
  filled.erase(buffer);
  delete records;
  return CUPTI_SUCCESS;
}

const cupti_api fake_gpu{
    [](CUpti_BuffersCallbackRequestFunc req, CUpti_BuffersCallbackCompleteFunc done) {
      request_buffer = req;
      complete_buffer = done;
      return CUPTI_SUCCESS;
    },
    [](CUpti_ActivityKind k) { return k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? enable_result : CUPTI_SUCCESS; },
    [](CUpti_ActivityKind) { return CUPTI_SUCCESS; },
    flush_all,
    [](std::uint8_t* buffer, std::size_t, CUpti_Activity** record) {
      const auto it = filled.find(buffer);
      if (it == filled.end() || cursor[buffer] >= it->second->size()) return CUPTI_ERROR_MAX_LIMIT_REACHED;
      *record = reinterpret_cast<CUpti_Activity*>((*it->second)[cursor[buffer]++].data());
      return CUPTI_SUCCESS;
    },
    [](CUcontext, std::uint32_t, std::size_t* n) {
      *n = 0;
      return CUPTI_SUCCESS;
    },
    [](CUpti_ExternalCorrelationKind, std::uint64_t id) {
      pushed.push_back(id);
      return CUPTI_SUCCESS;
    },
    [](CUpti_ExternalCorrelationKind, std::uint64_t* id) {
      *id = pushed.empty() ? 0 : pushed.back();
      if (!pushed.empty()) pushed.pop_back();
      return CUPTI_SUCCESS;
    },
    [](std::uint64_t* ns) {
      *ns = realtime_ns();
      return CUPTI_SUCCESS;
    },
    [](CUpti_CallbackDomain, std::uint32_t, const char** name) {
      *name = "cudaLaunchKernel_v7000";
      return CUPTI_SUCCESS;
    },
    [](CUptiResult, const char** text) {
      *text = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
      return CUPTI_SUCCESS;
    },
    [](CUpti_ActivityThreadIdType) { return CUPTI_SUCCESS; },
    [](int* count) {
      *count = 1;
      return 0;
    },
    [] { return 0; },
    [](int device, gpu_device_properties* p) {
      p->id = device;
      p->name = "Fake GPU";
      p->num_sms = 132;
      p->max_threads_per_multiprocessor = 2048;
      p->warp_size = 32;
      return 0;
    },
};

struct fake_gpu_installed {
  fake_gpu_installed() {
    enable_result = CUPTI_SUCCESS;
    cupti_collector::instance().use_api(&fake_gpu);
  }
  ~fake_gpu_installed() { cupti_collector::instance().use_api(nullptr); }
};

std::map<std::string, proftrace::event_average> rows_of(const proftrace::session& p) {
  std::map<std::string, proftrace::event_average> m;
  for (auto& r : p.key_averages().rows) m[r.key] = r;
  return m;
}

std::vector<boost::json::object> with_cat(const boost::json::object& trace, std::string_view cat) {
  std::vector<boost::json::object> out;
  for (const auto& e : trace.at("traceEvents").as_array())
    if (e.as_object().contains("cat") && e.as_object().at("cat").as_string() == cat) out.push_back(e.as_object());
  return out;
}

}  // namespace

TEST_CASE("kernels join the scopes that launched them: trace, flows, table, stacks") {
  fake_gpu_installed gpu;
  test_support::temp_dir out("cuda_session");
  proftrace::profile p({.with_stack = true});
  p.start();
  {
    PROF_SCOPE("outer");
    gpu_launch(2000);
    {
      PROF_OP("inner");
      gpu_launch(5000, 7);
      gpu_launch(5000, 13);
    }
  }
  std::thread([] {
    PROF_SCOPE("worker");
    gpu_launch(3000, 7);
  }).join();
  gpu_launch(700);  // outside any scope: written, attributed to nothing
  p.stop();
  p.export_chrome_trace(out.path / "t.json");

  auto rows = rows_of(p);
  CHECK(rows["inner"].self_cuda_time_total_ns == 10'000);
  CHECK(rows["inner"].cuda_time_total_ns == 10'000);
  CHECK(rows["outer"].self_cuda_time_total_ns == 2'000);
  CHECK(rows["outer"].cuda_time_total_ns == 12'000);
  CHECK(rows["worker"].self_cuda_time_total_ns == 3'000);
  const std::string table = p.key_averages().table({.sort_by = "self_cuda_time_total"});
  CHECK(table.find("Self CUDA") != std::string::npos);
  CHECK(table.find("Self CUDA time total: 15.000us") != std::string::npos);

  const auto trace = test_support::read_trace(out.path / "t.json");
  REQUIRE(trace.at("deviceProperties").as_array().size() == 1);
  CHECK(trace.at("deviceProperties").as_array()[0].at("name").as_string() == "Fake GPU");
  std::map<std::string, std::int64_t> id_of;
  for (const auto& e : trace.at("traceEvents").as_array()) {
    const auto& o = e.as_object();
    if (o.at("ph").as_string() == "X" && (o.at("cat").as_string() == "user_annotation" || o.at("cat").as_string() == "cpu_op"))
      id_of[std::string(o.at("name").as_string())] = o.at("args").at("External id").as_int64();
  }
  const auto kernels = with_cat(trace, "kernel");
  REQUIRE(kernels.size() == 5);
  std::map<std::int64_t, int> kernels_per_id;
  for (const auto& k : kernels) ++kernels_per_id[k.at("args").at("External id").as_int64()];
  CHECK(kernels_per_id[id_of["outer"]] == 1);
  CHECK(kernels_per_id[id_of["inner"]] == 2);
  CHECK(kernels_per_id[id_of["worker"]] == 1);
  CHECK(kernels_per_id[0] == 1);
  // The device's properties give each kernel its occupancy figures (1 block of 8 warps on 132 SMs).
  CHECK(kernels[0].at("args").at("blocks per SM").as_double() == doctest::Approx(0.01));
  CHECK(kernels[0].at("args").at("warps per SM").as_double() == doctest::Approx(0.06));
  CHECK(kernels[0].at("args").at("est. achieved occupancy %").as_int64() == 0);
  CHECK(with_cat(trace, "ac2g").size() == 10);
  const auto launches_written = with_cat(trace, "cuda_runtime");
  REQUIRE(launches_written.size() == 5);
  CHECK(launches_written[0].at("name").as_string() == "cudaLaunchKernel");
  // "outer" is a user annotation: projected onto streams 7 and 13 (its own and inner's kernels).
  const auto annotations = with_cat(trace, "gpu_user_annotation");
  std::map<std::pair<std::string, std::int64_t>, int> on_stream;
  for (const auto& a : annotations) ++on_stream[{std::string(a.at("name").as_string()), a.at("tid").as_int64()}];
  CHECK(on_stream[{"outer", 7}] == 1);
  CHECK(on_stream[{"outer", 13}] == 1);
  CHECK(on_stream[{"worker", 7}] == 1);
  CHECK(annotations.size() == 3);
  CHECK(trace.at("proftrace").at("cuda_dropped_records").as_int64() == 0);

  p.export_stacks(out.path / "cuda.stacks", "self_cuda_time_total");
  const std::string stacks = test_support::read_text(out.path / "cuda.stacks");
  CHECK_MESSAGE(stacks.find(";inner 10\n") != std::string::npos, stacks);
}

TEST_CASE("kernels launched in a step outside any scope count on ProfilerStep") {
  fake_gpu_installed gpu;
  proftrace::profile p({.schedule = proftrace::schedule({.wait = 0, .warmup = 1, .active = 2})});
  p.start();
  for (int i = 0; i < 3; ++i) {
    PROF_STEP();
    gpu_launch(1000);
    {
      PROF_SCOPE("scoped");
      gpu_launch(500);
    }
  }
  p.stop();
  auto rows = rows_of(p);
  CHECK(rows["ProfilerStep*"].count == 2);
  CHECK(rows["ProfilerStep*"].self_cuda_time_total_ns == 2'000);
  CHECK(rows["ProfilerStep*"].cuda_time_total_ns == 3'000);
  CHECK(rows["scoped"].self_cuda_time_total_ns == 1'000);
}

TEST_CASE("CUDA allocations reach the memory collector: events, table, peaks, timeline") {
  fake_gpu_installed gpu;
  test_support::temp_dir out("cuda_memory");
  proftrace::profile p({.profile_memory = true});
  p.start();
  {
    PROF_SCOPE("model");
    {
      PROF_SCOPE("weights");
      gpu_memory(gpu_op::alloc, 0xA000, 4096);
    }
    {
      PROF_SCOPE("activations");
      gpu_memory(gpu_op::alloc, 0xB000, 1024);
      gpu_memory(gpu_op::free, 0xB000);
    }
    gpu_memory(gpu_op::alloc, 0xC000, 512, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);  // host memory
  }
  // The timeline coalesces per microsecond: the last free must not share the
  // first allocation's microsecond, or the timeline has one sample.
  std::this_thread::sleep_for(std::chrono::microseconds(20));
  gpu_memory(gpu_op::free, 0xA000);  // outside any scope
  gpu_memory(gpu_op::free, 0xD000);  // never seen allocated
  p.stop();
  p.export_chrome_trace(out.path / "t.json");

  auto rows = rows_of(p);
  CHECK(rows["weights"].self_cuda_memory_usage == 4096);
  CHECK(rows["activations"].self_cuda_memory_usage == 0);
  CHECK(rows["model"].cuda_memory_usage == 4096);
  CHECK(rows["model"].self_cuda_memory_usage == 0);
  CHECK(rows["model"].self_cpu_memory_usage == 512);
  CHECK(rows["[memory]"].self_cuda_memory_usage == -4096);
  CHECK(p.key_averages().table().find("Self CUDA Mem") != std::string::npos);

  std::map<int, proftrace::device_memory_stats> stats;
  for (const auto& d : p.memory_stats()) stats[d.device] = d;
  REQUIRE(stats.count(0) == 1);
  CHECK(stats[0].trace.max_allocated == 5120);
  CHECK(stats[0].current_allocated == 0);
  CHECK(stats[-1].current_allocated == 512);

  const auto trace = test_support::read_trace(out.path / "t.json");
  CHECK(trace.at("proftrace").at("unknown_frees").as_int64() == 1);
  std::vector<std::int64_t> device_totals;
  for (const auto& e : trace.at("traceEvents").as_array()) {
    const auto& o = e.as_object();
    if (o.at("name").as_string() != "[memory]" || o.at("args").at("Device Type").as_int64() != 1) continue;
    CHECK(o.at("tid").as_int64() == ::syscall(SYS_gettid));  // the thread that called the allocator
    device_totals.push_back(o.at("args").at("Total Allocated").as_int64());
  }
  CHECK(device_totals == std::vector<std::int64_t>{4096, 5120, 4096, 0});

  p.export_memory_timeline(out.path / "gpu.json", "cuda:0");
  const auto timeline = boost::json::parse(test_support::read_text(out.path / "gpu.json")).as_array();
  REQUIRE(timeline.size() == 2);  // [times, sizes]: coalesced per microsecond
  const auto& sizes = timeline[1].as_array();
  REQUIRE(sizes.size() >= 2);
  std::int64_t first = 0, last = 0;
  for (const auto& v : sizes.front().as_array()) first += v.as_int64();
  for (const auto& v : sizes.back().as_array()) last += v.as_int64();
  CHECK(first >= 4096);  // the first allocations (one or both, as the clock coalesces them)
  CHECK(last == 0);
}

TEST_CASE("another CUPTI client: one warning, no CUDA, the CPU profile complete") {
  fake_gpu_installed gpu;
  enable_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  test_support::warning_capture warnings;
  for (int run = 0; run < 2; ++run) {
    proftrace::profile p;
    p.start();
    {
      PROF_SCOPE("cpu work");
      gpu_launch(100);
    }
    p.stop();
    CHECK(rows_of(p)["cpu work"].count == 1);
    CHECK(rows_of(p)["cpu work"].self_cuda_time_total_ns == 0);
  }
  std::lock_guard lock(warnings.mutex);
  REQUIRE(warnings.seen.size() == 1);  // once per process, not per session
  CHECK(warnings.seen[0].find("another CUPTI client") != std::string::npos);
  launches.clear();
}

TEST_CASE("the kill switch: no warning, no CUDA") {
  fake_gpu_installed gpu;
  ::setenv("PROFTRACE_DISABLE_CUDA", "1", 1);
  test_support::warning_capture warnings;
  proftrace::profile p;
  p.start();
  { PROF_SCOPE("cpu only"); }
  p.stop();
  ::unsetenv("PROFTRACE_DISABLE_CUDA");
  CHECK(warnings.seen.empty());
  CHECK(rows_of(p)["cpu only"].count == 1);
}

TEST_CASE("CUDA libraries missing: default activities leave CUDA out silently, naming it is one warning") {
  const cupti_api missing = unavailable_cupti_api("libcupti.so.13 not found (dlopen: test)");
  cupti_collector::instance().use_api(&missing);
  test_support::warning_capture warnings;
  {
    proftrace::profile p;
    p.start();
    { PROF_SCOPE("default"); }
    p.stop();
    CHECK(rows_of(p)["default"].count == 1);
    CHECK_FALSE(p.activities().contains(proftrace::activity::cuda));
    CHECK(p.activities().contains(proftrace::activity::cpu));
  }
  CHECK(warnings.seen.empty());
  for (int run = 0; run < 2; ++run) {
    proftrace::profile p({.activities = {proftrace::activity::cuda}});
    CHECK(p.activities() == proftrace::activity_set{proftrace::activity::cuda});  // before start(): what it asks for
    p.start();
    { PROF_SCOPE("named"); }
    p.stop();
    CHECK(rows_of(p)["named"].count == 1);  // the CPU profile instead
    CHECK(p.activities() == proftrace::activity_set{proftrace::activity::cpu});
  }
  std::lock_guard lock(warnings.mutex);
  REQUIRE(warnings.seen.size() == 1);  // once per process
  CHECK(warnings.seen[0].find("libcupti.so.13 not found (dlopen: test)") != std::string::npos);
  cupti_collector::instance().use_api(nullptr);
}

#if !PROFTRACE_TEST_SANITIZED
TEST_CASE("the real CUDA libraries: without a driver, default activities are silent and a complete CPU trace") {
  cupti_collector::instance().use_api(nullptr);
  test_support::warning_capture warnings;
  test_support::temp_dir out("cuda_real");
  proftrace::profile p;
  p.start();
  { PROF_SCOPE("host"); }
  p.stop();
  p.export_chrome_trace(out.path / "t.json");
  CHECK(rows_of(p)["host"].count == 1);
  const auto trace = test_support::read_trace(out.path / "t.json");
  if (!proftrace::cuda::available()) {
    CHECK(warnings.seen.empty());
    CHECK_FALSE(p.activities().contains(proftrace::activity::cuda));
    CHECK(trace.at("deviceProperties").as_array().empty());
  } else {
    CHECK(p.activities().contains(proftrace::activity::cuda));
    CHECK_FALSE(trace.at("deviceProperties").as_array().empty());
  }
}

TEST_CASE("the real CUDA libraries: without a driver, naming CUDA is one warning with the reason") {
  cupti_collector::instance().use_api(nullptr);
  test_support::warning_capture warnings;
  for (int run = 0; run < 2; ++run) {
    proftrace::profile p({.activities = {proftrace::activity::cpu, proftrace::activity::cuda}});
    p.start();
    { PROF_SCOPE("host"); }
    p.stop();
    CHECK(rows_of(p)["host"].count == 1);
    if (proftrace::cuda::available()) CHECK(p.activities().contains(proftrace::activity::cuda));
    else CHECK(p.activities() == proftrace::activity_set{proftrace::activity::cpu});
  }
  std::lock_guard lock(warnings.mutex);
  if (!proftrace::cuda::available()) {
    REQUIRE(warnings.seen.size() == 1);
    const std::string& w = warnings.seen[0];
    CHECK_MESSAGE((w.find("no usable CUDA driver (cudaGetDeviceCount returned") != std::string::npos ||
                   w.find("no CUDA device") != std::string::npos),
                  w);
    CHECK(w.find("the CPU profile goes on") != std::string::npos);
  } else {
    CHECK(warnings.seen.empty());
  }
}
#endif
