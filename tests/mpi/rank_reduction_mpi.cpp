// Runs under `mpirun -np 4` and `-np 8` (tests/mpi/CMakeLists.txt): every
// rank runs every case, and the process fails if any rank fails.
//   - reduce_rows_across_ranks: rank 0 gets the job's report, exact sums,
//     the slowest rank of a kernel whose time grows with the rank is the
//     last, with the imbalance that growth implies; a key on even ranks only
//     has its min (0) at rank 1; the other ranks get a note;
//   - the tree: each rank but 0 sends one message, rank 0 receives
//     ceil(log2 P); repeated reductions agree;
//   - past PROFTRACE_RANK_VALUES_MAX ranks: the same figures without the
//     per-rank values, each message the size of one rank's partial;
//   - PROFTRACE_NO_RANK_REDUCTION: no MPI call (rank 0 calls it three times
//     while the others call it once, and nothing waits), the note says why;
//   - with PROFTRACE_TEST_RANK_PROFILE=PATH rank 0 writes the job profile
//     there and the table beside it (PATH.table), for check_rank_profile.py.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <mpi.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "aggregation/rank_partial.hpp"
#include "aggregation/rank_reduction.hpp"
#include "collect/mpi/rank_reduce.hpp"
#include "mpi_doctest_main.hpp"

namespace pd = proftrace::detail;

namespace {

int world(int (*what)(MPI_Comm, int*)) {
  int v = 0;
  what(MPI_COMM_WORLD, &v);
  return v;
}
int rank() { return world(MPI_Comm_rank); }
int size() { return world(MPI_Comm_size); }

constexpr std::int64_t ms = 1'000'000;

proftrace::event_average row(std::string key, std::int64_t calls, std::int64_t total_ns) {
  proftrace::event_average r;
  r.key = std::move(key);
  r.count = calls;
  r.cpu_time_total_ns = total_ns;
  r.self_cpu_time_total_ns = total_ns / 2;
  return r;
}

// "kernel": (rank + 1) ms over 10 calls; "exchange": even ranks only; 50 keys in all.
std::vector<proftrace::event_average> rows_of_this_rank() {
  std::vector<proftrace::event_average> rows{row("kernel", 10, (rank() + 1) * ms)};
  if (rank() % 2 == 0) rows.push_back(row("exchange", 4, 2 * ms));
  for (int k = 0; k < 48; ++k) rows.push_back(row("phase " + std::to_string(k), 1, 1000 + k));
  return rows;
}

const proftrace::rank_average& row_named(const proftrace::rank_averages& report, const std::string& key) {
  for (const auto& r : report.rows)
    if (r.key == key) return r;
  FAIL("no row " << key);
  throw std::logic_error("unreachable");
}

int ceil_log2(int p) {
  int steps = 0;
  while ((1 << steps) < p) ++steps;
  return steps;
}

// Rank 0's report of rows_of_this_rank() over every rank: exact figures.
void check_job_figures(const proftrace::rank_averages* job) {
  const int p = size();
  CHECK(job->ranks == p);
  CHECK(job->rows.size() == 50);
  const auto& kernel = row_named(*job, "kernel");
  CHECK(kernel.calls == 10 * p);
  CHECK(kernel.cpu_time_total_ns == ms * p * (p + 1) / 2);
  CHECK(kernel.self_cpu_time_total_ns == ms / 2 * p * (p + 1) / 2);
  CHECK(kernel.max_rank == p - 1);
  CHECK(kernel.max_ns == p * ms);
  CHECK(kernel.min_rank == 0);
  CHECK(kernel.min_ns == ms);
  CHECK(kernel.ranks_with_calls == p);
  CHECK(kernel.imbalance() == doctest::Approx(static_cast<double>(p - 1) / (p + 1)));  // p / ((p + 1) / 2) - 1
  CHECK(kernel.imbalance_percent() == doctest::Approx(50.0));  // (p - (p + 1) / 2) / p * p / (p - 1)
  const auto& exchange = row_named(*job, "exchange");
  CHECK(exchange.ranks_with_calls == (p + 1) / 2);
  CHECK(exchange.min_ns == 0);
  CHECK(exchange.min_rank == 1);
  CHECK(exchange.max_rank == 0);
  CHECK(exchange.calls == 4 * ((p + 1) / 2));
}

// Sets PROFTRACE_RANK_VALUES_MAX for its lifetime, then puts back what was there.
class rank_values_max {
 public:
  explicit rank_values_max(const char* value) {
    if (const char* was = std::getenv(name)) before_ = was;
    ::setenv(name, value, 1);
  }
  ~rank_values_max() {
    if (before_) ::setenv(name, before_->c_str(), 1);
    else ::unsetenv(name);
  }

 private:
  static constexpr const char* name = "PROFTRACE_RANK_VALUES_MAX";
  std::optional<std::string> before_;
};

}  // namespace

TEST_CASE("rank 0 has the job's report: exact sums, the last rank the slowest, the imbalance the growth implies") {
  const rank_values_max kept(std::to_string(size()).c_str());
  const auto job = pd::reduce_rows_across_ranks(rows_of_this_rank());
  REQUIRE(job.has_value());
  if (rank() != 0) {
    CHECK(job->rows.empty());
    CHECK(job->note.find("rank 0") != std::string::npos);
    return;
  }
  check_job_figures(&*job);
  CHECK(job->per_rank_note.empty());
  CHECK(row_named(*job, "kernel").per_rank.size() == static_cast<std::size_t>(size()));
}

TEST_CASE("more ranks than PROFTRACE_RANK_VALUES_MAX: the same figures, no per-rank values, every message one rank's size") {
  const rank_values_max bound("2");
  const auto job = pd::reduce_rows_across_ranks(rows_of_this_rank());
  REQUIRE(job.has_value());
  const pd::reduction_stats stats = pd::last_reduction_stats();
  // A subtree below an even rank has that rank's keys, all of them; an odd rank's is itself.
  if (rank() != 0) CHECK(stats.bytes_sent == pd::encode_rank_partial(rows_of_this_rank(), rank(), false).size());
  if (rank() != 0) return;
  check_job_figures(&*job);
  for (const proftrace::rank_average& r : job->rows) CHECK(r.per_rank.empty());
  CHECK(job->per_rank_note.find("PROFTRACE_RANK_VALUES_MAX=2") != std::string::npos);
  CHECK(job->table().find("Per-rank values: ") != std::string::npos);
}

TEST_CASE("PROFTRACE_RANK_VALUES_MAX=0 never keeps them; with per-rank values the messages near rank 0 are larger") {
  std::size_t with = 0, without = 0;
  {
    const rank_values_max bound("0");
    const auto job = pd::reduce_rows_across_ranks(rows_of_this_rank());
    REQUIRE(job.has_value());
    without = pd::last_reduction_stats().bytes_received;
    if (rank() == 0) CHECK_FALSE(job->per_rank_note.empty());
  }
  const rank_values_max bound("4096");
  REQUIRE(pd::reduce_rows_across_ranks(rows_of_this_rank()).has_value());
  with = pd::last_reduction_stats().bytes_received;
  if (rank() == 0) CHECK(with > without);
}

TEST_CASE("a binomial tree: one message from each rank but 0, ceil(log2 P) into rank 0; repeated reductions agree") {
  const auto first = pd::reduce_rows_across_ranks(rows_of_this_rank());
  const pd::reduction_stats stats = pd::last_reduction_stats();
  const auto again = pd::reduce_rows_across_ranks(rows_of_this_rank());
  REQUIRE(first.has_value());
  REQUIRE(again.has_value());
  CHECK(first->csv() == again->csv());
  if (rank() == 0) {
    CHECK(stats.bytes_sent == 0);
    CHECK(stats.children == ceil_log2(size()));
  } else {
    CHECK(stats.bytes_sent > 0);
  }
  CHECK(stats.duration_ns > 0);
}

TEST_CASE("PROFTRACE_NO_RANK_REDUCTION: no MPI call, so ranks may call it unevenly; the note says why") {
  const std::uint64_t calls_before = pd::last_reduction_stats().calls;
  ::setenv("PROFTRACE_NO_RANK_REDUCTION", "1", 1);
  for (int i = 0; i < (rank() == 0 ? 3 : 1); ++i) {
    const auto job = pd::reduce_rows_across_ranks(rows_of_this_rank());
    REQUIRE(job.has_value());
    CHECK(job->rows.empty());
    CHECK(job->note.find("PROFTRACE_NO_RANK_REDUCTION") != std::string::npos);
  }
  ::unsetenv("PROFTRACE_NO_RANK_REDUCTION");
  CHECK(pd::last_reduction_stats().calls == calls_before);
  MPI_Barrier(MPI_COMM_WORLD);  // had rank 0 entered the collective twice more, it would wait here forever
  const auto back_on = pd::reduce_rows_across_ranks(rows_of_this_rank());
  REQUIRE(back_on.has_value());
  CHECK(back_on->rows.empty() == (rank() != 0));
}

TEST_CASE("the job profile and its table, for check_rank_profile.py") {
  const char* path = std::getenv("PROFTRACE_TEST_RANK_PROFILE");
  const auto job = pd::reduce_rows_across_ranks(rows_of_this_rank());
  REQUIRE(job.has_value());
  if (!path || rank() != 0) return;
  job->write_profile(path);
  std::ofstream(std::string(path) + ".table") << job->table({.sort_by = "self_cpu_time_total"});
  std::ofstream(std::string(path) + ".csv") << job->csv();
}

int main(int argc, char** argv) { return test_support::run_doctest_on_every_rank(argc, argv); }
