// The helpers with the real CUDA libraries (builds with the CUDA collector).
// Without a driver or device (CI): profileit("cuda") returns the CPU
// figures, every GPU figure absent with the reason, and one warning per
// process; timeit times the host; a session that asks for CUDA warns once
// and records the CPU profile. With a GPU the same tests check the figures
// are there instead.
#include <doctest/doctest.h>

#include <proftrace/cuda.hpp>
#include <proftrace/proftrace.hpp>

#include <chrono>
#include <thread>

#include "test_support.hpp"

using namespace std::chrono_literals;

#if !PROFTRACE_TEST_SANITIZED
TEST_CASE("profileit on \"cuda\": GPU figures where there is a GPU, absent with the reason (one warning) where not") {
  test_support::warning_capture warnings;
  const auto first = proftrace::profileit("cuda", [] {
    std::this_thread::sleep_for(20ms);
    return 3;
  });
  const auto second = proftrace::profileit("cuda:0", [] {});
  CHECK(first.result == 3);
  CHECK(first.stats.time >= 0.020);
  CHECK(first.stats.device == "cuda:0");
  CHECK(first.stats.cpu_time.has_value());
  CHECK(first.stats.peak_resident_bytes.has_value());
  if (!proftrace::cuda::available()) {
    for (const auto* s : {&first.stats, &second.stats}) {
      CHECK_FALSE(s->has_gpu_figures());
      CHECK_FALSE(s->max_allocated_gpu.has_value());
      CHECK_FALSE(s->max_reserved_gpu.has_value());
      CHECK_FALSE(s->max_active_gpu.has_value());
      CHECK_FALSE(s->nvidia_smi_free_cuda.has_value());
      CHECK_FALSE(s->nvidia_smi_used_cuda.has_value());
      CHECK(s->gpu_absent_reason.find("CUDA is not available") != std::string::npos);
    }
    std::size_t about_profileit = 0;
    {
      std::lock_guard lock(warnings.mutex);
      for (const auto& w : warnings.seen) about_profileit += w.find("profileit") != std::string::npos;
    }
    CHECK(about_profileit == 1);
    const std::vector<proftrace::run_stats> runs{first.stats, second.stats};
    const auto summary = proftrace::get_stats_summary(runs);
    CHECK_FALSE(summary.max_allocated_gpu.has_value());
    CHECK_FALSE(summary.max_nvidia_smi_used_cuda.has_value());
  } else {
    MESSAGE("a GPU is present: checking that its figures are reported");
    CHECK(first.stats.max_allocated_gpu.has_value());
    CHECK(first.stats.max_reserved_gpu.has_value());
    CHECK(first.stats.max_active_gpu.has_value());
  }
}

TEST_CASE("timeit synchronises with the device only where there is one") {
  proftrace::timeit t({.log = false});
  std::this_thread::sleep_for(20ms);
  t.stop();
  CHECK(t.duration() >= 0.020);
  CHECK(t.synchronized() == proftrace::cuda::available());
  proftrace::timeit unsynchronized({.log = false, .synchronize_cuda = false});
  unsynchronized.stop();
  CHECK_FALSE(unsynchronized.synchronized());
}

TEST_CASE("a session asking only for CUDA where none is available warns once and records the CPU profile") {
  if (proftrace::cuda::available()) {
    MESSAGE("a GPU is present: the no-GPU fallback is not exercised here");
    return;
  }
  test_support::warning_capture warnings;
  for (int run = 0; run < 2; ++run) {
    proftrace::profile p({.activities = {proftrace::activity::cuda}});
    p.start();
    { PROF_SCOPE("host side"); }
    p.stop();
    bool seen = false;
    for (const auto& r : p.key_averages().rows) seen = seen || (r.key == "host side" && r.count == 1);
    CHECK(seen);
  }
  std::lock_guard lock(warnings.mutex);
  // The first session of this process to ask for CUDA reports it (the tests
  // before this one start none); the second one is silent.
  REQUIRE(warnings.seen.size() == 1);
  CHECK(warnings.seen[0].find("CUDA") != std::string::npos);
}
#endif
