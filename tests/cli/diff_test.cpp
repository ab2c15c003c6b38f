// The `proftrace` command line: diff: its statistics, regressions and usage errors.
// (Part of the CLI suites; helpers in cli_test_support.hpp.)
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <algorithm>
#include <numeric>
#include <random>

#include "test_support.hpp"
#include "diff_statistics.hpp"
#include "sample_reservoir.hpp"
#include "cli_test_support.hpp"

using namespace cli_test_support;

namespace {

// A trace of one thread calling each key in turn: `calls` maps a key to its
// per-call durations (us); a rank >= 0 writes distributedInfo.
std::string calls_trace(const std::filesystem::path& path, const std::vector<std::pair<std::string, std::vector<double>>>& calls,
                        int rank = -1) {
  std::string text = "{";
  if (rank >= 0) text += "\"distributedInfo\": {\"rank\": " + std::to_string(rank) + ", \"world_size\": 2},\n";
  text += "\"traceEvents\": [\n";
  double ts = 0;
  bool first = true;
  for (std::size_t i = 0; !calls.empty() && i < calls.front().second.size(); ++i)
    for (const auto& [name, durations] : calls) {
      char ev[256];
      std::snprintf(ev, sizeof ev, "%s{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"%s\",\"pid\":1,\"tid\":1,\"ts\":%.3f,\"dur\":%.3f}",
                    first ? "" : ",\n", name.c_str(), ts, durations[i]);
      text += ev;
      first = false;
      ts += durations[i] + 1;
    }
  write_file(path, text + "]}");
  return path.string();
}

// n per-call times around `us` (lognormal, 10% spread) plus `shift_us`, the
// first `outliers` of them preempted (5 ms): a noisy machine's calls. From
// mt19937's raw output (the standard fixes it; its distributions are not), so
// every standard library gives the same numbers.
std::vector<double> noisy_calls(std::size_t n, double us, unsigned seed, double shift_us = 0, std::size_t outliers = 0) {
  std::mt19937 rng(seed);
  const auto uniform = [&] { return (static_cast<double>(rng()) + 0.5) / 4294967296.0; };
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double normal = std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform());  // Box-Muller
    v[i] = (i < outliers ? 5000.0 : us * std::exp(0.1 * normal)) + shift_us;
  }
  return v;
}

}  // namespace

TEST_CASE("diff statistics: Mann-Whitney U and Hodges-Lehmann against hand-computed values") {
  namespace st = pt::stats;
  const std::vector<double> a{1, 2, 3}, b{4, 5, 6};
  // U = 9 of 9 pairs, mean 4.5, sd sqrt(5.25); z = (4.5 - 0.5) / 2.2913 = 1.7457.
  auto t = st::mann_whitney(a, b);
  CHECK(t.u == 9);
  CHECK(t.z > 0);
  CHECK(t.p == doctest::Approx(0.080856).epsilon(1e-4));
  CHECK(st::mann_whitney(b, a).p == doctest::Approx(t.p));
  CHECK(st::mann_whitney(b, a).z < 0);
  // Ties: ranks 1, 3, 3 | 3, 5.5, 5.5; U_b = 14 - 6 = 8; variance
  // 9/12 * (7 - 30/30) = 4.5; z = (3.5 - 0.5) / sqrt(4.5) = sqrt(2): p = erfc(1).
  t = st::mann_whitney(std::vector<double>{1, 2, 2}, std::vector<double>{2, 3, 3});
  CHECK(t.u == 8);
  CHECK(t.p == doctest::Approx(std::erfc(1.0)).epsilon(1e-9));
  CHECK(st::mann_whitney(std::vector<double>{7, 7}, std::vector<double>{7, 7, 7}).p == 1.0);  // all tied
  CHECK(st::mann_whitney(std::vector<double>{}, b).p == 1.0);
  // Hodges-Lehmann: differences b - a are 1,2,2,3,3,3,4,4,5; k = floor(4.5 - 1.96 * 2.2913) = 0.
  auto s = st::hodges_lehmann(a, b);
  CHECK(s.estimate == 3);
  CHECK(s.low == 1);
  CHECK(s.high == 5);
  std::vector<double> x(100), y(100), big(5000), big_shifted(5000);
  for (int i = 0; i < 100; ++i) x[static_cast<std::size_t>(i)] = i, y[static_cast<std::size_t>(i)] = i + 50;
  s = st::hodges_lehmann(x, y);
  CHECK(s.estimate == 50);
  CHECK((s.low > 40 && s.low < 50 && s.high > 50 && s.high < 60));
  CHECK(st::mann_whitney(x, y).p < 1e-15);
  for (int i = 0; i < 5000; ++i) big[static_cast<std::size_t>(i)] = i, big_shifted[static_cast<std::size_t>(i)] = i + 700;
  s = st::hodges_lehmann(big, big_shifted);  // thinned to 1000 a side
  CHECK(s.estimate == doctest::Approx(700).epsilon(0.01));
  CHECK((s.low < 700 && s.high > 700));
  CHECK(st::median({3, 1, 2}) == 2);
  CHECK(st::median({4, 1, 3, 2}) == 2.5);
  CHECK(st::median({}) == 0);
}

TEST_CASE("sample_reservoir: a bounded, deterministic, uniform sample") {
  pt::sample_reservoir r(100), same(100);
  for (int i = 0; i < 10000; ++i) r.add(i), same.add(i);
  CHECK(r.values().size() == 100);
  CHECK(r.seen() == 10000);
  CHECK(r.values() == same.values());
  const double mean = std::accumulate(r.values().begin(), r.values().end(), 0.0) / 100;
  CHECK((mean > 3500 && mean < 6500));
  CHECK(*std::max_element(r.values().begin(), r.values().end()) > 9000);
  pt::sample_reservoir small(100);
  for (int i = 0; i < 50; ++i) small.add(i);
  CHECK(small.values().size() == 50);  // all kept, in order
  CHECK(small.values().back() == 49);
}

TEST_CASE("diff: per-key rows, new and gone keys, and a single call per side is never significant") {
  temp_dir dir("cli-diff");
  write_file(dir.path / "a.json", R"({"traceEvents": [
    {"ph":"X","cat":"cpu_op","name":"op_a","pid":1,"tid":1,"ts":0,"dur":100},
    {"ph":"X","cat":"cpu_op","name":"op_b","pid":1,"tid":1,"ts":200,"dur":100},
    {"ph":"X","cat":"cpu_op","name":"op_gone","pid":1,"tid":1,"ts":400,"dur":10}]})");
  write_file(dir.path / "b.json", R"({"traceEvents": [
    {"ph":"X","cat":"cpu_op","name":"op_a","pid":1,"tid":1,"ts":0,"dur":150},
    {"ph":"X","cat":"cpu_op","name":"op_b","pid":1,"tid":1,"ts":200,"dur":95},
    {"ph":"X","cat":"cpu_op","name":"op_b","pid":1,"tid":1,"ts":300,"dur":1}]})");
  write_file(dir.path / "c.json", R"({"traceEvents": [
    {"ph":"X","cat":"cpu_op","name":"op_a","pid":1,"tid":1,"ts":0,"dur":100},
    {"ph":"X","cat":"cpu_op","name":"op_new","pid":1,"tid":1,"ts":200,"dur":1}]})");
  const auto A = (dir.path / "a.json").string(), B = (dir.path / "b.json").string(), C = (dir.path / "c.json").string();

  const auto rows = pt::diff(summarize(A), summarize(B));
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].key == "op_a");
  CHECK(rows[0].self_change_ns() == 50000);
  CHECK(rows[0].self_change_pct() == doctest::Approx(50.0));
  CHECK(rows[1].key == "op_gone");
  CHECK(rows[2].key == "op_b");
  CHECK(rows[2].count_a == 1);
  CHECK(rows[2].count_b == 2);
  CHECK(rows[2].self_change_ns() == -4000);

  auto r = run_cli({"diff", A, B});
  CHECK(r.rc == 0);
  CHECK(r.out.find("op_a") < r.out.find("op_b"));
  CHECK(r.out.find("+50.00%") != std::string::npos);  // op_a's median, 100 us -> 150 us
  CHECK(r.out.find("gone") != std::string::npos);
  // One call against one: no test can tell +50% from noise (today's main
  // flagged it: exit 3).
  r = run_cli({"diff", A, B, "--threshold", "40"});
  CHECK_MESSAGE(r.rc == 0, r.out << r.err);
  CHECK(r.out.find("no key's self time grew significantly") != std::string::npos);
  CHECK(run_cli({"diff", A, A, "--threshold", "0"}).rc == 0);
  CHECK(run_cli({"diff", pytorch_trace, pytorch_trace, "--threshold", "0"}).rc == 0);
  // A key new in B counts as before (op_new's 1 us is under the default
  // floor of 10 us: only without the floor is it flagged).
  r = run_cli({"diff", A, C, "--threshold", "1000", "--min-us", "0"});
  CHECK(r.rc == 3);
  CHECK(r.out.find("regression: op_new: new in B") != std::string::npos);
  CHECK(run_cli({"diff", A, C, "--threshold", "1000"}).rc == 0);
}

TEST_CASE("diff: the same distribution with other samples is no regression, whatever the totals") {
  temp_dir dir("cli-diff-noise");
  // dot's totals differ by +50% (3 vs 6 preempted calls of 300: the
  // issue's "dot +74.54%"); the per-call distributions are the same.
  const auto A = calls_trace(dir.path / "a.json", {{"dot", noisy_calls(300, 100, 1, 0, 3)}, {"axpy", noisy_calls(300, 60, 2)}});
  const auto B = calls_trace(dir.path / "b.json", {{"dot", noisy_calls(300, 100, 3, 0, 6)}, {"axpy", noisy_calls(300, 60, 4)}});
  const auto r = run_cli({"diff", A, B, "--threshold", "5"});
  CHECK_MESSAGE(r.rc == 0, r.out << r.err);
  CHECK(r.out.find("REGRESSION") == std::string::npos);
  CHECK(r.out.find("same") != std::string::npos);
  CHECK(r.out.find("no key's self time grew significantly by more than 5%") != std::string::npos);
}

TEST_CASE("diff: a shift of 50 us per call on one key is the one regression") {
  temp_dir dir("cli-diff-shift");
  const auto A = calls_trace(dir.path / "a.json", {{"dot", noisy_calls(300, 100, 1, 0, 3)},
                                                   {"axpy", noisy_calls(300, 60, 2)}, {"spmv", noisy_calls(300, 200, 5)}});
  const auto B = calls_trace(dir.path / "b.json", {{"dot", noisy_calls(300, 100, 3, 0, 6)},
                                                   {"axpy", noisy_calls(300, 60, 4)}, {"spmv", noisy_calls(300, 200, 6, 50)}});
  auto r = run_cli({"diff", A, B, "--threshold", "5"});
  CHECK_MESSAGE(r.rc == 3, r.out << r.err);
  CHECK(r.out.find("regression: spmv: median per-call self time +2") != std::string::npos);  // +25%
  CHECK(r.out.find("regression: dot") == std::string::npos);
  CHECK(r.out.find("regression: axpy") == std::string::npos);
  CHECK(r.err.find("1 key grew significantly") != std::string::npos);
  const auto row = r.out.substr(r.out.find("\nspmv"), r.out.find('\n', r.out.find("\nspmv") + 1) - r.out.find("\nspmv"));
  CHECK(row.find("REGRESSION") != std::string::npos);
  // The shift's interval holds 50 us.
  const auto bracket = row.find('[');
  REQUIRE(bracket != std::string::npos);
  const double low = std::stod(row.substr(bracket + 1)), high = std::stod(row.substr(row.find(", ", bracket) + 2));
  CHECK((low < 50 && high > 50 && low > 40 && high < 60));
  // Above the percentage, or without --threshold: no exit 3.
  CHECK(run_cli({"diff", A, B, "--threshold", "30"}).rc == 0);
  r = run_cli({"diff", A, B});
  CHECK(r.rc == 0);
  CHECK(r.out.find("slower") != std::string::npos);
  // A stricter alpha still catches it; --min-us above its total growth (15 ms) does not.
  CHECK(run_cli({"diff", A, B, "--threshold", "5", "--alpha", "1e-20"}).rc == 3);
  CHECK(run_cli({"diff", A, B, "--threshold", "5", "--min-us", "20000"}).rc == 0);
}

TEST_CASE("diff: a significant growth whose interval reaches below the threshold is no regression") {
  temp_dir dir("cli-diff-interval");
  // 60 calls a side, +8 us on 100 us: the median grew by 8.66%, the shift's
  // interval reaches down to +5.2 us (5.3% of A's median).
  const auto A = calls_trace(dir.path / "a.json", {{"dot", noisy_calls(60, 100, 7)}});
  const auto B = calls_trace(dir.path / "b.json", {{"dot", noisy_calls(60, 100, 8, 8)}});
  auto r = run_cli({"diff", A, B, "--threshold", "7"});
  CHECK_MESSAGE(r.rc == 0, r.out << r.err);
  CHECK(r.out.find("+8.66%") != std::string::npos);
  CHECK(r.out.find("slower") != std::string::npos);
  r = run_cli({"diff", A, B, "--threshold", "5"});
  CHECK_MESSAGE(r.rc == 3, r.out << r.err);
}

TEST_CASE("diff --min-us: a significant growth under the absolute floor is no regression") {
  temp_dir dir("cli-diff-floor");
  // op_small: 10 calls from 3 us to 3.6 us (+20%, +6 us in all), significant.
  const auto A = calls_trace(dir.path / "a.json", {{"op_small", std::vector<double>(10, 3.0)}, {"op_big", std::vector<double>(10, 100.0)}});
  const auto B = calls_trace(dir.path / "b.json", {{"op_small", std::vector<double>(10, 3.6)}, {"op_big", std::vector<double>(10, 100.0)}});
  auto r = run_cli({"diff", A, B, "--threshold", "10"});
  CHECK_MESSAGE(r.rc == 0, r.out << r.err);
  CHECK(r.out.find("slower") != std::string::npos);
  r = run_cli({"diff", A, B, "--threshold", "10", "--min-us", "0"});
  CHECK(r.rc == 3);
  CHECK(r.out.find("regression: op_small: median per-call self time +20.00%") != std::string::npos);
  CHECK(run_cli({"diff", A, B, "--threshold", "10", "--min-us=5.9"}).rc == 3);
  CHECK(run_cli({"diff", A, B, "--threshold", "10", "--min-us=6.1"}).rc == 0);  // both must be exceeded
  CHECK(run_cli({"diff", A, B, "--threshold", "20.5", "--min-us", "0"}).rc == 0);
  for (const char* bad : {"-1", "x", ""}) CHECK(run_cli({"diff", A, B, "--threshold", "10", "--min-us", bad}).rc == 2);
}

TEST_CASE("diff A1 A2 -- B1 B2 pools each side's traces") {
  temp_dir dir("cli-diff-pool");
  std::vector<std::string> a, b, same;
  for (unsigned i = 0; i < 2; ++i) {
    a.push_back(calls_trace(dir.path / ("a" + std::to_string(i) + ".json"), {{"dot", noisy_calls(60, 100, 10 + i)}, {"axpy", noisy_calls(60, 60, 20 + i)}}));
    b.push_back(calls_trace(dir.path / ("b" + std::to_string(i) + ".json"), {{"dot", noisy_calls(60, 100, 30 + i, 50)}, {"axpy", noisy_calls(60, 60, 40 + i)}}));
    same.push_back(calls_trace(dir.path / ("s" + std::to_string(i) + ".json"), {{"dot", noisy_calls(60, 100, 50 + i)}, {"axpy", noisy_calls(60, 60, 60 + i)}}));
  }
  auto r = run_cli({"diff", a[0], a[1], "--", b[0], b[1], "--threshold", "5"});
  CHECK_MESSAGE(r.rc == 3, r.out << r.err);
  CHECK(r.out.find("regression: dot") != std::string::npos);
  CHECK(r.out.find("regression: axpy") == std::string::npos);
  CHECK(r.out.find("     120      120") != std::string::npos);  // calls pooled: 2 x 60 a side
  CHECK(r.out.find("A: " + a[0] + ", " + a[1]) != std::string::npos);
  r = run_cli({"diff", "--threshold", "5", a[0], a[1], "--", same[0], same[1]});
  CHECK_MESSAGE(r.rc == 0, r.out << r.err);
  // Sides of different sizes.
  CHECK(run_cli({"diff", a[0], "--", b[0], b[1], "--threshold", "5"}).rc == 3);
}

TEST_CASE("diff DIR_A DIR_B compares rank by rank and across ranks") {
  temp_dir dir("cli-diff-ranks");
  std::filesystem::create_directories(dir.path / "a");
  std::filesystem::create_directories(dir.path / "b");
  for (int rank = 0; rank < 2; ++rank) {
    const auto name = "rank" + std::to_string(rank) + ".json";
    const unsigned s = static_cast<unsigned>(rank) * 10;
    calls_trace(dir.path / "a" / name, {{"dot", noisy_calls(200, 100, 1 + s)}, {"axpy", noisy_calls(200, 60, 2 + s)}}, rank);
    // Rank 1 of B: dot 50 us slower per call.
    calls_trace(dir.path / "b" / name, {{"dot", noisy_calls(200, 100, 3 + s, rank == 1 ? 50 : 0)}, {"axpy", noisy_calls(200, 60, 4 + s)}}, rank);
  }
  write_file(dir.path / "a" / "notes.json", "[1, 2]");
  auto r = run_cli({"diff", (dir.path / "a").string(), (dir.path / "b").string(), "--threshold", "5"});
  CHECK_MESSAGE(r.rc == 3, r.out << r.err);
  CHECK(r.out.find("\nrank 0:\n") != std::string::npos);
  CHECK(r.out.find("\nrank 1:\n") != std::string::npos);
  CHECK(r.out.find("\nall ranks:\n") != std::string::npos);
  CHECK(r.out.find("regression: dot (rank 1)") != std::string::npos);
  CHECK(r.out.find("regression: dot (rank 0)") == std::string::npos);
  CHECK(r.out.find("regression: axpy") == std::string::npos);
  CHECK(r.err.find("skipped notes.json") != std::string::npos);
  // The same directory on both sides: nothing.
  r = run_cli({"diff", (dir.path / "a").string(), (dir.path / "a").string(), "--threshold", "5"});
  CHECK_MESSAGE(r.rc == 0, r.out << r.err);
}

TEST_CASE("diff: bad sides are usage errors (exit 2), one line, never a crash") {
  temp_dir dir("cli-diff-usage");
  const auto A = calls_trace(dir.path / "a.json", {{"dot", noisy_calls(10, 100, 1)}});
  std::filesystem::create_directories(dir.path / "empty");
  const auto missing = (dir.path / "missing.json").string(), empty = (dir.path / "empty").string();
  for (const auto& args : std::vector<std::vector<std::string>>{{"diff", A, missing, "--threshold", "1"},
                                                                {"diff", missing, A},
                                                                {"diff", A, "--"},
                                                                {"diff", "--", A},
                                                                {"diff", A, "--", A, "--", A},
                                                                {"diff", A, A, A},
                                                                {"diff", A, empty},
                                                                {"diff", A, A, "--alpha", "0"},
                                                                {"diff", A, A, "--alpha", "1.5"}}) {
    const auto r = run_cli(args);
    CAPTURE(args.size());
    CHECK_MESSAGE(r.rc == 2, r.err);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find("--help") != std::string::npos);
  }
  CHECK(run_cli({"diff", A, "--", missing}).err.find("side B: '" + missing + "' does not exist") != std::string::npos);
  // A side that is not a trace at all is an invalid trace (exit 1), as before.
  write_file(dir.path / "junk.json", "not json");
  CHECK(run_cli({"diff", A, (dir.path / "junk.json").string()}).rc == 1);
}
