// The job's report across ranks without MPI (lib/aggregation/rank_partial.*,
// lib/reports/rank_table.cpp, rank_csv.cpp): rows encoded per rank, combined
// in any bracketing, decoded; the table and the CSV.
#include <doctest/doctest.h>

#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "aggregation/rank_partial.hpp"
#include "proftrace/rank_averages.hpp"

namespace pd = proftrace::detail;
using proftrace::event_average;
using proftrace::rank_average;
using proftrace::rank_averages;

namespace {

event_average row(std::string key, std::int64_t calls, std::int64_t total_ns, std::int64_t self_ns) {
  event_average r;
  r.key = std::move(key);
  r.count = calls;
  r.cpu_time_total_ns = total_ns;
  r.self_cpu_time_total_ns = self_ns;
  return r;
}

const rank_average& row_named(const rank_averages& report, const std::string& key) {
  for (const rank_average& r : report.rows)
    if (r.key == key) return r;
  FAIL("no row " << key);
  throw std::logic_error("unreachable");
}

// Five ranks: "solve" on every rank, its time growing with the rank;
// "io" on ranks 0, 2 and 3 only; "setup" on rank 4 only.
std::vector<std::string> five_ranks(bool per_rank_values = true) {
  std::vector<std::string> partials;
  for (int rank = 0; rank < 5; ++rank) {
    std::vector<event_average> rows{row("solve", 10, 1000 * (rank + 1), 600 * (rank + 1))};
    if (rank == 0 || rank == 2 || rank == 3) rows.push_back(row("io", 2, 300, 300));
    if (rank == 4) rows.push_back(row("setup", 1, 50, 50));
    partials.push_back(pd::encode_rank_partial(rows, rank, per_rank_values));
  }
  return partials;
}

// The partial of ranks [0, count), each with the same three keys, combined left to right.
std::string alike_ranks(int count, bool per_rank_values) {
  std::string job;
  for (int rank = 0; rank < count; ++rank)
    pd::combine_rank_partials(job, pd::encode_rank_partial({row("solve", 10, 1000 + rank, 500), row("io", 2, 300, 300),
                                                            row("setup", 1, 50 * rank, 50)},
                                                           rank, per_rank_values));
  return job;
}

// Every bracketing of partials[i..j], each combined both ways round
// (the lower range into the upper, and the upper into the lower).
std::vector<std::string> every_bracketing(const std::vector<std::string>& partials, std::size_t i, std::size_t j) {
  if (i == j) return {partials[i]};
  std::vector<std::string> out;
  for (std::size_t k = i; k < j; ++k)
    for (const std::string& left : every_bracketing(partials, i, k))
      for (const std::string& right : every_bracketing(partials, k + 1, j)) {
        std::string a = left;
        pd::combine_rank_partials(a, right);
        std::string b = right;
        pd::combine_rank_partials(b, left);
        out.push_back(a);
        out.push_back(b);
      }
  return out;
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out(1);
  for (const char c : line) {
    if (c == sep) out.emplace_back();
    else out.back().push_back(c);
  }
  return out;
}

}  // namespace

TEST_CASE("combining five ranks' partials in every bracketing and order gives the same bytes") {
  const std::vector<std::string> partials = five_ranks();
  const std::vector<std::string> all = every_bracketing(partials, 0, partials.size() - 1);
  REQUIRE(all.size() == 14 * 16);  // 14 bracketings of 5, each of the 4 combines either way round
  for (const std::string& p : all) REQUIRE(p == all.front());
  std::string from_empty;
  for (const std::string& p : partials) pd::combine_rank_partials(from_empty, p);
  CHECK(from_empty == all.front());
}

TEST_CASE("a key absent from a rank counts 0 there: the min is 0 at the lowest rank without it") {
  std::string job;
  for (const std::string& p : five_ranks()) pd::combine_rank_partials(job, p);
  const rank_averages report = pd::decode_rank_report(job);
  CHECK(report.ranks == 5);
  REQUIRE(report.rows.size() == 3);
  CHECK(report.rows[0].key == "solve");  // first appearance, rank 0's first
  CHECK(report.rows[1].key == "io");
  CHECK(report.rows[2].key == "setup");
  const rank_average& io = row_named(report, "io");
  CHECK(io.min_ns == 0);
  CHECK(io.min_rank == 1);
  CHECK(io.max_ns == 300);
  CHECK(io.max_rank == 0);  // a tie goes to the lowest rank
  CHECK(io.ranks_with_calls == 3);
  CHECK(io.calls == 6);
  REQUIRE(io.per_rank.size() == 3);
  CHECK(io.per_rank[0].rank == 0);
  CHECK(io.per_rank[1].rank == 2);
  CHECK(io.per_rank[2].rank == 3);
  const rank_average& setup = row_named(report, "setup");
  CHECK(setup.min_rank == 0);
  CHECK(setup.min_ns == 0);
  CHECK(setup.max_rank == 4);
  CHECK(setup.max_ns == 50);
  CHECK(setup.ranks_with_calls == 1);
}

TEST_CASE("sums, ranks of the min and max and the imbalance figures match the hand-computed ones") {
  std::string job;
  const std::int64_t totals[] = {10'000, 20'000, 30'000, 40'000};
  for (int rank = 0; rank < 4; ++rank)
    pd::combine_rank_partials(job, pd::encode_rank_partial({row("kernel", 3, totals[rank], totals[rank] / 2)}, rank));
  const rank_averages report = pd::decode_rank_report(job);
  const rank_average& k = row_named(report, "kernel");
  CHECK(k.calls == 12);
  CHECK(k.cpu_time_total_ns == 100'000);
  CHECK(k.self_cpu_time_total_ns == 50'000);
  CHECK(k.min_ns == 10'000);
  CHECK(k.min_rank == 0);
  CHECK(k.max_ns == 40'000);
  CHECK(k.max_rank == 3);
  CHECK(k.mean_ns == doctest::Approx(25'000));
  CHECK(k.imbalance() == doctest::Approx(0.6));  // 40 / 25 - 1
  // (40 - 25) / 40 * 4 / 3 * 100
  CHECK(k.imbalance_percent() == doctest::Approx(50.0));
  rank_average alone = k;
  alone.ranks = 1;
  CHECK(alone.imbalance_percent() == 0.0);
}

TEST_CASE("CUDA time, memory, FLOPs and counters are summed; rows of one key by input shape are one row") {
  event_average a = row("matmul", 2, 500, 400);
  a.input_shapes = "[[2, 2]]";
  a.flops = 1000, a.cpu_memory_usage = 64, a.self_cpu_memory_usage = 32, a.cuda_time_total_ns = 70;
  a.counters = {{"cycles", 100, 80}};
  event_average a2 = row("matmul", 1, 100, 100);
  a2.input_shapes = "[[4, 4]]";
  a2.flops = 24;
  event_average b = row("matmul", 5, 900, 900);
  b.flops = 3000, b.cuda_memory_usage = 4096, b.self_cuda_memory_usage = 4096, b.self_cuda_time_total_ns = 9;
  b.counters = {{"instructions", 7, 7}, {"cycles", 50, 40}};
  std::string job = pd::encode_rank_partial({a, a2}, 0);
  pd::combine_rank_partials(job, pd::encode_rank_partial({b}, 1));
  const rank_averages report = pd::decode_rank_report(job);
  REQUIRE(report.rows.size() == 1);
  const rank_average& m = report.rows[0];
  CHECK(m.calls == 8);
  CHECK(m.cpu_time_total_ns == 1500);
  CHECK(m.flops == 4024);
  CHECK(m.cpu_memory_usage == 64);
  CHECK(m.self_cpu_memory_usage == 32);
  CHECK(m.cuda_memory_usage == 4096);
  CHECK(m.cuda_time_total_ns == 70);
  CHECK(m.self_cuda_time_total_ns == 9);
  REQUIRE(m.counters.size() == 2);
  CHECK(m.counters[0].name == "cycles");
  CHECK(m.counters[0].total == 150);
  CHECK(m.counters[0].self == 120);
  CHECK(m.counters[1].name == "instructions");
  CHECK(m.counters[1].total == 7);
  CHECK(m.per_rank[0].total_ns == 600);  // rank 0's two shapes together
}

TEST_CASE("a key's stack makes it a row of its own") {
  event_average a = row("step", 1, 10, 10), b = row("step", 1, 20, 20);
  a.stack = {"a.cpp(3): outer"};
  b.stack = {"b.cpp(9): other"};
  const rank_averages report = pd::decode_rank_report(pd::encode_rank_partial({a, b}, 0));
  REQUIRE(report.rows.size() == 2);
  CHECK(report.rows[0].stack == std::vector<std::string>{"a.cpp(3): outer"});
  CHECK(report.rows[1].cpu_time_total_ns == 20);
}

TEST_CASE("a malformed partial throws std::runtime_error, whatever its bytes") {
  const std::vector<std::string> partials = five_ranks();
  std::string whole;
  for (const std::string& p : partials) pd::combine_rank_partials(whole, p);
  std::string into = partials[0];
  CHECK_THROWS_AS(pd::combine_rank_partials(into, ""), std::runtime_error);
  CHECK_THROWS_AS(pd::decode_rank_report("PTRK"), std::runtime_error);
  CHECK_THROWS_AS(pd::combine_rank_partials(into, partials[2]), std::runtime_error);  // ranks 0 and 2: not adjacent
  CHECK_THROWS_AS(pd::decode_rank_report(whole + "x"), std::runtime_error);
  for (std::size_t n = 0; n < whole.size(); ++n)
    CHECK_THROWS_AS(pd::decode_rank_report(whole.substr(0, n)), std::runtime_error);
  // Any byte changed: a consistent partial or an exception, never a read past the end (the sanitizers' builds).
  for (std::size_t i = 0; i < whole.size(); ++i)
    for (const unsigned char v : {0x00, 0x7F, 0xFF}) {
      std::string bent = whole;
      bent[i] = static_cast<char>(v);
      try {
        (void)pd::decode_rank_report(bent);
      } catch (const std::runtime_error&) {
      }
    }
}

TEST_CASE("the CSV: the key first, one named column per figure, a row parsed back") {
  std::string job;
  for (const std::string& p : five_ranks()) pd::combine_rank_partials(job, p);
  rank_averages report = pd::decode_rank_report(job);
  report.rows[1].key = "io, \"async\"";
  const std::string csv = report.csv();
  std::istringstream lines(csv);
  std::string header, first, second;
  std::getline(lines, header), std::getline(lines, first), std::getline(lines, second);
  CHECK(header.rfind("key,calls,cpu_time_total_ns,self_cpu_time_total_ns,min_ns,mean_ns,max_ns,min_rank,max_rank,"
                     "imbalance,imbalance_percent,", 0) == 0);
  CHECK(header.ends_with(",stack"));
  const std::vector<std::string> names = split(header, ','), values = split(first, ',');
  REQUIRE(names.size() == values.size());
  std::map<std::string, std::string> solve;
  for (std::size_t i = 0; i < names.size(); ++i) solve[names[i]] = values[i];
  CHECK(solve["key"] == "solve");
  CHECK(solve["calls"] == "50");
  CHECK(solve["cpu_time_total_ns"] == "15000");
  CHECK(solve["max_rank"] == "4");
  CHECK(solve["min_rank"] == "0");
  CHECK(std::stod(solve["mean_ns"]) == doctest::Approx(3000));
  CHECK(std::stod(solve["imbalance"]) == doctest::Approx(5000.0 / 3000.0 - 1));
  CHECK(std::stod(solve["imbalance_percent"]) == doctest::Approx((5000.0 - 3000.0) / 5000.0 * 5 / 4 * 100));
  CHECK(second.rfind("\"io, \"\"async\"\"\",6,", 0) == 0);
}

TEST_CASE("the table names every key with its figures; sort_by orders it; an empty report is its note") {
  std::string job;
  for (const std::string& p : five_ranks()) pd::combine_rank_partials(job, p);
  const rank_averages report = pd::decode_rank_report(job);
  const std::string table = report.table();
  for (const char* key : {"solve", "io", "setup"}) CHECK(table.find(key) != std::string::npos);
  for (const char* column : {"Min rank", "Max rank", "Imbalance %", "Ranks"}) CHECK(table.find(column) != std::string::npos);
  CHECK(table.find("3/5") != std::string::npos);  // io: three ranks of five
  const std::string by_imbalance = report.table({.sort_by = "imbalance_percent"});
  CHECK(by_imbalance.find("setup") < by_imbalance.find("solve"));
  const std::string by_total = report.table({.sort_by = "cpu_time_total", .row_limit = 1});
  CHECK(by_total.find("solve") != std::string::npos);
  CHECK(by_total.find("setup") == std::string::npos);
  CHECK_THROWS_AS((void)report.table({.sort_by = "no_such_key"}), std::invalid_argument);
  rank_averages empty;
  empty.note = "the job's report is on rank 0 (this is rank 3)";
  CHECK(empty.table() == "Note: the job's report is on rank 0 (this is rank 3)\n");
}

TEST_CASE("without per-rank values a partial's size does not grow with its ranks") {
  const std::size_t one = alike_ranks(1, false).size();
  for (const int ranks : {2, 7, 64, 300}) CHECK(alike_ranks(ranks, false).size() == one);
  CHECK(alike_ranks(64, true).size() > alike_ranks(2, true).size());
  CHECK(one < 3 * 160);  // about 128 bytes per key
}

TEST_CASE("without per-rank values every bracketing gives the same bytes and the with-values report's figures") {
  const std::vector<std::string> partials = five_ranks(false);
  const std::vector<std::string> all = every_bracketing(partials, 0, partials.size() - 1);
  for (const std::string& p : all) REQUIRE(p == all.front());
  rank_averages stats = pd::decode_rank_report(all.front());
  std::string with_values;
  for (const std::string& p : five_ranks()) pd::combine_rank_partials(with_values, p);
  rank_averages whole = pd::decode_rank_report(with_values);
  CHECK(whole.per_rank_note.empty());
  CHECK_FALSE(stats.per_rank_note.empty());
  REQUIRE(stats.rows.size() == whole.rows.size());
  for (rank_average& r : stats.rows) CHECK(r.per_rank.empty());
  for (rank_average& r : whole.rows) r.per_rank.clear();
  whole.per_rank_note = stats.per_rank_note;
  CHECK(stats.csv() == whole.csv());
  CHECK(stats.table() == whole.table());
  CHECK(stats.table().find("Per-rank values: " + stats.per_rank_note) != std::string::npos);
  CHECK(row_named(stats, "io").ranks_with_calls == 3);
  CHECK(row_named(stats, "io").min_rank == 1);
  CHECK(row_named(stats, "setup").ranks_with_calls == 1);
}

TEST_CASE("partials with and without per-rank values do not combine; a bad flag or count throws") {
  const std::vector<std::string> with = five_ranks(true), without = five_ranks(false);
  std::string into = with[0];
  CHECK_THROWS_AS(pd::combine_rank_partials(into, without[1]), std::runtime_error);
  into = without[1];
  CHECK_THROWS_AS(pd::combine_rank_partials(into, with[0]), std::runtime_error);
  std::string bent = without[0];
  bent[5] = 2;  // the flags byte
  CHECK_THROWS_AS(pd::decode_rank_report(bent), std::runtime_error);
  bent = without[0];
  bent[bent.size() - 4] = 2;  // the last row's ranks_with_calls: 2 in a range of one rank
  CHECK_THROWS_AS(pd::decode_rank_report(bent), std::runtime_error);
}
