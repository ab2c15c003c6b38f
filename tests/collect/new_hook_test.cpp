// The opt-in operator new/delete hook (proftrace::new_hook): C++ allocations
// are recorded as host memory while a session records with profile_memory,
// with the thread's category, from every thread; the profiler's own
// allocations are not; nothing is recorded otherwise.
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <map>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace {

std::map<std::string, proftrace::event_average> rows_of(const proftrace::session& p) {
  std::map<std::string, proftrace::event_average> m;
  for (auto& r : p.key_averages().rows) m[r.key] = r;
  return m;
}

// Opaque to the optimiser, so that new/delete pairs are not elided.
template <class T>
T* keep(T* p) {
  asm volatile("" : : "r"(p) : "memory");
  return p;
}

}  // namespace

TEST_CASE("operator new and delete are recorded in the scopes open on the thread") {
  proftrace::profile p({.profile_memory = true});
  char* kept = nullptr;
  p.start();
  {
    PROF_SCOPE("allocates");
    kept = keep(new char[1000]);
    delete[] keep(new char[300]);
    ::operator delete(keep(::operator new(64, std::align_val_t(64))), std::align_val_t(64));
    delete[] keep(new (std::nothrow) int[10]);
  }
  p.stop();
  delete[] kept;

  auto rows = rows_of(p);
  CHECK(rows["allocates"].self_cpu_memory_usage == 1000);
  CHECK(rows["allocates"].cpu_memory_usage == 1000);
  const auto host = p.memory_stats().at(0);
  CHECK(host.device == -1);
  CHECK(host.trace.max_allocated == 1300);
  CHECK(host.current_allocated == 1000);
}

TEST_CASE("hooked allocations take the thread's category and come from every thread") {
  test_support::temp_dir out("new_hook");
  proftrace::profile p({.profile_memory = true});
  p.start();
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([] {
        PROF_MEMORY_CATEGORY(proftrace::memory_category::activation);
        PROF_SCOPE("worker");
        for (int i = 0; i < 100; ++i) delete[] keep(new char[128]);
        auto held = std::make_unique<char[]>(4096);
        keep(held.get());
      });
  }
  p.stop();
  CHECK(rows_of(p)["worker"].count == 4);
  CHECK(rows_of(p)["worker"].cpu_memory_usage == 0);  // every allocation freed in the scope
  p.export_memory_timeline(out.path / "t.raw.json.gz", "cpu");
  const auto raw = boost::json::parse(test_support::read_text(out.path / "t.raw.json.gz")).as_array();
  std::int64_t activation_bytes = 0, peak = 0, total = 0;
  for (const auto& r : raw) {
    const auto& row = r.as_array();
    if (row[3].as_int64() == 4) activation_bytes += row[2].as_int64() > 0 ? row[2].as_int64() : 0;
    total += row[2].as_int64();
    peak = std::max(peak, total);
  }
  // The threads' own allocations (jthread state) are in the trace too; the workers' are activations.
  CHECK(activation_bytes == 4 * (100 * 128 + 4096));
  CHECK(peak >= 4096);
}

TEST_CASE("without profile_memory, or with no session, the hook records nothing") {
  proftrace::profile p;
  p.start();
  {
    PROF_SCOPE("s");
    delete[] keep(new char[64]);
  }
  p.stop();
  CHECK(rows_of(p)["s"].cpu_memory_usage == 0);
  CHECK(p.memory_stats().empty());
  delete[] keep(new char[64]);  // no session at all
}

// Under the sanitizers a request this large aborts in their allocators
// before the hook sees it.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
TEST_CASE("an allocation that fails: bad_alloc or nullptr as the standard says, nothing recorded") {
  proftrace::profile p({.profile_memory = true});
  p.start();
  // Not a constant: clang rejects a constant array size this large at compile time.
  volatile std::size_t huge_bits = 62;
  const std::size_t huge = std::size_t{1} << huge_bits;
  {
    PROF_SCOPE("fails");
    CHECK_THROWS_AS(keep(::operator new(huge)), std::bad_alloc);
    CHECK(keep(new (std::nothrow) char[huge]) == nullptr);
    CHECK_THROWS_AS(keep(::operator new(huge, std::align_val_t(64))), std::bad_alloc);
  }
  p.stop();
  CHECK(rows_of(p)["fails"].cpu_memory_usage == 0);
  CHECK(p.memory_stats().empty());
}
#endif
