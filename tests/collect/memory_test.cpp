// The memory collector: allocations attributed to the scopes open on their
// thread (self and total, host and device), "[memory]" events with running
// totals, unknown frees counted, nothing recorded without profile_memory.
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <thread>

#include "test_support.hpp"

namespace {

char arena[8][64];  // addresses to report; nothing is really allocated

void nested_allocations(int t) {
  PROF_SCOPE("outer");
  PROF_ALLOC(arena[2 * t], 1000);
  {
    PROF_SCOPE("inner");
    PROF_ALLOC(arena[2 * t + 1], 200);
    PROF_FREE(arena[2 * t + 1]);
    PROF_ALLOC(arena[2 * t + 1], 30);
    PROF_ALLOC(arena[2 * t + 1] + 8, 4096, 0);  // device 0
  }
}

std::map<std::string, proftrace::event_average> rows_of(const proftrace::session& p) {
  std::map<std::string, proftrace::event_average> m;
  for (auto& r : p.key_averages().rows) m[r.key] = r;
  return m;
}

}  // namespace

TEST_CASE("allocations are attributed to the open scopes, self and total, on every thread") {
  test_support::temp_dir out("memory");
  proftrace::profile p({.profile_memory = true});
  p.start();
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < 2; ++t) threads.emplace_back(nested_allocations, t);
  }
  PROF_ALLOC(arena[6], 64);     // outside any scope: the "[memory]" row
  PROF_FREE(arena[6]);
  PROF_FREE(arena[7]);          // never allocated: counted, no event
  p.stop();
  p.export_chrome_trace(out.path / "t.json");

  auto rows = rows_of(p);
  CHECK(rows["inner"].self_cpu_memory_usage == 2 * 30);  // +200 -200 +30 on each thread
  CHECK(rows["inner"].cpu_memory_usage == 2 * 30);
  CHECK(rows["inner"].self_cuda_memory_usage == 2 * 4096);
  CHECK(rows["outer"].self_cpu_memory_usage == 2 * 1000);
  CHECK(rows["outer"].cpu_memory_usage == 2 * 1030);       // includes inner's
  CHECK(rows["outer"].cuda_memory_usage == 2 * 4096);
  CHECK(rows["outer"].self_cuda_memory_usage == 0);
  REQUIRE(rows.count("[memory]"));
  CHECK(rows["[memory]"].count == 2);
  CHECK(rows["[memory]"].cpu_memory_usage == 0);  // +64 then -64

  const std::string table = p.key_averages().table();
  CHECK(table.find("CPU Mem") != std::string::npos);
  CHECK(table.find("Self CUDA Mem") != std::string::npos);

  const auto trace = test_support::read_trace(out.path / "t.json");
  CHECK(trace.at("profile_memory").as_int64() == 1);
  CHECK(trace.at("proftrace").at("unknown_frees").as_int64() == 1);
  auto events = test_support::events_named(trace, "[memory]");
  CHECK(events.size() == 2 * 5 + 2);
  // Totals run in time order across threads.
  std::stable_sort(events.begin(), events.end(), [](const boost::json::object& a, const boost::json::object& b) {
    return a.at("ts").to_number<double>() < b.at("ts").to_number<double>();
  });
  std::int64_t host_total = 0;
  for (auto& e : events) {
    const auto& a = e.at("args").as_object();
    CHECK(e.at("ph").as_string() == "i");
    const auto device = a.at("Device Id").as_int64();
    CHECK(a.at("Device Type").as_int64() == (device < 0 ? 0 : 1));
    if (device < 0) {
      host_total += a.at("Bytes").as_int64();
      CHECK(a.at("Total Allocated").as_int64() == host_total);
      CHECK(a.at("Total Reserved").as_int64() == host_total);  // no pool reported more
    }
    CHECK(a.contains("Addr"));
  }
  CHECK(host_total == 2 * 1030);
}

TEST_CASE("an allocation at an address still live: the earlier block counts as freed there, and it is counted") {
  test_support::temp_dir out("memory_realloc");
  proftrace::profile p({.profile_memory = true});
  p.start();
  {
    PROF_SCOPE("alloc twice");
    PROF_ALLOC(arena[6] + 32, 100);
    PROF_ALLOC(arena[6] + 32, 200);  // the 100 bytes' free was never reported
  }
  {
    PROF_SCOPE("free once");
    PROF_FREE(arena[6] + 32);
  }
  p.stop();
  p.export_chrome_trace(out.path / "t.json");
  auto rows = rows_of(p);
  CHECK(rows["alloc twice"].self_cpu_memory_usage == 200);  // +100, then +200 -100
  CHECK(rows["free once"].self_cpu_memory_usage == -200);
  const auto stats = p.memory_stats();
  REQUIRE(stats.size() == 1);
  CHECK(stats[0].current_allocated == 0);  // the scopes' sum, 200 - 200, too
  CHECK(stats[0].trace.max_allocated == 200);
  const auto trace = test_support::read_trace(out.path / "t.json");
  CHECK(trace.at("proftrace").at("unfreed_reallocations").as_int64() == 1);
  // The memory timeline destroys the earlier block there too: its blocks sum to what is held, 0.
  p.export_memory_timeline(out.path / "m.raw.json.gz");
  const boost::json::value timeline = boost::json::parse(test_support::read_text(out.path / "m.raw.json.gz"));
  std::int64_t held = 0;
  for (const auto& e : timeline.as_array()) held += e.as_array()[2].to_number<std::int64_t>();
  CHECK(timeline.as_array().size() == 4);  // create 100, destroy 100, create 200, destroy 200
  CHECK(held == 0);
  CHECK(trace.at("proftrace").at("unknown_frees").as_int64() == 0);
  CHECK(trace.at("proftrace").at("lost_events_total").as_int64() == 0);
}

TEST_CASE("without profile_memory nothing is recorded and arguments are not evaluated") {
  int evaluated = 0;
  const auto size = [&] {
    ++evaluated;
    return 64;
  };
  proftrace::profile p;
  p.start();
  {
    PROF_SCOPE("s");
    PROF_ALLOC(arena[0], size());
    PROF_FREE(arena[0]);
  }
  p.stop();
  CHECK(evaluated == 0);
  CHECK(rows_of(p)["s"].cpu_memory_usage == 0);
  CHECK(rows_of(p).count("[memory]") == 0);
}

TEST_CASE("a free on another thread than the allocation is matched, whichever ring drains first") {
  // The freeing thread registers its ring first, so a drain takes its free
  // before the allocating thread's allocation; both sit in one drain.
  proftrace::profile p({.profile_memory = true, .flush_period = std::chrono::milliseconds(60'000)});
  p.start();
  std::atomic<int> stage{0};
  std::jthread freer([&] {
    PROF_INSTANT("freer attaches first");
    stage = 1;
    while (stage.load() != 2) std::this_thread::yield();
    PROF_FREE(arena[0]);
    PROF_FREE(arena[1], 0);
  });
  while (stage.load() != 1) std::this_thread::yield();
  std::jthread allocator([&] {
    PROF_ALLOC(arena[0], 512);
    PROF_ALLOC(arena[1], 2048, 0);
    stage = 2;
  });
  allocator.join();
  freer.join();
  p.stop();
  test_support::temp_dir out("cross_thread");
  p.export_chrome_trace(out.path / "t.json");
  const auto trace = test_support::read_trace(out.path / "t.json");
  CHECK(trace.at("proftrace").at("unknown_frees").as_int64() == 0);
  const auto events = test_support::events_named(trace, "[memory]");
  CHECK(events.size() == 4);
  for (const auto& s : p.memory_stats()) {
    CHECK(s.current_allocated == 0);
    CHECK(s.trace.max_allocated == (s.device < 0 ? 512 : 2048));
  }
  CHECK(rows_of(p)["[memory]"].cpu_memory_usage == 0);
  CHECK(rows_of(p)["[memory]"].cuda_memory_usage == 0);
}
