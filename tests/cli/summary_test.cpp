// The `proftrace` command line: summary: tables of PyTorch-style and proftrace traces, directories of ranks, --flops, table options.
// (Part of the CLI suites; helpers in cli_test_support.hpp.)
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <boost/json.hpp>

#include <chrono>
#include <sstream>
#include <thread>

#include "aggregation/rank_partial.hpp"
#include "flusher_stall.hpp"
#include "test_support.hpp"
#include "cli_test_support.hpp"
#include "trace_summary.hpp"

using namespace cli_test_support;

TEST_CASE("a PyTorch-style trace: counts, self and total times, ProfilerStep*, device events left out") {
  const auto rows = by_key(summarize(pytorch_trace));
  const auto us = [](std::int64_t ns) { return static_cast<double>(ns) / 1e3; };
  REQUIRE(rows.count("ProfilerStep*") == 1);
  CHECK(rows.count("ProfilerStep#1") == 0);
  CHECK(rows.at("ProfilerStep*").count == 2);  // the gpu_user_annotation copy is a device event
  CHECK(us(rows.at("ProfilerStep*").cpu_time_total_ns) == doctest::Approx(900.0));
  CHECK(us(rows.at("ProfilerStep*").self_cpu_time_total_ns) == doctest::Approx(460.0));
  // aten::linear holds aten::t and aten::addmm; addmm holds cudaLaunchKernel.
  CHECK(rows.at("aten::linear").count == 2);
  CHECK(us(rows.at("aten::linear").cpu_time_total_ns) == doctest::Approx(350.0));
  CHECK(us(rows.at("aten::linear").self_cpu_time_total_ns) == doctest::Approx(50.0));
  CHECK(us(rows.at("aten::addmm").self_cpu_time_total_ns) == doctest::Approx(215.0));
  CHECK(us(rows.at("aten::addmm").cpu_time_total_ns) == doctest::Approx(270.0));
  CHECK(us(rows.at("cudaLaunchKernel").self_cpu_time_total_ns) == doctest::Approx(55.0));
  CHECK(us(rows.at("aten::relu").self_cpu_time_total_ns) == doctest::Approx(35.0));
  CHECK(us(rows.at("aten::clamp_min").cpu_time_total_ns) == doctest::Approx(55.0));
  // Another thread overlapping in time nests only within itself.
  CHECK(us(rows.at("aten::to").self_cpu_time_total_ns) == doctest::Approx(50.0));
  CHECK(us(rows.at("aten::copy_").self_cpu_time_total_ns) == doctest::Approx(250.0));
  // No device rows, no instant/flow/metadata rows.
  CHECK(rows.count("void gemm_kernel<float>(float const*, float*)") == 0);
  CHECK(rows.count("Memcpy HtoD (Pageable -> Device)") == 0);
  CHECK(rows.count("[memory]") == 0);
  CHECK(rows.count("ac2g") == 0);
  CHECK(rows.count("process_name") == 0);
  CHECK(rows.size() == 9);

  const auto shaped = by_key(summarize(pytorch_trace, true));
  REQUIRE(shaped.count("aten::addmm [[256], [64, 128], [128, 256], [], []]") == 1);
  CHECK(us(shaped.at("aten::addmm [[256], [64, 128], [128, 256], [], []]").self_cpu_time_total_ns) ==
        doctest::Approx(120.0));
  CHECK(shaped.at("aten::t [[256, 128]]").count == 2);
  CHECK(shaped.at("ProfilerStep*").count == 2);
}

TEST_CASE("OpenMP's spans (cat openmp) are rows and frames of summary and stacks, as in the session's table") {
  temp_dir dir("cli-openmp");
  write_file(dir.path / "omp.json", R"json({"traceEvents": [
    {"ph":"X","cat":"user_annotation","name":"kernels","pid":1,"tid":1,"ts":0,"dur":100},
    {"ph":"X","cat":"openmp","name":"omp parallel: kernels (a.cpp:10)","pid":1,"tid":1,"ts":10,"dur":80},
    {"ph":"X","cat":"openmp","name":"omp implicit task: kernels (a.cpp:10)","pid":1,"tid":1,"ts":12,"dur":76},
    {"ph":"X","cat":"user_annotation","name":"work","pid":1,"tid":1,"ts":20,"dur":30},
    {"ph":"X","cat":"openmp","name":"omp barrier","pid":1,"tid":1,"ts":50,"dur":35}]})json");
  const auto rows = by_key(summarize(dir.path / "omp.json"));
  REQUIRE(rows.count("omp barrier") == 1);
  CHECK(rows.at("kernels").self_cpu_time_total_ns == 20000);
  CHECK(rows.at("omp parallel: kernels (a.cpp:10)").self_cpu_time_total_ns == 4000);
  CHECK(rows.at("omp implicit task: kernels (a.cpp:10)").self_cpu_time_total_ns == 11000);
  CHECK(rows.at("omp barrier").self_cpu_time_total_ns == 35000);
  const std::string stacks = run_cli({"stacks", (dir.path / "omp.json").string()}).out;
  CHECK(stacks.find("kernels;omp parallel: kernels (a.cpp:10);omp implicit task: kernels (a.cpp:10);omp barrier 35") !=
        std::string::npos);
}

TEST_CASE("a full ring's waits and losses: summary gives the session's rows and its Lost events line, in both formats") {
  temp_dir dir("cli-full-ring");
  for (const auto policy : {proftrace::overflow_policy::block, proftrace::overflow_policy::drop})
    for (const auto format : {proftrace::trace_format::json, proftrace::trace_format::pftrace}) {
      CAPTURE(static_cast<int>(policy));
      CAPTURE(static_cast<int>(format));
      proftrace::profile p({.overflow = policy, .ring_events = 64, .stream_format = format});
      p.start();
      const auto scopes = [](int n) {
        for (int i = 0; i < n; ++i) {
          PROF_SCOPE("outer");
          PROF_SCOPE("inner");
        }
      };
      if (policy == proftrace::overflow_policy::drop) {
        test_support::with_flusher_stalled([&] { scopes(1); }, [&] { scopes(19999); }, 2);
      } else {
        std::vector<std::thread> threads;
        for (int t = 0; t < 2; ++t) threads.emplace_back([&] { scopes(20000); });
        for (auto& t : threads) t.join();
      }
      p.stop();
      const auto session = p.key_averages();
      const auto expected = by_key(session);
      if (policy == proftrace::overflow_policy::block) REQUIRE(expected.count("ring full: waiting") == 1);
      else REQUIRE(session.losses.dropped > 0);
      const auto file = dir.path / (format == proftrace::trace_format::json ? "t.json" : "t.pftrace");
      p.export_chrome_trace(file);
      const auto read = summarize(file);
      const auto got = by_key(read);
      REQUIRE(got.size() == expected.size());
      for (auto& [name, w] : expected) {
        const std::string& key = name;
        CAPTURE(key);
        REQUIRE(got.count(key) == 1);
        CHECK(got.at(key).count == w.count);
        CHECK(got.at(key).self_cpu_time_total_ns == w.self_cpu_time_total_ns);  // waits out of "outer"'s
      }
      CHECK(read.losses.dropped == session.losses.dropped);
      CHECK(read.losses.unpaired == session.losses.unpaired);
      CHECK(read.losses.total() == session.losses.total());
      const std::string table = run_cli({"summary", file.string()}).out;
      CHECK((table.find("Lost events: " + std::to_string(session.losses.total())) != std::string::npos) ==
            (session.losses.total() > 0));
      // A directory's per-trace tables carry it too.
      const auto alone = dir.path / "alone";
      std::filesystem::create_directories(alone);
      std::filesystem::copy_file(file, alone / file.filename(), std::filesystem::copy_options::overwrite_existing);
      const std::string per_trace = run_cli({"summary", alone.string()}).out;
      CHECK((per_trace.find("Lost events: " + std::to_string(session.losses.total())) != std::string::npos) ==
            (session.losses.total() > 0));
      std::filesystem::remove_all(alone);
    }
}

TEST_CASE("a trace written by proftrace summarises to key_averages(), in .json, .json.gz and .json.zst") {
  temp_dir dir("cli-own");
  proftrace::profile p({.schedule = proftrace::schedule({.wait = 0, .warmup = 1, .active = 3, .repeat = 1}),
                        .record_shapes = true});
  p.start();
  for (int step = 0; step < 4; ++step) {
    cli_work(4 + step % 2);
    std::thread worker([] {
      PROF_THREAD_NAME("cli worker");
      for (int i = 0; i < 2; ++i) cli_work(16);
    });
    worker.join();
    p.step();
  }
  p.stop();
  const auto expected = by_key(p.key_averages());
  const auto expected_shapes = by_key(p.key_averages(true));
  REQUIRE(expected.count("ProfilerStep*") == 1);
  REQUIRE(expected.count("cli_work") == 1);
  CHECK(expected.at("cli_work").count == 9);  // 3 active steps, 1 + 2 per step
  for (const char* name : {"t.pt.trace.json", "t.pt.trace.json.gz", "t.pt.trace.json.zst"}) {
    CAPTURE(name);
    p.export_chrome_trace(dir.path / name);
    for (bool shapes : {false, true}) {
      CAPTURE(shapes);
      const auto got = by_key(summarize(dir.path / name, shapes));
      const auto& want = shapes ? expected_shapes : expected;
      REQUIRE(got.size() == want.size());
      for (auto& [name, w] : want) {
        const std::string& key = name;  // CAPTURE's lambda: clang before 16 cannot capture a structured binding
        CAPTURE(key);
        REQUIRE(got.count(key) == 1);
        CHECK(got.at(key).count == w.count);
        CHECK(got.at(key).cpu_time_total_ns == w.cpu_time_total_ns);
        CHECK(got.at(key).self_cpu_time_total_ns == w.self_cpu_time_total_ns);
      }
    }
    const auto r = run_cli({"summary", (dir.path / name).string(), "--row-limit", "-1"});
    CHECK(r.rc == 0);
    CHECK(r.err.empty());
    CHECK(r.out.find("cli_leaf") != std::string::npos);
    CHECK(r.out.find("Self CPU time total: ") != std::string::npos);
    CHECK(run_cli({"validate", (dir.path / name).string()}).rc == 0);
  }
}

TEST_CASE("the command line: summary, help and usage errors") {
  auto r = run_cli({"summary", pytorch_trace, "--sort-by", "count", "--row-limit", "3"});
  CHECK(r.rc == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("ProfilerStep*") != std::string::npos);
  CHECK(r.out.find("# of Calls") != std::string::npos);
  CHECK(lines(r.out) == 3 + 3 + 2);  // 3 lines of header, 3 rows, dashes and total
  r = run_cli({"summary", pytorch_trace, "--group-by-shape", "--sort-by=self_cpu_time_total"});
  CHECK(r.rc == 0);
  CHECK(r.out.find("Input Shapes") != std::string::npos);
  CHECK(r.out.find("[[64, 128], [256, 128], [256]]") != std::string::npos);

  for (auto args : std::vector<std::vector<std::string>>{
           {"--help"}, {"summary", "--help"}, {"validate", "--help"}, {"diff", "--help"}, {"diff", "-h"}}) {
    r = run_cli(args);
    CHECK(r.rc == 0);
    CHECK(r.out.find("usage: proftrace") != std::string::npos);
    CHECK(r.out.find("exit codes") != std::string::npos);
  }
  for (auto args : std::vector<std::vector<std::string>>{{},
                                                         {"frobnicate"},
                                                         {"summary"},
                                                         {"summary", pytorch_trace, "--bogus"},
                                                         {"summary", pytorch_trace, "--sort-by", "nope"},
                                                         {"summary", pytorch_trace, "--row-limit", "x"},
                                                         {"summary", pytorch_trace, "--row-limit"},
                                                         {"validate"},
                                                         {"diff", pytorch_trace},
                                                         {"diff", pytorch_trace, pytorch_trace, "--threshold", "-4"}}) {
    CAPTURE(args.size());
    r = run_cli(args);
    CHECK(r.rc == 2);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find("--help") != std::string::npos);
  }
}

TEST_CASE("summary --flops: FLOP counts from a with_flops trace and achieved GFLOP/s") {
  temp_dir dir("cli-flops");
  proftrace::profile p({.with_flops = true});
  p.start();
  for (int i = 0; i < 3; ++i) {
    PROF_SCOPE("gemm");
    PROF_MATMUL(512, 512, 512);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  {
    PROF_SCOPE("huge");  // a rate far wider than its column
    PROF_MATMUL(100000, 100000, 100000);
  }
  p.stop();
  p.export_chrome_trace(dir.path / "t.json");
  auto r = run_cli({"summary", (dir.path / "t.json").string(), "--flops"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("Total GFLOPs") != std::string::npos);  // the table's column (3 x 0.268 GFLOPs)
  CHECK(r.out.find("GFLOP/s") != std::string::npos);
  const auto at = r.out.find("\ngemm ");
  REQUIRE(at != std::string::npos);
  std::istringstream row(r.out.substr(r.out.rfind("\ngemm ") + 1));
  std::string name;
  double gflops = 0, ms = 0, rate = 0;
  row >> name >> gflops >> ms >> rate;
  CHECK(gflops == doctest::Approx(3 * 2.0 * 512 * 512 * 512 / 1e9).epsilon(0.001));
  CHECK(ms >= 3.0);
  CHECK(rate == doctest::Approx(gflops / (ms / 1e3)).epsilon(0.01));
  std::istringstream huge(r.out.substr(r.out.rfind("\nhuge ") + 1));
  huge >> name >> gflops >> ms >> rate;
  CHECK(gflops == doctest::Approx(2e15 / 1e9).epsilon(0.001));
  CHECK(rate > 1e9);  // the columns stay apart: four fields, not three
  r = run_cli({"summary", pytorch_trace, "--flops"});
  CHECK(r.out.find("No FLOP counts in this trace") != std::string::npos);
}

TEST_CASE("summary of a directory: one table per rank in rank order, then the spread across ranks") {
  temp_dir dir("cli-ranks");
  // Rank 1 spends 30 us in "exchange", ranks 0 and 2 spend 10 and 20; written out of order.
  for (const int rank : {2, 0, 1}) {
    const int exchange_us = rank == 1 ? 30 : rank == 0 ? 10 : 20;
    write_file(dir.path / ("rank" + std::to_string(rank) + ".pt.trace.json"),
               "{\"schemaVersion\": 1, \"distributedInfo\": {\"backend\": \"mpi\", \"rank\": " + std::to_string(rank) +
                   ", \"world_size\": 3, \"host\": \"node" + std::to_string(rank) +
                   "\"},\n\"traceEvents\": [\n"
                   "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"compute\", \"pid\": 1, \"tid\": 1, "
                   "\"ts\": 0.000, \"dur\": 50.000},\n"
                   "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"exchange\", \"pid\": 1, \"tid\": 1, "
                   "\"ts\": 60.000, \"dur\": " + std::to_string(exchange_us) + ".000}\n]}\n");
  }
  write_file(dir.path / "notes.txt", "not a trace");
  const auto r = run_cli({"summary", dir.path.string()});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto r0 = r.out.find("== rank 0 (node0)"), r1 = r.out.find("== rank 1 (node1)"), r2 = r.out.find("== rank 2");
  REQUIRE(r0 != std::string::npos);
  CHECK(r0 < r1);
  CHECK(r1 < r2);
  const auto across = r.out.find("== across 3 ranks: self CPU time per key");
  REQUIRE(across != std::string::npos);
  const std::string view = r.out.substr(across);
  // "exchange" spreads 10..30 us (median 20, slowest rank 1) and comes first; "compute" does not spread.
  const auto exchange = view.find("exchange"), compute = view.find("compute");
  REQUIRE(exchange != std::string::npos);
  CHECK(exchange < compute);
  const std::string exchange_line = view.substr(exchange, view.find('\n', exchange) - exchange);
  CHECK_MESSAGE(exchange_line.find("3/3") != std::string::npos, exchange_line);
  CHECK_MESSAGE(exchange_line.find("10.000") != std::string::npos, exchange_line);
  CHECK_MESSAGE(exchange_line.find("20.000") != std::string::npos, exchange_line);
  CHECK_MESSAGE(exchange_line.find("30.000") != std::string::npos, exchange_line);
  CHECK_MESSAGE(exchange_line.ends_with("rank 1"), exchange_line);

  // Two ranks: the median is the mean of the two (10 and 30: 20), not the larger.
  std::filesystem::remove(dir.path / "rank2.pt.trace.json");
  const auto two = run_cli({"summary", dir.path.string()});
  const std::string view2 = two.out.substr(two.out.find("== across 2 ranks"));
  const auto at = view2.find("exchange");
  const std::string line2 = view2.substr(at, view2.find('\n', at) - at);
  CHECK_MESSAGE(line2.find("10.000") < line2.find("20.000"), line2);
  CHECK_MESSAGE(line2.find("20.000") < line2.find("30.000"), line2);
  // The traces say world_size 3: the rank with no trace is named, not silently left out.
  CHECK(r.err.find("no trace of rank") == std::string::npos);
  CHECK(two.err.find("no trace of rank 2 of world_size 3") != std::string::npos);
  // One rank's trace twice: nothing to compare across ranks.
  temp_dir twice("cli-one-rank");
  std::filesystem::copy_file(dir.path / "rank0.pt.trace.json", twice.path / "a.pt.trace.json");
  std::filesystem::copy_file(dir.path / "rank0.pt.trace.json", twice.path / "b.pt.trace.json");
  CHECK(run_cli({"summary", twice.path.string()}).out.find("== across") == std::string::npos);

  temp_dir empty("cli-no-ranks");
  const auto none = run_cli({"summary", empty.path.string()});
  CHECK(none.rc == 1);
  CHECK(none.err.find("no Kineto trace") != std::string::npos);
}

TEST_CASE("summary DIR: a rank or base that is not an integer is named and left out; a base at the end of time orders") {
  temp_dir dir("cli-summary-crafted");
  const std::string event = R"({"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 5, "dur": 1})";
  write_file(dir.path / "crafted.json", R"({"distributedInfo": {"rank": 1e30}, "baseTimeNanoseconds": 9223372036854775807, )"
                                        R"("traceEvents": [)" + event + "]}");
  write_file(dir.path / "rank0.json", R"({"distributedInfo": {"rank": 0}, "traceEvents": [)" + event + "]}");
  write_file(dir.path / "fraction.json", R"({"baseTimeNanoseconds": 0.5, "traceEvents": [)" + event + "]}");
  const auto r = run_cli({"summary", dir.path.string()});
  CAPTURE(r.err);
  CHECK(r.rc == 0);
  CHECK(r.err.find("crafted.json: \"distributedInfo.rank\" is 1e+30, not a rank; the trace is summarised as one "
                   "without a rank") != std::string::npos);
  CHECK(r.err.find("fraction.json: \"baseTimeNanoseconds\" is 0.5, not an integer of nanoseconds; taken as 0") !=
        std::string::npos);
  CHECK(r.out.find("== rank 0") != std::string::npos);
  CHECK(r.out.find("crafted.json") != std::string::npos);
}

TEST_CASE("summary DIR with a symbolic link loop: a clear message, never a raw filesystem error") {
  temp_dir dir("cli-symlink-loop");
  const auto ranks = dir.path / "ranks";
  std::filesystem::create_directories(ranks);
  std::filesystem::copy_file(pytorch_trace, ranks / "rank0.pt.trace.json");
  std::filesystem::create_symlink("loop.json", ranks / "loop.json");           // a link to itself
  std::filesystem::create_symlink("missing.json", ranks / "dangling.json");    // a link to nothing
  // Inside the directory: skipped, named on stderr, exit 0.
  const auto r = run_cli({"summary", ranks.string()});
  CHECK(r.rc == 0);
  CHECK(r.err.find("skipped loop.json: cannot be read: a symbolic link loop") != std::string::npos);
  CHECK(r.err.find("skipped dangling.json: cannot be read: a dangling symbolic link") != std::string::npos);
  CHECK(r.err.find("filesystem error") == std::string::npos);
  // The directory itself a loop: exit 1, one clear line.
  const auto loop = dir.path / "loopdir";
  std::filesystem::create_directory_symlink("loopdir", loop);
  for (const std::vector<std::string>& args : {std::vector<std::string>{"summary", loop.string()},
                                               std::vector<std::string>{"merge", loop.string(), "-o", (dir.path / "m.json").string()}}) {
    const auto e = run_cli(args);
    CHECK(e.rc == 1);
    CHECK(e.err.starts_with("proftrace: error: " + loop.string() + ": cannot be read: a symbolic link loop ("));
    CHECK(lines(e.err) == 1);
  }
}

TEST_CASE("torch traces with with_stack and profile_memory: Python frames nest without rows, memory across threads") {
  temp_dir dir("cli-torch-stack");
  const auto path = (dir.path / "t.pt.trace.json").string();
  write_file(path, torch_stack_trace(torch_stack_events));
  auto r = run_cli({"csv", "--numbers", path});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.starts_with("name,count,cpu_total_us,self_cpu_us,cpu_avg_us,cpu_memory_bytes,self_cpu_memory_bytes\n"));
  const auto t = parse_numeric_csv(r.out);
  CHECK(t.rows.size() == 7);  // no rows for the Python frames; a "[memory]" row for the 7 bytes outside every event
  CHECK(t.at("[memory]", "count") == 1);
  CHECK(t.at("[memory]", "self_cpu_memory_bytes") == 7);
  CHECK(t.rows.count("nn.Module: Linear_0") == 0);
  CHECK(t.at("## forward ##", "self_cpu_us") == 30);  // before: 60 (the Python frame's time counted as its own)
  CHECK(t.at("## forward ##", "cpu_total_us") == 100);
  CHECK(t.at("aten::linear", "self_cpu_us") == 10);
  CHECK(t.at("aten::addmm", "self_cpu_us") == 20);
  CHECK(t.at("aten::add", "self_cpu_us") == 10);
  CHECK(t.at("aten::copy_", "self_cpu_us") == 40);
  // Memory by time interval across all threads: thread 2's 200 bytes count
  // for thread 1's events open at 35 us.
  CHECK(t.at("## forward ##", "cpu_memory_bytes") == 900);
  CHECK(t.at("## forward ##", "self_cpu_memory_bytes") == 0);  // 900 - Linear_0's 1200 - relu's -300
  CHECK(t.at("aten::linear", "cpu_memory_bytes") == 1200);
  CHECK(t.at("aten::linear", "self_cpu_memory_bytes") == 0);
  CHECK(t.at("aten::addmm", "cpu_memory_bytes") == 1200);
  CHECK(t.at("aten::addmm", "self_cpu_memory_bytes") == 1200);
  CHECK(t.at("aten::copy_", "cpu_memory_bytes") == 200);
  CHECK(t.at("aten::relu", "self_cpu_memory_bytes") == -300);
  CHECK(t.at("aten::add", "cpu_memory_bytes") == 50);

  // The table: torch's footer total (self times without the Python frames').
  r = run_cli({"summary", path});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("Self CPU time total: 120.000us") != std::string::npos);
  CHECK(r.out.find("CPU Mem  Self CPU Mem") != std::string::npos);
  CHECK(r.out.find("nn.Module") == std::string::npos);

  // Top level as torch: a key whose first event has no parent, Python frames
  // counting as parents (aten::add lies inside train.py's frame).
  r = run_cli({"summary", path, "--top-level-only"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("This report only display top-level ops statistics\n") != std::string::npos);
  CHECK(r.out.find("## forward ##") != std::string::npos);
  CHECK(r.out.find("aten::copy_") != std::string::npos);
  CHECK(r.out.find("aten::add ") == std::string::npos);
  CHECK(r.out.find("aten::linear") == std::string::npos);

  // Sorted by memory: the largest CPU Mem first, no warning.
  r = run_cli({"summary", path, "--sort-by", "self_cpu_memory_usage"});
  REQUIRE(r.rc == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("aten::addmm") < r.out.find("aten::copy_"));
  CHECK(r.out.find("aten::copy_") < r.out.find("aten::add "));
  CHECK(r.out.find("aten::add ") < r.out.find("## forward ##"));
  CHECK(r.out.find("## forward ##") < r.out.find("aten::relu"));
  r = run_cli({"summary", path, "--sort-by", "cpu_memory_usage"});
  REQUIRE(r.rc == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("aten::linear") < r.out.find("## forward ##"));
  CHECK(r.out.find("## forward ##") < r.out.find("aten::copy_"));

  // torch 2.15 writes the with_flops header but no per-event FLOPs.
  r = run_cli({"summary", path, "--flops"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("producer does not store FLOPs per event") != std::string::npos);
  CHECK(r.out.find("record it with with_flops") == std::string::npos);
  r = run_cli({"summary", path, "--sort-by", "flops"});
  REQUIRE(r.rc == 0);
  CHECK(r.err.find("--sort-by flops sorts nothing: no event has a \"flops\" arg (its producer does not store FLOPs "
                   "per event)") != std::string::npos);

  // torch's table details: Name and Input Shapes right-aligned, [] without shapes.
  r = run_cli({"summary", path, "--group-by-shape", "--sort-by", "count", "--row-limit", "2"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("\n    ## forward ##  ") != std::string::npos);
  CHECK(r.out.find("          Input Shapes  \n") != std::string::npos);
  CHECK(r.out.find("                    []  \n") != std::string::npos);
}

TEST_CASE("summary takes the table's options: --max-name-column-width and friends, --header") {
  temp_dir dir("cli-table-options");
  const std::string long_name = "assemble_FE_data::local_matrix_contributions_with_a_rather_long_name";  // 69 characters
  const auto path = (dir.path / "t.json").string();
  write_file(path, R"({"traceEvents": [
    {"ph":"X","cat":"cpu_op","name":")" + long_name + R"(","pid":1,"tid":1,"ts":0,"dur":10,
     "args":{"Input Dims":[[1024, 1024, 1024], [1024, 1024, 1024], [1024, 1024, 1024], [1024, 1024]]}},
    {"ph":"X","cat":"cpu_op","name":"short","pid":1,"tid":1,"ts":20,"dur":30}]})");
  auto r = run_cli({"summary", path});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find(long_name) == std::string::npos);  // cut at torch's 55 columns
  r = run_cli({"summary", path, "--max-name-column-width", "100", "--max-shapes-column-width=30",
               "--max-src-column-width", "40", "--header", "run 7", "--group-by-shape"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.find(long_name) != std::string::npos);
  // Exactly the session's table() with the same options.
  proftrace::table_options opts;
  opts.sort_by = "self_cpu_time_total";
  opts.max_name_column_width = 100;
  opts.max_shapes_column_width = 30;
  opts.max_src_column_width = 40;
  opts.header = "run 7";
  CHECK(r.out == summarize(path, true).table(opts));
  CHECK(r.out.find("\nrun 7\n") != std::string::npos);
  CHECK(run_cli({"summary", path, "--max-name-column-width", "10"}).out.find("\nassembl...  ") != std::string::npos);
  // A width that would leave no room for a character and "...", or no number: a usage error.
  for (const std::string bad : {"3", "-1", "wide", ""}) {
    CAPTURE(bad);
    r = run_cli({"summary", path, "--max-name-column-width", bad});
    CHECK(r.rc == 2);
    CHECK(r.err.find("option '--max-name-column-width' needs an integer >= 4") != std::string::npos);
  }
  CHECK(run_cli({"summary", path, "--max-shapes-column-width", "0"}).rc == 2);
  CHECK(run_cli({"summary", path, "--max-src-column-width", "x"}).rc == 2);
  CHECK(run_cli({"summary", "--help"}).out.find("--max-name-column-width N") != std::string::npos);
}

TEST_CASE("sort keys without data warn, naming what is missing") {
  temp_dir dir("cli-sortwarn");
  const auto path = (dir.path / "t.json").string();
  write_file(path, R"({"traceEvents": [
    {"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":0,"dur":10},
    {"ph":"X","cat":"cpu_op","name":"b","pid":1,"tid":1,"ts":20,"dur":30}]})");
  auto r = run_cli({"summary", path, "--sort-by", "cpu_memory_usage"});
  REQUIRE(r.rc == 0);
  CHECK(r.err.find("--sort-by cpu_memory_usage sorts nothing: it has no \"[memory]\" events (record it with "
                   "profile_memory); rows keep their order in time") != std::string::npos);
  CHECK(r.out.find(" a  ") < r.out.find(" b  "));
  r = run_cli({"summary", path, "--sort-by", "flops"});
  CHECK(r.err.find("--sort-by flops sorts nothing: no event has a \"flops\" arg (record it with with_flops)") !=
        std::string::npos);
  r = run_cli({"summary", path, "--flops"});
  CHECK(r.out.find("No FLOP counts in this trace (record it with with_flops).") != std::string::npos);
  r = run_cli({"summary", path, "--sort-by", "self_cuda_time_total"});
  CHECK(r.err.find("device (CUDA) time is not read from traces yet") != std::string::npos);
  // Keys with data warn about nothing.
  CHECK(run_cli({"summary", path, "--sort-by", "count"}).err.empty());
  // The PyTorch-style fixture has CUDA memory but no host memory.
  r = run_cli({"summary", pytorch_trace, "--sort-by", "self_cpu_memory_usage"});
  CHECK(r.err.find("sorts nothing: its \"[memory]\" events allocate no host memory inside any event") !=
        std::string::npos);
  CHECK(run_cli({"summary", pytorch_trace, "--sort-by", "cuda_memory_usage"}).err.empty());
}

TEST_CASE("summary --group-by-shape gives a .pftrace's Input Dims as its JSON's") {
  temp_dir dir("pftrace-dims");
  const auto json = dir.path / "dims.json", pf = dir.path / "dims.pftrace";
  // Integer-only dims (the converter's fast path) and the rest (through json::parse).
  write_file(json, R"({"traceEvents": [
    {"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":10,"dur":5,"args":{"Input Dims":[[4, 8], [2, 8]]}},
    {"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":20,"dur":5,"args":{"Input Dims":[[], [0], [12345678901234567890]]}},
    {"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":30,"dur":5,"args":{"Input Dims":[[-1, 2], ["float"]]}},
    {"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":40,"dur":5,"args":{"Input Dims":[]}},
    {"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":50,"dur":5,"args":{"Input Dims":[[[[1]]], [{}]]}}]})");
  REQUIRE(run_cli({"convert", json.string(), pf.string()}).rc == 0);
  const auto from_json = run_cli({"summary", "--group-by-shape", json.string()});
  REQUIRE(from_json.rc == 0);
  CHECK(from_json.out.find("[[], [0], [12345678901234567890]]") != std::string::npos);
  CHECK(run_cli({"summary", "--group-by-shape", pf.string()}).out == from_json.out);
}

namespace {

// `steps` steps on each of two threads, each step "outer" > ("mid" > "leaf"),
// "other", listed as proftrace lists them (children first), the threads in
// turns of 100 steps.
std::string nested_steps(int steps) {
  std::string out = R"({"traceEvents": [)";
  const auto event = [&](const char* name, int tid, std::int64_t ts, std::int64_t dur) {
    out += R"({"ph": "X", "cat": "cpu_op", "name": ")" + std::string(name) + R"(", "pid": 1, "tid": )" +
           std::to_string(tid) + R"(, "ts": )" + std::to_string(ts) + R"(, "dur": )" + std::to_string(dur) + "},";
  };
  for (int turn = 0; turn < steps; turn += 100)
    for (int tid = 1; tid <= 2; ++tid)
      for (int i = turn; i < std::min(steps, turn + 100); ++i) {
        const std::int64_t t = 100 * static_cast<std::int64_t>(i);
        event("leaf", tid, t + 2, 10 + tid);
        event("mid", tid, t + 1, 20);
        event("other", tid, t + 30, 5 * tid);
        event("outer", tid, t, 50);
      }
  out.back() = ']';
  return out + "}";
}

}  // namespace

TEST_CASE("summary of many events: the same rows whatever the spills, in batches across the merge and the replay") {
  temp_dir dir("summary-batches");
  const auto json = dir.path / "steps.json", pftrace = dir.path / "steps.pftrace";
  write_file(json, nested_steps(3'000));  // 24,000 events: several batches on both sides
  REQUIRE(run_cli({"convert", json.string(), pftrace.string()}).rc == 0);
  std::string reference;
  for (const auto& path : {json, pftrace})
    for (const std::size_t bound : {std::size_t{1} << 20, std::size_t{5'000}, std::size_t{999}}) {
      CAPTURE(path);
      CAPTURE(bound);
      pt::aggregator agg(false, std::size_t{1} << 18, bound);
      pt::read_options opts;
      opts.on_event = [&](const pt::trace_event& e) { return agg.add(e).empty(); };
      const pt::read_result r = pt::read_trace(path, opts);
      CHECK(r.events >= 24'000);
      const std::string rows = pt::numeric_csv(agg.finish());
      CHECK((agg.spilled_runs() > 0) == (bound < 24'000));
      if (reference.empty()) reference = rows;
      CHECK(rows == reference);
    }
  CHECK(reference.find("\"leaf\",6000,") != std::string::npos);
  CHECK(run_cli({"summary", pftrace.string()}).out == run_cli({"summary", json.string()}).out);
}

TEST_CASE("summary JOB.cali.json: a job's report across ranks prints rank_averages::table(), sorted as asked") {
  std::string partial;
  for (int rank = 0; rank < 3; ++rank) {
    proftrace::event_average kernel;
    kernel.key = "kernel";
    kernel.count = 5;
    kernel.cpu_time_total_ns = 1'000'000 * (rank + 1);
    kernel.self_cpu_time_total_ns = 400'000 * (rank + 1);
    proftrace::event_average io = kernel;
    io.key = "io";
    io.cpu_time_total_ns = io.self_cpu_time_total_ns = 3'000'000;
    std::vector<proftrace::event_average> rows{kernel};
    if (rank == 1) rows.push_back(io);
    proftrace::detail::combine_rank_partials(partial, proftrace::detail::encode_rank_partial(rows, rank));
  }
  const proftrace::rank_averages job = proftrace::detail::decode_rank_report(partial);
  const test_support::temp_dir tmp("cli-summary-job");
  const auto& dir = tmp.path;
  const auto path = dir / "job.cali.json";
  job.write_profile(path);
  const cli_result plain = run_cli({"summary", path.string()});
  CHECK(plain.rc == 0);
  CHECK(plain.out == job.table({.sort_by = "self_cpu_time_total"}));
  const cli_result sorted = run_cli({"summary", path.string(), "--sort-by", "imbalance_percent", "--row-limit", "1"});
  CHECK(sorted.rc == 0);
  CHECK(sorted.out == job.table({.sort_by = "imbalance_percent", .row_limit = 1}));
  CHECK(sorted.out.find("io ") != std::string::npos);  // on one rank of three: 100 %
  write_file(dir / "bad.cali.json", R"({"proftrace.report": "rank_averages", "nodes": []})");
  const cli_result bad = run_cli({"summary", (dir / "bad.cali.json").string()});
  CHECK(bad.rc == 1);
  CHECK(bad.err.find("bad.cali.json: not a consistent rank profile") != std::string::npos);
}
