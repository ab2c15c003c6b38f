// The `proftrace` command line: csv: columns, --numbers and --top-level-only.
// (Part of the CLI suites; helpers in cli_test_support.hpp.)
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <cctype>
#include <chrono>
#include <algorithm>
#include <sstream>

#include "test_support.hpp"
#include "cli_test_support.hpp"

using namespace cli_test_support;

TEST_CASE("csv and --top-level-only") {
  auto r = run_cli({"csv", pytorch_trace});
  REQUIRE(r.rc == 0);
  // The table's columns: a profile_memory trace's memory too.
  CHECK(r.out.starts_with("NAME,SELF CPU %,SELF CPU,CPU TOTAL %,CPU TOTAL,CPU TIME AVG,CPU MEM,SELF CPU MEM,CUDA MEM,"
                          "SELF CUDA MEM,# OF CALLS\n"));
  CHECK(r.out.find("\n\"ProfilerStep*\",38.33%,460.000us,75.00%,900.000us,450.000us,0 b,0 b,0 b,-64.00 Kb,2\n") !=
        std::string::npos);
  r = run_cli({"csv", pytorch_trace, "--group-by-shape"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("\"aten::linear\",2.50%,30.000us,16.67%,200.000us,200.000us,0 b,0 b,0 b,0 b,1,"
                   "\"[[64, 128], [256, 128], [256]]\"") != std::string::npos);
  CHECK(run_cli({"csv"}).rc == 2);
  CHECK(run_cli({"csv", "/nonexistent.json"}).rc == 1);

  // Only keys whose first event had no enclosing event: the steps and the
  // aten::to that runs outside them; every nested op is left out.
  r = run_cli({"summary", pytorch_trace, "--top-level-only"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("ProfilerStep*") != std::string::npos);
  CHECK(r.out.find("aten::to ") != std::string::npos);
  CHECK(r.out.find("aten::addmm") == std::string::npos);
  CHECK(r.out.find("aten::linear") == std::string::npos);
  CHECK(run_cli({"summary", pytorch_trace, "--top-level-only=yes"}).rc == 2);
}

TEST_CASE("csv --numbers: plain numbers, one quantity per column; memory and FLOP columns when the trace has them") {
  // A PyTorch-style trace: its two "[memory]" events are CUDA memory (a
  // 64 KiB block clamp_min allocates in step 1, freed in step 2 outside
  // any op but the step), no FLOPs.
  auto r = run_cli({"csv", "--numbers", pytorch_trace});
  REQUIRE_MESSAGE(r.rc == 0, r.err);  // today's main: unknown option, exit 2
  // The CPU memory columns too, zero, as summary's table has them for a
  // trace recorded with profile_memory: the columns follow the recording.
  CHECK(r.out.starts_with("name,count,cpu_total_us,self_cpu_us,cpu_avg_us,cpu_memory_bytes,self_cpu_memory_bytes,"
                          "cuda_memory_bytes,self_cuda_memory_bytes\n"));
  CHECK(r.out.find("\n\"ProfilerStep*\",2,900.000,460.000,450.000,0,0,0,-65536\n") != std::string::npos);
  CHECK(r.out.find("\n\"aten::relu\",2,90.000,35.000,45.000,0,0,65536,0\n") != std::string::npos);
  CHECK(r.out.find("\n\"aten::clamp_min\",2,55.000,55.000,27.500,0,0,65536,65536\n") != std::string::npos);
  const std::string body = r.out.substr(r.out.find('\n'));
  CHECK(body.find("ms") == std::string::npos);  // no unit in any cell
  CHECK(body.find("us") == std::string::npos);
  CHECK(body.find('%') == std::string::npos);
  r = run_cli({"csv", pytorch_trace, "--numbers", "--group-by-shape"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.starts_with("name,input_shapes,count,cpu_total_us,"));
  CHECK(r.out.find("\"aten::linear\",\"[[64, 128], [256, 128], [256]]\",1,200.000,30.000,200.000,0,0,0,0\n") !=
        std::string::npos);
  // The default output is unchanged.
  CHECK(run_cli({"csv", pytorch_trace}).out.starts_with("NAME,SELF CPU %,SELF CPU,"));
  CHECK(run_cli({"csv", pytorch_trace, "--numbers=1"}).rc == 2);

  // A trace proftrace wrote with profile_memory and with_flops (children
  // before parents): the memory columns match key_averages(), FLOPs too.
  temp_dir dir("cli-csv-numbers");
  static char blocks[8][64];
  proftrace::profile p({.profile_memory = true, .with_flops = true});
  p.start();
  // Pauses between the calls: a memory event at exactly a scope's start or
  // end time counts inside it (the trace cannot tell which side it was on).
  const auto pause = [] { spin(std::chrono::microseconds(2)); };
  for (int i = 0; i < 3; ++i) {
    PROF_SCOPE("outer");
    pause();
    PROF_ALLOC(blocks[i], 1000);  // kept
    pause();
    {
      PROF_SCOPE("gemm");
      PROF_MATMUL(64, 64, 64);
      pause();
      PROF_ALLOC(blocks[4], 300);
      PROF_ALLOC(blocks[5], 20);
      PROF_FREE(blocks[5]);
      pause();
    }
    pause();
    PROF_FREE(blocks[4]);
    pause();
  }
  pause();
  PROF_ALLOC(blocks[6], 7);  // outside every scope: no row
  p.stop();
  p.export_chrome_trace(dir.path / "t.json");
  const auto want = by_key(p.key_averages());
  r = run_cli({"csv", (dir.path / "t.json").string(), "--numbers"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.starts_with(
      "name,count,cpu_total_us,self_cpu_us,cpu_avg_us,cpu_memory_bytes,self_cpu_memory_bytes,flops\n"));
  const auto t = parse_numeric_csv(r.out);
  CHECK(t.at("outer", "cpu_memory_bytes") == 3 * 1000);
  CHECK(t.at("outer", "self_cpu_memory_bytes") == 3 * (1000 - 300));
  CHECK(t.at("gemm", "cpu_memory_bytes") == 3 * 300);
  CHECK(t.at("gemm", "self_cpu_memory_bytes") == 3 * 300);
  CHECK(t.at("gemm", "flops") == 3 * 2.0 * 64 * 64 * 64);
  CHECK(t.at("outer", "flops") == 0);
  CHECK(t.at("outer", "count") == 3);
  // The same figures as key_averages() in the program.
  const auto full = p.key_averages();
  for (const auto& row : full.rows) {
    if (row.key == "[memory]") continue;
    CAPTURE(row.key);
    CHECK(t.at(row.key, "cpu_memory_bytes") == row.cpu_memory_usage);
    CHECK(t.at(row.key, "self_cpu_memory_bytes") == row.self_cpu_memory_usage);
    CHECK(t.at(row.key, "flops") == row.flops);
    CHECK(t.at(row.key, "cpu_total_us") == doctest::Approx(row.cpu_time_total_us()).epsilon(1e-6));
  }
  CHECK(want.at("outer").count == 3);

  // Start order (PyTorch lists an op before what happens inside it), CUDA
  // memory by "Device Type" 1, a memory event outside every op.
  write_file(dir.path / "start_order.json", R"({"traceEvents": [
    {"ph":"X","cat":"cpu_op","name":"step","pid":1,"tid":1,"ts":0,"dur":100},
    {"ph":"X","cat":"cpu_op","name":"aten::empty","pid":1,"tid":1,"ts":10,"dur":10},
    {"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":12,"args":{"Device Type":0,"Bytes":512}},
    {"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":30,"args":{"Device Type":1,"Device Id":0,"Bytes":4096}},
    {"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":40,"args":{"Device Type":0,"Bytes":-512}},
    {"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":200,"args":{"Device Type":0,"Bytes":99}}]})");
  r = run_cli({"csv", (dir.path / "start_order.json").string(), "--numbers"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.starts_with("name,count,cpu_total_us,self_cpu_us,cpu_avg_us,cpu_memory_bytes,self_cpu_memory_bytes,"
                          "cuda_memory_bytes,self_cuda_memory_bytes\n"));
  const auto s = parse_numeric_csv(r.out);
  CHECK(s.at("aten::empty", "self_cpu_memory_bytes") == 512);
  CHECK(s.at("step", "cpu_memory_bytes") == 0);
  CHECK(s.at("step", "self_cpu_memory_bytes") == -512);
  CHECK(s.at("step", "cuda_memory_bytes") == 4096);
  CHECK(s.at("step", "self_cuda_memory_bytes") == 4096);
  CHECK(s.at("aten::empty", "cuda_memory_bytes") == 0);
  // The event outside every op is torch's top-level "[memory]" row.
  CHECK(s.at("[memory]", "count") == 1);
  CHECK(s.at("[memory]", "cpu_memory_bytes") == 99);
  CHECK(s.at("[memory]", "self_cpu_memory_bytes") == 99);
  CHECK(s.at("[memory]", "cuda_memory_bytes") == 0);
  CHECK(s.rows.size() == 3);
}

TEST_CASE("--top-level-only on a trace proftrace wrote (children before parents)") {
  temp_dir dir("cli-top");
  proftrace::profile p;
  p.start();
  for (int i = 0; i < 3; ++i) {
    PROF_SCOPE("outer");
    PROF_SCOPE("inner");
  }
  p.stop();
  p.export_chrome_trace(dir.path / "t.json");
  const auto r = run_cli({"summary", (dir.path / "t.json").string(), "--top-level-only"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("outer") != std::string::npos);
  CHECK(r.out.find("inner") == std::string::npos);
}

TEST_CASE("csv shows the columns summary's table and csv --numbers show: CPU Mem of a profile_memory trace, CUDA Mem, FLOPs") {
  temp_dir dir("cli-csv-columns");
  const auto memory_trace = (dir.path / "memory.pt.trace.json").string();
  write_file(memory_trace, torch_stack_trace(torch_stack_events));
  const auto flops_trace = (dir.path / "flops.json").string();
  write_file(flops_trace, R"({"traceEvents": [
    {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":10,"args":{"flops":2000000}},
    {"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":20,"dur":30}]})");
  // The table's column names, as the header line after the first separator lists them.
  const auto table_columns = [](const std::string& table) {
    std::istringstream in(table);
    std::string line;
    while (std::getline(in, line) && !line.starts_with("--")) {
    }
    std::getline(in, line);
    std::vector<std::string> out;
    std::string cell;
    for (std::size_t i = 0; i <= line.size(); ++i) {
      const bool gap = i == line.size() || (line[i] == ' ' && i + 1 < line.size() && line[i + 1] == ' ');
      if (!gap) cell += line[i];
      else if (!cell.empty()) out.push_back(cell), cell.clear();
      if (gap && cell.empty()) while (i + 1 < line.size() && line[i + 1] == ' ') ++i;
    }
    for (auto& c : out) std::transform(c.begin(), c.end(), c.begin(), [](unsigned char ch) { return std::toupper(ch); });
    return out;
  };
  const auto csv_columns = [](const std::string& csv) {
    std::vector<std::string> out;
    std::istringstream header(csv.substr(0, csv.find('\n')));
    for (std::string c; std::getline(header, c, ',');) out.push_back(c);
    return out;
  };
  for (const std::string& path : {memory_trace, flops_trace, pytorch_trace}) {
    CAPTURE(path);
    const auto csv = run_cli({"csv", path});
    REQUIRE_MESSAGE(csv.rc == 0, csv.err);
    CHECK(csv_columns(csv.out) == table_columns(run_cli({"summary", path}).out));
  }
  const auto csv = run_cli({"csv", memory_trace}).out;
  CHECK(csv.starts_with("NAME,SELF CPU %,SELF CPU,CPU TOTAL %,CPU TOTAL,CPU TIME AVG,CPU MEM,SELF CPU MEM,# OF CALLS\n"));
  CHECK(csv.find("\n\"aten::addmm\",16.67%,20.000us,16.67%,20.000us,20.000us,1.17 Kb,1.17 Kb,1\n") != std::string::npos);
  CHECK(run_cli({"csv", flops_trace}).out.find("\n\"aten::mm\",25.00%,10.000us,25.00%,10.000us,10.000us,1,2.000\n") !=
        std::string::npos);
  // csv --numbers has the same quantities, in plain numbers.
  CHECK(run_cli({"csv", "--numbers", memory_trace}).out.starts_with(
      "name,count,cpu_total_us,self_cpu_us,cpu_avg_us,cpu_memory_bytes,self_cpu_memory_bytes\n"));
}
