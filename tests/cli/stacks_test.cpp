// The `proftrace` command line: stacks: collapsed stacks, their names and their time.
// (Part of the CLI suites; helpers in cli_test_support.hpp.)
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "test_support.hpp"
#include "cli_test_support.hpp"

using namespace cli_test_support;

TEST_CASE("stacks: collapsed stacks from PyTorch order and from proftrace order") {
  auto r = run_cli({"stacks", pytorch_trace});
  REQUIRE(r.rc == 0);
  // Self times per stack add up to the summary's self times per name.
  CHECK(r.out ==
        "ProfilerStep*;aten::linear;aten::t 30\n"
        "ProfilerStep*;aten::linear;aten::addmm;cudaLaunchKernel 55\n"
        "ProfilerStep*;aten::linear;aten::addmm 215\n"
        "ProfilerStep*;aten::linear 50\n"
        "ProfilerStep*;aten::relu;aten::clamp_min 55\n"
        "ProfilerStep*;aten::relu 35\n"
        "ProfilerStep* 460\n"
        "aten::to 50\n"
        "aten::to;aten::copy_ 250\n");
  CHECK(run_cli({"stacks", pytorch_trace, "--metric", "self_cuda_time_total"}).out.empty());
  CHECK(run_cli({"stacks", pytorch_trace, "--metric", "wall"}).rc == 2);

  temp_dir dir("cli-stacks");
  const auto spin = [](int us) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  proftrace::profile p;
  p.start();
  {
    PROF_SCOPE("outer scope");
    spin(300);
    {
      PROF_SCOPE("inner;part");
      spin(300);
    }
  }
  p.stop();
  p.export_chrome_trace(dir.path / "t.json.gz");
  r = run_cli({"stacks", (dir.path / "t.json.gz").string()});
  REQUIRE(r.rc == 0);
  std::map<std::string, long> values;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) values[line.substr(0, line.rfind(' '))] = std::stol(line.substr(line.rfind(' ') + 1));
  REQUIRE(values.count("outer scope"));  // names as in the table; ';' inside a name as ':'
  REQUIRE(values.count("outer scope;inner:part"));
  CHECK(values["outer scope"] >= 290);
  CHECK(values["outer scope;inner:part"] >= 290);
}

namespace {

// A trace of `n` top-level events on one thread (no nesting), which an
// end-order reader keeps waiting for an enclosing event; then one
// `ProfilerStep#1` enclosing `children` events of as many distinct names,
// written children first (proftrace's order).
void write_flat_trace(const std::filesystem::path& p, int n, int children) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << "{\"traceEvents\": [\n";
  bool first = true;
  const auto event = [&](const std::string& name, std::int64_t ts, std::int64_t dur) {
    out << (first ? "" : ",\n") << "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"" << name
        << "\", \"pid\": 1, \"tid\": 1, \"ts\": " << ts << ", \"dur\": " << dur << "}";
    first = false;
  };
  for (int i = 0; i < n; ++i) event("op" + std::to_string(i % 7), std::int64_t{i} * 10, 5);
  const std::int64_t base = std::int64_t{n} * 10 + 100;
  for (int i = 0; i < children; ++i) event("child" + std::to_string(i), base + 1 + std::int64_t{i} * 3, 2);
  event("ProfilerStep#1", base, std::int64_t{children} * 3 + 2);
  out << "\n]}\n";
}

}  // namespace

TEST_CASE("stacks takes time linear in a thread's top-level events (200,000 flat events, a step of 50,000 distinct children)") {
  // Before: every event walked the thread's pending top-level events (up to
  // 262,144 of them), and a parent searched its children's stacks one by
  // one: 40,000 flat events took 1.4 s and 200,000 about 35 s. Linear, this
  // is well under a second; the bound is generous for a loaded 2-core VM.
  temp_dir dir("cli-stacks-linear");
  const auto trace = dir.path / "flat.json";
  constexpr int flat = 200000, children = 50000;
  write_flat_trace(trace, flat, children);
  // The command's own CPU time: wall time on a loaded machine says little.
  const auto children_cpu = [] {
    rusage u{};
    ::getrusage(RUSAGE_CHILDREN, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  };
  const double cpu0 = children_cpu();
  const auto r = run_cli({"stacks", trace.string()});
  const double seconds = children_cpu() - cpu0;
  MESSAGE("stacks of " << flat << " flat events and " << children << " children: " << seconds << " s of CPU");
  REQUIRE(r.rc == 0);
  CHECK(seconds < (PROFTRACE_TEST_SANITIZED ? 60.0 : 10.0));  // quadratic: about 35 s unsanitized
  // Right as well as fast: each op key's self time (200,000 / 7 events of
  // 5 us), and each child under the step.
  CHECK(r.out.find("op0 " + std::to_string((flat / 7 + 1) * 5) + "\n") != std::string::npos);
  CHECK(r.out.find("ProfilerStep*;child49999 2\n") != std::string::npos);
  CHECK(r.out.find("\nProfilerStep* 50002\n") != std::string::npos);  // 150,002 us less its children's 100,000
  CHECK(lines(r.out) == 7 + children + 1);
}

TEST_CASE("stacks keeps names as they are, so its frames are the table's names; only ';' and line breaks are replaced") {
  temp_dir dir("cli-stack-names");
  const auto path = (dir.path / "t.json").string();
  write_file(path, R"({"traceEvents": [
    {"ph":"X","cat":"user_annotation","name":"forward pass","pid":1,"tid":1,"ts":0,"dur":100},
    {"ph":"X","cat":"cpu_op","name":"aten::conv2d\tbackward","pid":1,"tid":1,"ts":10,"dur":40},
    {"ph":"X","cat":"cpu_op","name":"a;b","pid":1,"tid":1,"ts":60,"dur":10},
    {"ph":"X","cat":"cpu_op","name":"x\ny","pid":1,"tid":1,"ts":75,"dur":5}]})");
  const auto r = run_cli({"stacks", path});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(sorted_lines(r.out) == std::vector<std::string>{"forward pass 45", "forward pass;a:b 10",
                                                       "forward pass;aten::conv2d\tbackward 40", "forward pass;x y 5"});
  // Every frame without ';' or a line break is a row's name as it is.
  const std::string csv = run_cli({"csv", "--numbers", path}).out;
  CHECK(csv.find("\n\"forward pass\",") != std::string::npos);
  CHECK(csv.find("\n\"aten::conv2d\tbackward\",") != std::string::npos);
  CHECK(run_cli({"stacks", "--help"}).out.find("'_'") == std::string::npos);
}
