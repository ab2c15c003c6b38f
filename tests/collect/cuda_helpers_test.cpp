// <proftrace/cuda.hpp> without a GPU: profiler gating and device memory
// figures through injected CUDA runtime and NVML tables (success, errors, a
// missing NVML), then the real libraries' no-driver answers.
#include <doctest/doctest.h>

#include <proftrace/cuda.hpp>
#include <proftrace/proftrace.hpp>

#include <cstdlib>
#include <cstring>
#include <string>

#include "collect/cuda/cuda_runtime.hpp"
#include "test_support.hpp"

namespace {

namespace fake {
int count_status = 0, count = 2, start_status = 0, stop_status = 0, current = 0, starts = 0, stops = 0;
std::string asked_uuid;
void reset() {
  count_status = 0, count = 2, start_status = 0, stop_status = 0, current = 0, starts = 0, stops = 0;
  asked_uuid.clear();
}
const proftrace::cuda::detail::runtime_api runtime{
    [](int* n) {
      *n = count;
      return count_status;
    },
    [] { return ++starts, start_status; },
    [] { return ++stops, stop_status; },
    [](int* d) {
      *d = current;
      return 0;
    },
    [](int d) {
      current = d;
      return 0;
    },
    [](std::size_t* free, std::size_t* total) {
      *free = 1000u + static_cast<std::size_t>(current);
      *total = 8000;
      return 0;
    },
    [](int device, unsigned char uuid[16]) {
      for (int i = 0; i < 16; ++i) uuid[i] = static_cast<unsigned char>(device * 16 + i);
      return 0;
    },
    [](int e) { return e == 35 ? "CUDA driver version is insufficient for CUDA runtime version" : "other"; },
    [] { return 0; },
};
const proftrace::cuda::detail::nvml_api nvml{
    [] { return 0; },
    [](const char* uuid, void** device) {
      asked_uuid = uuid;
      *device = &asked_uuid;
      return 0;
    },
    [](void*, proftrace::cuda::detail::nvml_memory* m) {
      *m = {80, 30, 50};
      return 0;
    },
};
}  // namespace fake

struct injected {
  explicit injected(bool with_nvml = true) {
    fake::reset();
    proftrace::cuda::detail::use_apis(&fake::runtime, with_nvml ? &fake::nvml : nullptr, !with_nvml);
  }
  ~injected() { proftrace::cuda::detail::use_apis(nullptr, nullptr); }
};

}  // namespace

TEST_CASE("profiler gating: cudaProfilerStart/Stop, clear errors from the explicit calls, a warning from the range") {
  injected fake_cuda;
  proftrace::cuda::profiler_start();
  proftrace::cuda::profiler_stop();
  CHECK(fake::starts == 1);
  CHECK(fake::stops == 1);
  {
    proftrace::cuda::profiler_range capture;
    CHECK(fake::starts == 2);
  }
  CHECK(fake::stops == 2);

  fake::start_status = 35;
  CHECK_THROWS_WITH_AS(proftrace::cuda::profiler_start(),
                       "proftrace: cudaProfilerStart failed: CUDA driver version is insufficient for CUDA runtime "
                       "version (35)",
                       std::runtime_error);
  CHECK_THROWS_AS(proftrace::cuda::profiler_range{}, std::runtime_error);

  fake::start_status = 0;
  fake::stop_status = 35;
  test_support::warning_capture warnings;
  { proftrace::cuda::profiler_range capture; }  // its end cannot throw: one warning
  CHECK(warnings.contains("cudaProfilerStop failed"));

  // The macro's scope never throws: a failure at either end is one warning per process.
  fake::start_status = 35;
  fake::stop_status = 0;
  const int stops_before = fake::stops;
  warnings.seen.clear();
  for (int i = 0; i < 3; ++i) {
    PROF_CUDA_PROFILE();
  }
  CHECK(fake::stops == stops_before);  // never started, never stopped
  CHECK(warnings.seen.size() == 1);
  CHECK(warnings.contains("cudaProfilerStart failed"));
  fake::start_status = 0;
  const int starts_before = fake::starts;
  {
    PROF_CUDA_PROFILE();
    CHECK(fake::starts == starts_before + 1);
  }
  CHECK(fake::stops == stops_before + 1);
}

TEST_CASE("device memory: the runtime's free/total and NVML's used/free/total, the caller's device kept") {
  {
    injected fake_cuda;
    fake::current = 0;
    const auto m = proftrace::cuda::memory_info(1);
    CHECK(m.device == 1);
    CHECK(m.free_bytes == std::optional<std::uint64_t>(1001));
    CHECK(m.total_bytes == std::optional<std::uint64_t>(8000));
    CHECK(m.nvml_used_bytes == std::optional<std::uint64_t>(50));
    CHECK(m.nvml_free_bytes == std::optional<std::uint64_t>(30));
    CHECK(m.nvml_total_bytes == std::optional<std::uint64_t>(80));
    CHECK(m.unavailable.empty());
    CHECK(fake::current == 0);  // the calling thread's device is restored
    CHECK(fake::asked_uuid == "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f");

    const auto bad = proftrace::cuda::memory_info(5);
    CHECK_FALSE(bad.free_bytes.has_value());
    CHECK(bad.unavailable == "proftrace: no CUDA device 5 (2 visible)");

    fake::count_status = 35;
    const auto none = proftrace::cuda::memory_info(0);
    CHECK_FALSE(none.total_bytes.has_value());
    CHECK_FALSE(none.nvml_used_bytes.has_value());
    CHECK(none.unavailable.find("cudaGetDeviceCount failed") != std::string::npos);
    CHECK_FALSE(proftrace::cuda::available());
  }
  {
    injected without_nvml(false);
    const auto m = proftrace::cuda::memory_info(0);
    CHECK(m.free_bytes.has_value());
    CHECK_FALSE(m.nvml_used_bytes.has_value());  // absent, not zero
    CHECK(m.unavailable.find("NVML") != std::string::npos);
    CHECK(proftrace::cuda::available());
  }
}

TEST_CASE("Nsight is detected by its environment") {
  ::unsetenv("NSYS_PROFILING_SESSION_ID");
  ::unsetenv("CUDA_INJECTION64_PATH");
  CHECK_FALSE(proftrace::cuda::nsight_attached());
  ::setenv("NSYS_PROFILING_SESSION_ID", "42", 1);
  CHECK(proftrace::cuda::nsight_attached());
  ::unsetenv("NSYS_PROFILING_SESSION_ID");
}

#if !PROFTRACE_TEST_SANITIZED
TEST_CASE("the real CUDA runtime on this machine") {
  const auto m = proftrace::cuda::memory_info(0);
  if (!proftrace::cuda::available()) {
    // CI: no driver. Every figure is absent, with the reason; gating throws a clear error.
    CHECK_FALSE(m.free_bytes.has_value());
    CHECK_FALSE(m.unavailable.empty());
    CHECK_THROWS_WITH_AS(proftrace::cuda::profiler_start(), doctest::Contains("cudaProfilerStart failed"),
                         std::runtime_error);
  } else {
    CHECK(m.total_bytes.has_value());
    MESSAGE("device 0: " << *m.free_bytes << " of " << *m.total_bytes << " bytes free; " << m.unavailable);
    proftrace::cuda::profiler_start();
    proftrace::cuda::profiler_stop();
  }
}
#endif

TEST_CASE("the schedule drives cudaProfilerStart/Stop: Nsight captures only the active steps") {
  injected fake_cuda;
  proftrace::profile p({.activities = {proftrace::activity::cpu},
                        .schedule = proftrace::schedule({.wait = 1, .warmup = 1, .active = 2, .repeat = 2}),
                        .cuda_profiler_gating = true});
  std::vector<std::pair<int, int>> seen;  // (starts, stops) after each step
  p.start();
  for (int step = 0; step < 9; ++step) {
    p.step();
    seen.emplace_back(fake::starts, fake::stops);
  }
  p.stop();
  // Steps 0 and 1 wait and warm up; 2-3 record (start, then stop at 4); 6-7 again.
  CHECK(seen[0] == std::pair{0, 0});
  CHECK(seen[1] == std::pair{1, 0});  // step 2 begins: the trace and the capture start
  CHECK(seen[3] == std::pair{1, 1});  // step 4: the trace is ready, the capture stops
  CHECK(fake::starts == 2);
  CHECK(fake::stops == 2);

  fake::reset();
  fake::stop_status = 35;
  test_support::warning_capture warnings;
  proftrace::profile q({.activities = {proftrace::activity::cpu}, .cuda_profiler_gating = true});
  q.start();
  q.stop();
  CHECK(warnings.contains("cudaProfilerStop failed"));
  CHECK(warnings.contains("cuda_profiler_gating"));
}

#if PROFTRACE_WITH_NVTX
TEST_CASE("no NVTX tool attached: sessions leave NVTX ranges off") {
  // This binary injects no tool (nvtx_test does), and the environment names none.
  REQUIRE(std::getenv("NVTX_INJECTION64_PATH") == nullptr);
  CHECK_FALSE(proftrace::detail::nvtx_tool_attached());
  proftrace::profile p({.activities = {proftrace::activity::cpu, proftrace::activity::nvtx}});
  p.start();
  CHECK((proftrace::detail::session_state.load() & proftrace::detail::state_nvtx) == 0);
  CHECK((proftrace::detail::session_state.load() & proftrace::detail::state_recording) != 0);
  p.stop();
}
#endif
