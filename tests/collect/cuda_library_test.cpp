// The loader of libcupti and libcudart (lib/collect/cuda/cuda_library.cpp): where it
// looks (PROFTRACE_CUDA_LIBRARY_DIRS, the sonames, the build's toolkit), the
// reason it gives for a missing library or symbol, and the tables it yields
// where a library is missing: every call fails and says why, nothing
// crashes. Then the real libraries on this machine, which load.
#include <doctest/doctest.h>

#include <proftrace/cuda.hpp>
#include <proftrace/profileit.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "collect/cuda/cuda_library.hpp"
#include "collect/cuda/cuda_runtime.hpp"
#include "collect/cuda/cupti_collector.hpp"
#include "test_support.hpp"

using namespace proftrace::detail;

TEST_CASE("candidates: PROFTRACE_CUDA_LIBRARY_DIRS alone, else the sonames then the toolkit's directories") {
  using v = std::vector<std::string>;
  CHECK(cuda_library_candidates("libcupti", "13", "", "/opt/cuda/lib64:/opt/cuda/extras/CUPTI/lib64") ==
        v{"libcupti.so.13", "libcupti.so", "/opt/cuda/lib64/libcupti.so.13", "/opt/cuda/lib64/libcupti.so",
          "/opt/cuda/extras/CUPTI/lib64/libcupti.so.13", "/opt/cuda/extras/CUPTI/lib64/libcupti.so"});
  CHECK(cuda_library_candidates("libcudart", "13", "/here::/there", "/opt/cuda/lib64") ==
        v{"/here/libcudart.so.13", "/here/libcudart.so", "/there/libcudart.so.13", "/there/libcudart.so"});
  CHECK(cuda_library_candidates("libcudart", "", "", "") == v{"libcudart.so"});
}

TEST_CASE("a missing library: not loaded, a reason naming it and dlopen's error, its symbols null") {
  const auto lib = shared_library::open("libproftrace_absent.so.1",
                                        {"libproftrace_absent.so.1", "/nonexistent/libproftrace_absent.so.1"},
                                        "searched nowhere useful");
  CHECK_FALSE(lib.loaded());
  CHECK(lib.error().starts_with("libproftrace_absent.so.1 not found (dlopen: libproftrace_absent.so.1: "));
  CHECK(lib.error().find("No such file or directory") != std::string::npos);
  CHECK(lib.error().ends_with("; searched nowhere useful"));
  std::string why;
  CHECK(lib.symbol("cuptiActivityEnable", why) == nullptr);
  CHECK(why == lib.error());

  const auto nothing = shared_library::open("libcupti.so.13", {});
  CHECK(nothing.error() == "libcupti.so.13 not found (dlopen: nothing to try)");
}

TEST_CASE("a candidate that exists but is no library: its error is the one reported") {
  test_support::temp_dir dir("cuda_library");
  const auto fake = dir.path / "libcupti.so.13";
  std::ofstream(fake) << "not an ELF file\n";
  const auto lib = shared_library::open("libcupti.so.13", {"libproftrace_absent.so.1", fake.string()});
  CHECK_FALSE(lib.loaded());
  CHECK(lib.error().find(fake.string()) != std::string::npos);
  CHECK(lib.error().find("No such file") == std::string::npos);
}

TEST_CASE("a missing symbol: null, with a reason naming the library, its path and the symbol") {
  const auto libc = shared_library::open("libc.so.6", {"libc.so.6"});
  REQUIRE(libc.loaded());
  CHECK(libc.path() == "libc.so.6");
  std::string why;
  CHECK(libc.symbol("getpid", why) != nullptr);
  CHECK(why.empty());
  CHECK(libc.symbol("cuptiNoSuchFunction", why) == nullptr);
  CHECK(why.starts_with("libc.so.6 (libc.so.6) has no symbol cuptiNoSuchFunction (dlsym: "));
}

TEST_CASE("tables without their library: every call fails, nothing crashes, the reason is kept") {
  const auto missing = shared_library::open("libcupti.so.13", {"/nonexistent/libcupti.so.13"});
  const cupti_api cupti = unavailable_cupti_api(missing.error().c_str());
  REQUIRE(cupti.unavailable != nullptr);
  CHECK(std::string(cupti.unavailable).starts_with("libcupti.so.13 not found (dlopen: "));
  int count = 7;
  CHECK(cupti.get_device_count(&count) != 0);
  CHECK(count == 0);
  CHECK(cupti.activity_enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS);
  CHECK(cupti.push_external_correlation_id(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 1) != CUPTI_SUCCESS);
  CHECK(cupti.synchronize() != 0);
  CHECK(describe(cupti, CUPTI_ERROR_UNKNOWN) == "CUPTI error (999)");

  // The collector stays off and says which library is missing.
  cupti_collector& c = cupti_collector::instance();
  c.use_api(&cupti);
  const cuda_start s = c.start();
  CHECK(s.state == cuda_collection::no_library);
  CHECK(s.message.starts_with("libcupti.so.13 not found (dlopen: "));
  CHECK(s.message.find("CUDA collection is off, the CPU profile goes on") != std::string::npos);
  CHECK_FALSE(c.running());
  c.use_api(nullptr);

  // <proftrace/cuda.hpp>'s documented no-GPU answers, with the library's reason.
  const auto no_runtime = shared_library::open("libcudart.so.13", {"/nonexistent/libcudart.so.13"});
  const auto runtime = proftrace::cuda::detail::unavailable_runtime_api(no_runtime.error().c_str());
  proftrace::cuda::detail::use_apis(&runtime, nullptr, true);
  CHECK_FALSE(proftrace::cuda::available());
  const auto m = proftrace::cuda::memory_info(0);
  CHECK_FALSE(m.free_bytes.has_value());
  CHECK_FALSE(m.nvml_used_bytes.has_value());
  CHECK(m.unavailable == "proftrace: cudaGetDeviceCount failed: " + no_runtime.error());
  CHECK_THROWS_WITH_AS(proftrace::cuda::profiler_start(),
                       doctest::Contains("cudaProfilerStart failed: libcudart.so.13 not found (dlopen: "),
                       std::runtime_error);
  {
    test_support::warning_capture warnings;
    { proftrace::cuda::profiler_scope scope; }  // PROF_CUDA_PROFILE: never throws, one warning
    CHECK(warnings.contains("libcudart.so.13 not found"));
  }
  {
    test_support::warning_capture warnings;
    const auto run = proftrace::profileit("cuda", [] { return 5; });  // the CPU figures, every GPU figure absent
    CHECK(run.result == 5);
    CHECK(run.stats.cpu_time.has_value());
    CHECK_FALSE(run.stats.has_gpu_figures());
    CHECK(run.stats.gpu_absent_reason.find("libcudart.so.13 not found") != std::string::npos);
    CHECK(warnings.contains("profileit: CUDA is not available"));
  }
  proftrace::cuda::detail::use_apis(nullptr, nullptr);
}

#if !PROFTRACE_TEST_SANITIZED
TEST_CASE("the real libraries on this machine load, through the soname or the build's toolkit") {
  REQUIRE_MESSAGE(std::getenv("PROFTRACE_CUDA_LIBRARY_DIRS") == nullptr, "the test needs the default search");
  CHECK_MESSAGE(cupti_library().loaded(), cupti_library().error());
  CHECK_MESSAGE(cudart_library().loaded(), cudart_library().error());
  MESSAGE("libcupti: " << cupti_library().path() << ", libcudart: " << cudart_library().path());
  CHECK(real_cupti_api().unavailable == nullptr);
  CHECK(proftrace::cuda::detail::real_runtime_api().unavailable == nullptr);
  CHECK(describe(real_cupti_api(), CUPTI_ERROR_UNKNOWN).ends_with("(999)"));
}
#endif
