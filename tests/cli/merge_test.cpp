// The `proftrace` command line: merge: ranks into one timeline, clock offsets and drift, bounded memory, failures.
// (Part of the CLI suites; helpers in cli_test_support.hpp.)
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <cstdlib>
#include <functional>
#include <algorithm>
#include <map>
#include <set>

#include "test_support.hpp"
#include "cli_test_support.hpp"

using namespace cli_test_support;

namespace {

// A rank's trace of one schedule cycle: steps first..first+1, each with a
// "compute" of 50 us and an "exchange" of exchange_us.
std::string cycle_trace(int rank, int world, int first_step, int exchange_us, std::int64_t base_ns) {
  std::string t = "{\"schemaVersion\": 1, \"distributedInfo\": {\"backend\": \"mpi\", \"rank\": " +
                  std::to_string(rank) + ", \"world_size\": " + std::to_string(world) +
                  ", \"host\": \"h\"},\n\"baseTimeNanoseconds\": " + std::to_string(base_ns) + ",\n\"traceEvents\": [\n" +
                  "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 42, \"tid\": 0, \"args\": {\"name\": \"app\"}}";
  for (int k = 0; k < 2; ++k) {
    const int t0 = 200 * k;
    const auto x = [&](const std::string& name, int ts, int dur) {
      t += ",\n{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"" + name +
           "\", \"pid\": 42, \"tid\": 42, \"ts\": " + std::to_string(ts) + ".000, \"dur\": " + std::to_string(dur) + ".000}";
    };
    x("compute", t0 + 1, 50);
    x("exchange", t0 + 60, exchange_us);
    x("ProfilerStep#" + std::to_string(first_step + k), t0, 150);  // end order, as proftrace writes
  }
  return t + "\n]}\n";
}

}  // namespace

TEST_CASE("summary DIR and merge DIR read only Kineto traces, decided by content; the others are named on stderr") {
  temp_dir dir("cli-mixed-dir");
  for (const int rank : {0, 1})
    write_file(dir.path / ("rank" + std::to_string(rank) + ".pt.trace.json"),
               cycle_trace(rank, 2, 10, 10 + 10 * rank, 1000000000));
  // What proftrace itself writes beside the traces: export_memory_timeline's
  // files (.json and raw.json.gz are top-level arrays, .html is no JSON).
  {
    static char block[64];
    proftrace::profile p({.profile_memory = true});
    p.start();
    PROF_ALLOC(block, 100);
    PROF_FREE(block);
    p.stop();
    p.export_memory_timeline(dir.path / "memory.json", "cpu");
    p.export_memory_timeline(dir.path / "memory.raw.json.gz", "cpu");
    p.export_memory_timeline(dir.path / "memory.html", "cpu");
  }
  write_file(dir.path / "notes.json", "run notes, not JSON");
  write_file(dir.path / "config.json", R"({"lr": 0.1, "steps": [1, 2]})");
  write_file(dir.path / "empty.json", "");

  // Today's main: "memory.json: ... not an object", exit 1.
  auto r = run_cli({"summary", dir.path.string()});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.find("== rank 0 (h), steps 10-11: rank0.pt.trace.json") != std::string::npos);
  CHECK(r.out.find("== rank 1 (h), steps 10-11: rank1.pt.trace.json") != std::string::npos);
  CHECK(r.out.find("== across 2 ranks, steps 10-11") != std::string::npos);
  for (const char* skipped : {"proftrace: skipped memory.json: not a Kineto trace (a JSON array",
                              "proftrace: skipped memory.raw.json.gz: not a Kineto trace (a JSON array",
                              "proftrace: skipped notes.json: not a Kineto trace (not JSON)",
                              "proftrace: skipped config.json: not a Kineto trace (a JSON object without \"traceEvents\")",
                              "proftrace: skipped empty.json: not a Kineto trace (an empty file)"})
    CHECK_MESSAGE(r.err.find(skipped) != std::string::npos, skipped << "\n" << r.err);
  CHECK(r.err.find("memory.html") == std::string::npos);  // not a trace's name: not looked at
  CHECK(lines(r.err) == 5);

  // merge: the same files skipped; merge's own output, written into the
  // directory, is skipped by summary and by the next merge.
  const auto merged = dir.path / "merged.json";
  r = run_cli({"merge", dir.path.string(), "-o", merged.string()});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.find("2 traces") != std::string::npos);
  CHECK(r.err.find("proftrace: skipped memory.json: not a Kineto trace") != std::string::npos);
  CHECK(lines(r.err) == 5);
  CHECK(run_cli({"validate", merged.string()}).rc == 0);
  r = run_cli({"summary", dir.path.string()});
  REQUIRE(r.rc == 0);
  CHECK(r.err.find("proftrace: skipped merged.json: a merged trace written by 'proftrace merge'") != std::string::npos);
  CHECK(r.out.find("== across 2 ranks") != std::string::npos);
  r = run_cli({"merge", dir.path.string(), "-o", (dir.path / "merged2.json").string()});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("2 traces") != std::string::npos);
  // A file named on the command line must be a trace.
  r = run_cli({"merge", (dir.path / "rank0.pt.trace.json").string(), (dir.path / "memory.json").string(), "-o",
               (dir.path / "m3.json").string()});
  CHECK(r.rc == 1);
  CHECK(r.err.find("memory.json: not a Kineto trace") != std::string::npos);

  // A directory without a trace is an error that says what was skipped.
  temp_dir none("cli-no-trace");
  write_file(none.path / "memory.json", "[[0], [[0, 1]]]");
  r = run_cli({"summary", none.path.string()});
  CHECK(r.rc == 1);
  CHECK(r.err.find("no Kineto trace in the directory (1 file skipped, e.g. memory.json: not a Kineto trace") !=
        std::string::npos);
  CHECK(run_cli({"merge", none.path.string(), "-o", (none.path / "m.json").string()}).rc == 1);

  // A trace that is broken is no file to skip: a .json.gz cut short (a
  // crash) is an error naming it, with the repair hint; a plain .json cut
  // inside traceEvents is summarised as far as it goes, with a warning.
  temp_dir cut("cli-cut-in-dir");
  write_file(cut.path / "rank0.json", cycle_trace(0, 2, 10, 10, 0));
  {
    proftrace::profile p;
    p.start();
    for (int i = 0; i < 200; ++i) cli_work(4);
    p.stop();
    p.export_chrome_trace(cut.path / "rank1.json.gz");
  }
  std::filesystem::resize_file(cut.path / "rank1.json.gz", std::filesystem::file_size(cut.path / "rank1.json.gz") / 2);
  r = run_cli({"summary", cut.path.string()});
  CHECK(r.rc == 1);
  CHECK(r.err.find("rank1.json.gz") != std::string::npos);
  CHECK(r.err.find("validate --repair") != std::string::npos);
  CHECK(r.err.find("skipped") == std::string::npos);
  std::filesystem::remove(cut.path / "rank1.json.gz");
  const std::string whole = cycle_trace(1, 2, 10, 20, 0);
  write_file(cut.path / "rank1.json", whole.substr(0, whole.find("\"exchange\"")));
  r = run_cli({"summary", cut.path.string()});
  CHECK(r.rc == 0);
  CHECK(r.err.find("rank1.json: the trace ends at byte") != std::string::npos);
}

TEST_CASE("summary DIR and merge with repeat = 2: traces grouped by rank and by schedule cycle") {
  temp_dir dir("cli-cycles");
  // 3 ranks, two cycles each (steps 10-11 and 20-21): 6 traces. Rank 2 is
  // the slowest in the first cycle, rank 0 in the second.
  for (const int rank : {2, 0, 1})
    for (const int cycle : {0, 1}) {
      const int exchange = cycle == 0 ? 10 + 10 * rank : 40 - 10 * rank;
      write_file(dir.path / ("r" + std::to_string(rank) + "_c" + std::to_string(cycle) + ".pt.trace.json"),
                 cycle_trace(rank, 3, 10 + 10 * cycle, exchange, 1000000000 + cycle * 5000000));
    }
  std::vector<std::string> warnings;
  const auto ranks = pt::summarize_ranks(dir.path, false, warnings);
  CHECK(warnings.empty());
  REQUIRE(ranks.cycles.size() == 2);
  CHECK(ranks.cycles[0].label == "steps 10-11");
  CHECK(ranks.cycles[1].label == "steps 20-21");
  CHECK(ranks.cycles[0].entities == 3);
  CHECK(ranks.cycles[1].entities == 3);
  REQUIRE(ranks.traces.size() == 6);
  CHECK(ranks.traces[0].rank == 0);
  CHECK(ranks.traces[0].cycle == 0);
  CHECK(ranks.traces[3].rank == 0);
  CHECK(ranks.traces[3].cycle == 1);
  CHECK(ranks.traces[3].first_step == 20);
  CHECK(ranks.traces[3].last_step == 21);

  // Today's main: one table per file and "Ranks 6/6" for 3 ranks.
  const auto r = run_cli({"summary", dir.path.string()});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.err.empty());
  const auto c0 = r.out.find("== rank 0 (h), steps 10-11: r0_c0.pt.trace.json"),
             c0r2 = r.out.find("== rank 2 (h), steps 10-11: r2_c0.pt.trace.json"),
             across0 = r.out.find("== across 3 ranks, steps 10-11: self CPU time per key"),
             c1 = r.out.find("== rank 0 (h), steps 20-21: r0_c1.pt.trace.json"),
             across1 = r.out.find("== across 3 ranks, steps 20-21: self CPU time per key");
  REQUIRE(c0 != std::string::npos);
  REQUIRE(c0r2 != std::string::npos);
  REQUIRE(across0 != std::string::npos);
  REQUIRE(c1 != std::string::npos);
  REQUIRE(across1 != std::string::npos);
  CHECK(c0 < c0r2);
  CHECK(c0r2 < across0);
  CHECK(across0 < c1);
  CHECK(c1 < across1);
  CHECK(r.out.find("6/6") == std::string::npos);
  const auto line_of = [&](std::size_t from, const std::string& key) {
    const auto at = r.out.find("\n" + key + " ", from);
    REQUIRE(at != std::string::npos);
    return r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
  };
  const std::string ex0 = line_of(across0, "exchange"), ex1 = line_of(across1, "exchange");
  CHECK_MESSAGE(ex0.find("3/3") != std::string::npos, ex0);
  CHECK_MESSAGE(ex0.find("20.000") != std::string::npos, ex0);  // min: 2 steps x 10 us
  CHECK_MESSAGE(ex0.find("60.000") != std::string::npos, ex0);
  CHECK_MESSAGE(ex0.ends_with("rank 2"), ex0);
  CHECK_MESSAGE(ex1.find("3/3") != std::string::npos, ex1);
  CHECK_MESSAGE(ex1.find("80.000") != std::string::npos, ex1);
  CHECK_MESSAGE(ex1.ends_with("rank 0"), ex1);
  CHECK(r.out.find("2 schedule cycles: each compared across ranks on its own") != std::string::npos);

  // merge: one host process per rank, named with both cycles' steps, no name twice.
  const auto merged = dir.path / "merged.json";
  const auto m = run_cli({"merge", dir.path.string(), "-o", merged.string()});
  REQUIRE_MESSAGE(m.rc == 0, m.err);
  // Events as validate counts them: the 36 copied and the 3 processes' 2 metadata events each.
  CHECK(m.out.find("6 traces, 42 events, 3 ranks") != std::string::npos);
  CHECK(run_cli({"validate", merged.string()}).out.ends_with("valid (42 events)\n"));
  const auto trace = boost::json::parse(slurp(merged)).as_object();
  CHECK(trace.at("proftraceMerged").at("ranks") == 3);
  CHECK(trace.at("proftraceMerged").at("traces") == 6);
  std::vector<std::string> names;
  std::map<std::int64_t, std::set<std::string>> steps_by_pid;
  for (const auto& v : trace.at("traceEvents").as_array()) {
    const auto& e = v.as_object();
    const std::string name(e.at("name").as_string());
    if (name == "process_name") names.emplace_back(e.at("args").at("name").as_string());
    if (name.starts_with("ProfilerStep#")) steps_by_pid[e.at("pid").to_number<std::int64_t>()].insert(name);
  }
  CHECK(names == std::vector<std::string>{"rank 0 (h) steps 10-11, 20-21", "rank 1 (h) steps 10-11, 20-21",
                                          "rank 2 (h) steps 10-11, 20-21"});
  REQUIRE(steps_by_pid.size() == 3);
  for (const auto& [pid, steps] : steps_by_pid) CHECK(steps.size() == 4);  // both cycles on the rank's process
}

TEST_CASE("merge: one process per rank in rank order, clocks moved by each rank's offset, flow ids kept apart") {
  temp_dir dir("cli-merge");
  // Rank 1's clock runs 5 us ahead of rank 0's: its event at the same true time reads 5 us later.
  for (const int rank : {1, 0}) {
    write_file(dir.path / ("rank" + std::to_string(rank) + ".pt.trace.json"),
               "{\"schemaVersion\": 1, \"distributedInfo\": {\"backend\": \"mpi\", \"rank\": " + std::to_string(rank) +
                   ", \"world_size\": 2, \"host\": \"h\"},\n\"clockAlignment\": {\"method\": \"mpi_ping_pong\", "
                   "\"offset_ns\": " + std::to_string(rank * 5000) +
                   "},\n\"baseTimeNanoseconds\": 1000000000,\n\"traceEvents\": [\n"
                   "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 77, \"tid\": 0, \"args\": {\"name\": \"x\"}},\n"
                   "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"work\", \"pid\": 77, \"tid\": 77, "
                   "\"ts\": " + std::to_string(10 + rank * 5) + ".000, \"dur\": 2.000},\n"
                   "{\"ph\": \"s\", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"id\": 9, \"pid\": 77, \"tid\": 77, "
                   "\"ts\": 11.000}\n]}\n");
  }
  const auto merged = dir.path / "merged.json";
  const auto r = run_cli({"merge", dir.path.string(), "-o", merged.string()});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.find("2 traces, 8 events") != std::string::npos);  // 4 copied, 2 names and 2 sort indices of processes
  CHECK(run_cli({"validate", merged.string()}).out.ends_with("valid (8 events)\n"));
  const auto trace = boost::json::parse(slurp(merged)).as_object();
  std::vector<std::string> processes;
  std::vector<double> work_ts;
  std::set<std::int64_t> flow_ids;
  for (const auto& v : trace.at("traceEvents").as_array()) {
    const auto& e = v.as_object();
    if (e.at("name") == "process_name") processes.emplace_back(e.at("args").at("name").as_string());
    if (e.at("name") == "work") work_ts.push_back(e.at("ts").to_number<double>());
    if (e.contains("id")) flow_ids.insert(e.at("id").to_number<std::int64_t>());
  }
  CHECK(processes == std::vector<std::string>{"rank 0 (h)", "rank 1 (h)"});
  REQUIRE(work_ts.size() == 2);
  CHECK(work_ts[0] == doctest::Approx(work_ts[1]));  // the same true time once aligned
  CHECK(flow_ids.size() == 2);

  // A Caliper profile of the job: one row per node and rank; given back as a trace, refused.
  const auto profile = dir.path.parent_path() / "cli-merge-job.cali.json";
  REQUIRE(run_cli({"merge", dir.path.string(), "-o", profile.string()}).rc == 0);
  const auto cali = boost::json::parse(slurp(profile)).as_object();
  CHECK(cali.at("nodes").as_array().size() == 1);
  REQUIRE(cali.at("data").as_array().size() == 2);
  CHECK(cali.at("data").as_array()[1].as_array()[2].as_int64() == 1);  // mpi.rank
  CHECK(cali.at("mpi.world.size").as_int64() == 2);
  const auto refused = run_cli({"merge", profile.string(), "-o", (dir.path / "m3.json").string()});
  CHECK(refused.rc == 1);
  CHECK(refused.err.find("never read back") != std::string::npos);
  std::filesystem::remove(profile);

  write_file(dir.path / "broken.json", "{\"traceEvents\": [{\"ph\": \"X\"");
  CHECK(run_cli({"merge", (dir.path / "broken.json").string(), "-o", (dir.path / "m2.json").string()}).rc == 1);
  CHECK(run_cli({"merge", dir.path.string()}).rc == 2);  // no -o
}

namespace {

// A rank's trace on the time base `base_ns`, its clock offset measured at
// true times 0 and 100 ms after `origin_ns` (offset_ns(true_ms) ahead of
// rank 0's), with a thread_name "M" event at ts 0 as a .pftrace's
// conversion writes, and "work" events at `true_ms` (2 ms each) read on
// this rank's clock.
void write_drifting_rank(const std::filesystem::path& p, int rank, const std::vector<double>& true_ms,
                         const std::function<double(double)>& offset_ns, std::int64_t base_ns, std::int64_t origin_ns) {
  std::string events = "{\"ph\": \"M\", \"name\": \"thread_name\", \"ts\": 0, \"pid\": 7, \"tid\": 7, "
                       "\"args\": {\"name\": \"main\"}}";
  for (const double ms : true_ms) {
    const double ts_us = static_cast<double>(origin_ns - base_ns) / 1000.0 + ms * 1000.0 + offset_ns(ms) / 1000.0;
    const double dur_us = 2000.0 + (offset_ns(ms + 2.0) - offset_ns(ms)) / 1000.0;
    char e[256];
    std::snprintf(e, sizeof e,
                  ",\n{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"work\", \"pid\": 7, \"tid\": 7, "
                  "\"ts\": %.3f, \"dur\": %.3f}",
                  ts_us, dur_us);
    events += e;
  }
  const auto alignment = [&](double ms) {
    const auto offset = static_cast<std::int64_t>(offset_ns(ms));
    return "{\"method\": \"mpi_ping_pong\", \"offset_ns\": " + std::to_string(offset) +
           ", \"at_ns\": " + std::to_string(origin_ns + static_cast<std::int64_t>(ms * 1e6) + offset) + "}";
  };
  write_file(p, "{\"schemaVersion\": 1, \"distributedInfo\": {\"backend\": \"mpi\", \"rank\": " + std::to_string(rank) +
                    ", \"world_size\": 2, \"host\": \"h\"},\n\"clockAlignment\": " + alignment(0) +
                    ",\n\"baseTimeNanoseconds\": " + std::to_string(base_ns) + ",\n\"traceEvents\": [\n" + events +
                    "\n],\n\"clockAlignmentAtStop\": " + alignment(100) + "\n}\n");
}

}  // namespace

TEST_CASE("merge: a rank whose clock drifts is moved by the offsets at start and at stop, interpolated") {
  temp_dir dir("cli-merge-drift");
  // Rank 1's clock reads 5 us ahead at its start (t = 1 s + 0) and 15 us
  // ahead at its stop (t = 1 s + 100 ms): it gains 100 ns per ms. Its events
  // at true times 10 us, 50 ms and 90 ms (each 2 ms long) read late by
  // 5 us + 100 ns per ms; rank 0's are the true times.
  for (const int rank : {0, 1})
    write_drifting_rank(dir.path / ("rank" + std::to_string(rank) + ".pt.trace.json"), rank, {0.01, 50.0, 90.0},
                        [rank](double ms) { return rank == 0 ? 0.0 : 5000.0 + 100.0 * ms; }, 1'000'000'000, 1'000'000'000);
  const auto merged = dir.path / "merged.json";
  const auto r = run_cli({"merge", dir.path.string(), "-o", merged.string()});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.find("2 corrected for their clocks' drift") != std::string::npos);
  const auto trace = boost::json::parse(slurp(merged)).as_object();
  std::map<std::int64_t, std::vector<std::pair<double, double>>> work;  // pid -> (ts, dur)
  for (const auto& v : trace.at("traceEvents").as_array()) {
    const auto& e = v.as_object();
    if (e.at("name") == "work") work[e.at("pid").to_number<std::int64_t>()].emplace_back(e.at("ts").to_number<double>(), e.at("dur").to_number<double>());
  }
  REQUIRE(work.size() == 2);
  const auto& rank0 = work.begin()->second;
  const auto& rank1 = std::next(work.begin())->second;
  REQUIRE(rank0.size() == 3);
  REQUIRE(rank1.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(std::fabs(rank1[i].first - rank0[i].first) <= 0.002);  // within 2 ns: the same true time
    CHECK(std::fabs(rank1[i].second - 2000.0) <= 0.002);
  }
}

TEST_CASE("merge with drift, .json and .pftrace ranks into .json and .pftrace: metadata stays, no extrapolation") {
  temp_dir dir("cli-merge-drift-formats");
  // Rank 1's clock reads 15 us ahead at its start and 5 us at its stop,
  // 100 ms later: it loses 100 ns per ms in the measured window. Its last
  // event, 10 s after the stop, is read with the stop's offset: outside the
  // window the offset of the nearer measurement holds.
  const auto rank1_offset = [](double ms) { return 15000.0 - 100.0 * std::clamp(ms, 0.0, 100.0); };
  const std::vector<double> times = {0.01, 50.0, 90.0, 10'100.0};
  std::filesystem::create_directories(dir.path / "json");
  std::filesystem::create_directories(dir.path / "pftrace");
  // On a recorder's time base (a multiple of 2^51 ns), true time 0 1e15 ns after it (ts about 1e12 us).
  constexpr std::int64_t base_ns = std::int64_t{755} << 51, origin_ns = base_ns + 1'000'000'000'000'000;
  write_drifting_rank(dir.path / "json" / "rank0.pt.trace.json", 0, times, [](double) { return 0.0; }, base_ns, origin_ns);
  write_drifting_rank(dir.path / "json" / "rank1.pt.trace.json", 1, times, rank1_offset, base_ns, origin_ns);
  for (const char* rank : {"rank0", "rank1"})
    REQUIRE(run_cli({"convert", (dir.path / "json" / (std::string(rank) + ".pt.trace.json")).string(),
                     (dir.path / "pftrace" / (std::string(rank) + ".pt.trace.pftrace")).string()}).rc == 0);
  for (const std::string from : {"json", "pftrace"})
    for (const std::string to : {".json", ".pftrace"}) {
      CAPTURE(from);
      CAPTURE(to);
      const auto merged = dir.path / ("merged-" + from + to);
      const auto r = run_cli({"merge", (dir.path / from).string(), "-o", merged.string()});
      REQUIRE_MESSAGE(r.rc == 0, r.err);
      CHECK(r.out.find("2 corrected for their clocks' drift") != std::string::npos);
      const auto v = run_cli({"validate", merged.string()});
      CHECK_MESSAGE(v.rc == 0, v.out);
      auto as_json = merged;
      if (to == ".pftrace") {
        as_json += ".json";
        REQUIRE(run_cli({"convert", merged.string(), as_json.string()}).rc == 0);
      }
      const auto trace = boost::json::parse(slurp(as_json)).as_object();
      std::map<std::int64_t, std::vector<std::pair<double, double>>> work;  // pid -> (ts, dur)
      for (const auto& e : trace.at("traceEvents").as_array()) {
        const auto& o = e.as_object();
        if (o.at("name") == "thread_name") CHECK(o.at("ts").to_number<double>() == 0.0);  // not moved
        if (o.at("name") == "work")
          work[o.at("pid").to_number<std::int64_t>()].emplace_back(o.at("ts").to_number<double>(),
                                                                   o.at("dur").to_number<double>());
      }
      REQUIRE(work.size() == 2);
      const auto& rank0 = work.begin()->second;
      const auto& rank1 = std::next(work.begin())->second;
      REQUIRE(rank0.size() == times.size());
      REQUIRE(rank1.size() == times.size());
      for (std::size_t i = 0; i < times.size(); ++i) {
        CAPTURE(i);
        CHECK(std::fabs(rank1[i].first - rank0[i].first) <= 0.002);  // the same true time
        CHECK(std::fabs(rank1[i].second - 2000.0) <= 0.002);
      }
    }
}

// ---- validate --repair ----

TEST_CASE("merge holds one bounded event: an event over 16 MiB (a 128 MiB gzip bomb) is refused clearly, in little memory") {
  // Before: the event was held about five times over (1 GiB needed 5.3 GB),
  // so under a 512 MiB address-space limit it ended in std::bad_alloc.
  temp_dir dir("cli-merge-bomb");
  const auto bomb = dir.path / "bomb.pt.trace.json.gz";
  write_big_event_trace(bomb, std::size_t{128} << 20);
  const auto merged = dir.path / "merged.json";
  write_file(merged, "an earlier merge\n");
  const auto r = run_cli_limited({"merge", bomb.string(), "-o", merged.string()}, rlim_t{512} << 20);
  MESSAGE("merge of a 128 MiB event: exit " << r.rc << ", peak RSS " << r.max_rss_kb / 1024 << " MiB: " << r.err);
  CHECK(r.rc == 1);
  CHECK(r.err.find("bomb.pt.trace.json.gz: event 1 is longer than 16 MiB of JSON text") != std::string::npos);
  CHECK(r.err.find("bad_alloc") == std::string::npos);
  if (!PROFTRACE_TEST_SANITIZED) CHECK(r.max_rss_kb < 128 * 1024);
  CHECK(slurp(merged) == "an earlier merge\n");  // a failed merge leaves MERGED as it was
  CHECK(test_support::files_in(dir.path).size() == 2);  // and nothing beside it

  // An event under the bound merges whole.
  const auto large = dir.path / "large.pt.trace.json.gz";
  write_big_event_trace(large, std::size_t{4} << 20);
  const auto ok = run_cli_limited({"merge", large.string(), "-o", merged.string()}, rlim_t{512} << 20);
  CHECK(ok.rc == 0);
  CHECK(problems_of(merged).empty());
  CHECK(event_lines(merged).size() == 4);  // two events, two process metadata events
}

TEST_CASE("merge writes only valid JSON, refuses what every other command refuses, and never truncates MERGED on failure") {
  temp_dir dir("cli-merge-strict");
  const auto merged = dir.path / "merged.json";
  const auto trace = [&](const std::string& name, const std::string& text) {
    write_file(dir.path / name, text);
    return (dir.path / name).string();
  };
  const std::string event_head = R"({"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, )";

  SUBCASE("a ts of 1e308 (valid) stays a finite number: the merged trace validates") {
    const auto t = trace("huge.json", "{\"traceEvents\": [" + event_head + R"("ts": 1e308, "dur": 1, "id": 1.5e300}]})");
    REQUIRE(run_cli({"validate", t}).rc == 0);
    const auto r = run_cli({"merge", t, "-o", merged.string()});
    CHECK(r.rc == 0);
    CHECK(r.err.empty());
    const std::string text = slurp(merged);
    CHECK(text.find("inf") == std::string::npos);
    CHECK(problems_of(merged).empty());
    bool found = false;
    pt::read_options opts;
    opts.on_event = [&](const pt::trace_event& e) {
      if (e.name == "a") found = e.ts == 1e308;
      return true;
    };
    pt::read_trace(merged, opts);
    CHECK(found);
  }
  SUBCASE("a number beyond a double (1e400, read as infinity) is refused, MERGED untouched") {
    write_file(merged, "an earlier merge\n");
    const auto t = trace("inf.json", "{\"traceEvents\": [" + event_head + R"("ts": 1e400, "dur": 1}]})");
    const auto r = run_cli({"merge", t, "-o", merged.string()});
    CHECK(r.rc == 1);
    CHECK(r.err.find("inf.json: event 0: \"ts\" is beyond the range of a double") != std::string::npos);
    CHECK(slurp(merged) == "an earlier merge\n");
  }
  SUBCASE("a failed merge leaves an existing MERGED as it was, and no file beside it") {
    write_file(merged, "an earlier merge\n");
    const auto good = trace("good.json", "{\"traceEvents\": [" + event_head + R"("ts": 1, "dur": 1}]})");
    const auto cut = trace("cut.json", "{\"traceEvents\": [" + event_head + R"("ts": 1, "dur": 1}, {"ph": )");
    const auto r = run_cli({"merge", good, cut, "-o", merged.string()});
    CHECK(r.rc == 1);
    CHECK(slurp(merged) == "an earlier merge\n");
    CHECK(test_support::files_in(dir.path).size() == 3);
  }
  SUBCASE("a rank, base or clock offset merge cannot use is refused by name, MERGED untouched") {
    write_file(merged, "an earlier merge\n");
    const std::string events = "\"traceEvents\": [" + event_head + R"("ts": 1, "dur": 1}]})";
    const struct {
      const char* head;
      const char* message;
    } cases[] = {
        {R"("distributedInfo": {"rank": 1e30})", "\"distributedInfo.rank\" is 1e+30, not a rank from 0 to 999999"},
        {R"("distributedInfo": {"rank": -1})", "\"distributedInfo.rank\" is -1, not a rank"},
        {R"("distributedInfo": {"rank": 1000000})", "\"distributedInfo.rank\" is 1000000, not a rank"},
        {R"("distributedInfo": {"rank": 99999999999999999999})", "\"distributedInfo.rank\" is 1e+20, not a rank"},
        {R"("distributedInfo": {"rank": "3"})", "\"distributedInfo.rank\" is 3, not a rank from 0"},
        {R"("baseTimeNanoseconds": 1.5e300)", "\"baseTimeNanoseconds\" is 1.5000000000000001e+300, not an integer of nanoseconds"},
        {R"("baseTimeNanoseconds": 9223372036854775808)", "is 9223372036854775808, not an integer of nanoseconds"},
        {R"("clockAlignment": {"offset_ns": 0.5})", "\"clockAlignment.offset_ns\" is 0.5, not an integer"},
        {R"("baseTimeNanoseconds": 9223372036854775807, "clockAlignment": {"offset_ns": -1})",
         "minus its clock offset -1 is beyond 64-bit nanoseconds"},
    };
    for (const auto& c : cases) {
      const std::string head = c.head;
      CAPTURE(head);
      const auto t = trace("crafted.json", "{" + head + ", " + events);
      const auto r = run_cli({"merge", t, "-o", merged.string()});
      CAPTURE(r.err);
      CHECK(r.rc == 1);
      CHECK(r.err.find(c.message) != std::string::npos);
      CHECK(slurp(merged) == "an earlier merge\n");
    }
    // Each base alone is fine; together they are more than 2^63 ns apart.
    const auto early = trace("early.json", "{\"baseTimeNanoseconds\": -9223372036854775807, " + events);
    const auto late = trace("late.json", "{\"baseTimeNanoseconds\": 9223372036854775807, " + events);
    CHECK(run_cli({"merge", early, "-o", merged.string()}).rc == 0);
    write_file(merged, "an earlier merge\n");
    const auto r = run_cli({"merge", early, late, "-o", merged.string()});
    CHECK(r.rc == 1);
    CHECK(r.err.find("late.json: its clock (baseTimeNanoseconds and clockAlignment) is more than 292 years after") !=
          std::string::npos);
    CHECK(slurp(merged) == "an earlier merge\n");
  }
  SUBCASE("a rank with more than 1000 processes is refused: their pids would reach the next rank's") {
    std::string text = "{\"distributedInfo\": {\"rank\": 0}, \"traceEvents\": [";
    for (int pid = 0; pid <= 1000; ++pid)
      text += std::string(pid ? ", " : "") + R"({"ph": "X", "cat": "cpu_op", "name": "a", "pid": )" + std::to_string(pid) +
              R"(, "tid": 1, "ts": 1, "dur": 1})";
    const auto many = trace("many.json", text + "]}");
    write_file(merged, "an earlier merge\n");
    const auto r = run_cli({"merge", many, "-o", merged.string()});
    CHECK(r.rc == 1);
    CHECK(r.err.find("many.json: rank 0 has more than 1000 processes") != std::string::npos);
    CHECK(slurp(merged) == "an earlier merge\n");
  }
  SUBCASE("rank 1001 and a trace without a rank (merged second) stay two processes") {
    const auto ranked = trace("ranked.json", R"({"distributedInfo": {"rank": 1001}, "traceEvents": [)" + event_head +
                                                 R"("ts": 1, "dur": 1}]})");
    const auto unranked = trace("unranked.json", "{\"traceEvents\": [" + event_head + R"("ts": 2, "dur": 1}]})");
    const auto r = run_cli({"merge", ranked, unranked, "-o", merged.string()});
    REQUIRE(r.rc == 0);
    std::set<std::int64_t> pids;
    std::set<std::string> names;
    const auto trace_json = boost::json::parse(slurp(merged));
    for (const auto& v : trace_json.at("traceEvents").as_array()) {
      const auto& e = v.as_object();
      if (e.at("ph") == "X") pids.insert(e.at("pid").as_int64());
      if (e.at("ph") == "M" && e.at("name") == "process_name") names.insert(std::string(e.at("args").at("name").as_string()));
    }
    CHECK(names.count("unranked.json") == 1);
  }
  SUBCASE("elements of traceEvents that are not objects: exit 1 naming the event, as summary and validate") {
    for (const char* events : {"[1, 2]", "[null]", R"(["x"])", "[true]", "[[1]]", R"([{"ph": "X"}, -3])"}) {
      CAPTURE(events);
      const auto t = trace("scalars.json", std::string("{\"traceEvents\": ") + events + "}");
      CHECK(run_cli({"summary", t}).rc == 1);
      const auto r = run_cli({"merge", t, "-o", merged.string()});
      CHECK(r.rc == 1);
      CHECK(r.err.find("not an object") != std::string::npos);
      CHECK(r.out.find("0 events") == std::string::npos);
    }
  }
  SUBCASE("traceEvents null, an object, or a top-level array: exit 1") {
    for (const char* text : {R"({"traceEvents": null})", R"({"traceEvents": {}})", R"([{"ph": "X"}])", "null"}) {
      CAPTURE(text);
      const auto t = trace("odd.json", text);
      const auto r = run_cli({"merge", t, "-o", merged.string()});
      CHECK(r.rc == 1);
      CHECK(r.err.find("not a Kineto trace") != std::string::npos);
    }
  }
}

TEST_CASE("a merged trace's memory counts in the scopes of its own process only, never another rank's") {
  temp_dir dir("cli-merged-memory");
  // Rank 0 (pid 0) sets up a matrix [10,50] inside its assemble [0,100];
  // rank 1 (pid 1000) waits in MPI_Reduce [0,100] the whole time. Rank 0
  // allocates 1000 B at 20 (in its setup) and 30 B at 70 (in assemble
  // only); rank 1 frees 500 B at 40 and allocates 5 B at 200 (outside
  // every scope of its own, though inside nothing else either).
  const auto path = (dir.path / "merged.json").string();
  write_file(path, R"({"profile_memory": 1, "traceEvents": [
    {"ph":"X","cat":"user_annotation","name":"assemble_FE_data","pid":0,"tid":1,"ts":0,"dur":100},
    {"ph":"X","cat":"user_annotation","name":"matrix_setup","pid":0,"tid":1,"ts":10,"dur":40},
    {"ph":"X","cat":"cpu_op","name":"MPI_Reduce","pid":1000,"tid":1,"ts":0,"dur":100},
    {"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":0,"tid":1,"ts":20,"args":{"Device Type":0,"Bytes":1000}},
    {"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1000,"tid":1,"ts":40,"args":{"Device Type":0,"Bytes":-500}},
    {"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":0,"tid":2,"ts":70,"args":{"Device Type":0,"Bytes":30}},
    {"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1000,"tid":1,"ts":200,"args":{"Device Type":0,"Bytes":5}}]})");
  const auto r = run_cli({"csv", "--numbers", path});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto t = parse_numeric_csv(r.out);
  CHECK(t.at("matrix_setup", "cpu_memory_bytes") == 1000);
  CHECK(t.at("assemble_FE_data", "cpu_memory_bytes") == 1030);  // a thread of its process: counts (tid 2)
  CHECK(t.at("assemble_FE_data", "self_cpu_memory_bytes") == 30);
  CHECK(t.at("MPI_Reduce", "cpu_memory_bytes") == -500);
  CHECK(t.at("MPI_Reduce", "self_cpu_memory_bytes") == -500);
  CHECK(t.at("[memory]", "count") == 1);
  CHECK(t.at("[memory]", "cpu_memory_bytes") == 5);
  // The same numbers whatever the order of the processes' events in the file.
  std::string text = slurp(path);
  const auto reduce = text.find(R"(    {"ph":"X","cat":"cpu_op","name":"MPI_Reduce")");
  const auto line_end = text.find('\n', reduce);
  const std::string line = text.substr(reduce, line_end - reduce + 1);
  text.erase(reduce, line.size());
  text.insert(text.find('\n') + 1, line);
  write_file(path, text);
  CHECK(parse_numeric_csv(run_cli({"csv", "--numbers", path}).out).rows == t.rows);
}

TEST_CASE("merge takes .pftrace traces, in a directory or named, converted on the way; no scratch file is left") {
  temp_dir dir("pftrace-merge");
  const auto json = std::filesystem::path(data_dir) / "pytorch_style.pt.trace.json";
  std::filesystem::copy_file(json, dir.path / "rank0.pt.trace.json");
  REQUIRE(run_cli({"convert", json.string(), (dir.path / "rank1.pftrace").string()}).rc == 0);
  const auto merged = dir.path / "merged.json";
  auto r = run_cli({"merge", dir.path.string(), "-o", merged.string()});
  CHECK(r.rc == 0);
  CHECK(r.out.find("2 traces") != std::string::npos);
  CHECK(r.err.find("skipped") == std::string::npos);
  const auto slices = [](const boost::json::object& trace) {
    std::size_t n = 0;
    for (const auto& e : trace.at("traceEvents").as_array()) n += e.as_object().at("ph") == "X";
    return n;
  };
  // Every slice of both, the converted one's too.
  const auto parsed = [](const std::filesystem::path& p) { return boost::json::parse(slurp(p)).as_object(); };
  CHECK(slices(parsed(merged)) == 2 * slices(parsed(json)));
  r = run_cli({"merge", (dir.path / "rank1.pftrace").string(), "-o", merged.string()});
  CHECK(r.rc == 0);
  CHECK(r.out.find("1 trace") != std::string::npos);
  std::size_t left = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir.path))
    left += f.path().filename().string().starts_with(".proftrace-merge");
  CHECK(left == 0);
}

TEST_CASE("ranks streamed as .pftrace merge as their JSON would: rank, time base, no stray process; -o picks the format") {
  temp_dir dir("pftrace-ranks");
  std::int64_t base_ns = 0;
  struct rank_env {  // a torchrun-style rank for the sessions below, and none after
    explicit rank_env(int rank) {
      ::setenv("RANK", std::to_string(rank).c_str(), 1);
      ::setenv("WORLD_SIZE", "2", 1);
    }
    ~rank_env() {
      ::unsetenv("RANK");
      ::unsetenv("WORLD_SIZE");
    }
  };
  for (const int rank : {0, 1}) {
    const rank_env env(rank);
    proftrace::profile p({.stream_format = proftrace::trace_format::pftrace});
    p.start();
    for (int i = 0; i < 3; ++i) {
      PROF_SCOPE("work");
    }
    p.stop();
    p.export_chrome_trace(dir.path / ("rank" + std::to_string(rank) + ".pt.trace.pftrace"));
    p.export_chrome_trace(dir.path / ("rank" + std::to_string(rank) + ".json"));  // converted from the stream
  }
  // The converted JSON is laid out as proftrace's own: rank and time base
  // before the events (where a reader stopping at them finds them), the
  // counters after, as the "proftrace" key rather than an event.
  const std::string converted = slurp(dir.path / "rank1.json");
  const auto at = [&](const char* key) { return converted.find(key); };
  CHECK(at("\"distributedInfo\"") < at("\"traceEvents\""));
  CHECK(at("\"baseTimeNanoseconds\"") < at("\"traceEvents\""));
  CHECK(at("\"traceEvents\"") < at("\"proftrace\": {"));
  CHECK(at("\"traceEvents\"") < at("\"traceName\""));
  const auto object = boost::json::parse(converted).as_object();
  base_ns = object.at("baseTimeNanoseconds").as_int64();
  CHECK(object.at("proftrace").as_object().at("lost_events_total").as_int64() == 0);
  for (const auto& e : object.at("traceEvents").as_array()) CHECK(e.as_object().at("pid").as_int64() != 0);
  for (const auto& e : std::filesystem::directory_iterator(dir.path))
    if (e.path().extension() == ".json") std::filesystem::remove(e.path());

  const auto merged = dir.path.parent_path() / "pftrace-ranks-merged.json";
  auto r = run_cli({"merge", dir.path.string(), "-o", merged.string()});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("2 traces") != std::string::npos);
  CHECK(r.out.find("2 ranks") != std::string::npos);
  const auto m = boost::json::parse(slurp(merged)).as_object();
  CHECK(m.at("baseTimeNanoseconds").as_int64() == base_ns);
  std::vector<std::string> processes;
  for (const auto& e : m.at("traceEvents").as_array())
    if (e.as_object().at("name") == "process_name")
      processes.emplace_back(e.as_object().at("args").as_object().at("name").as_string());
  REQUIRE(processes.size() == 2);
  CHECK(processes[0].starts_with("rank 0 ("));
  CHECK(processes[1].starts_with("rank 1 ("));

  // -o names the format: Perfetto's, or a refusal for a name of neither.
  const auto merged_pf = dir.path.parent_path() / "pftrace-ranks-merged.pftrace";
  REQUIRE(run_cli({"merge", dir.path.string(), "-o", merged_pf.string()}).rc == 0);
  CHECK(slurp(merged_pf).substr(0, 1) == "\x0a");
  CHECK(run_cli({"summary", merged_pf.string()}).out == run_cli({"summary", merged.string()}).out);
  const auto txt = dir.path.parent_path() / "pftrace-ranks-merged.txt";
  r = run_cli({"merge", dir.path.string(), "-o", txt.string()});
  CHECK(r.rc == 1);
  CHECK(r.err.find("unknown output format") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(txt));
  for (const auto& f : {merged, merged_pf}) std::filesystem::remove(f);
}
