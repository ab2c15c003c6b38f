// The job's report across ranks (reduce_rows_across_ranks): the time of one
// call and the bytes each rank sends, at the rank count mpirun gives.
//
//   mpirun --oversubscribe -np 8 ./build/bench/proftrace_bench_rank_reduction [KEYS] [REPETITIONS]
//   bash bench/rank_reduction.sh build     # 2, 4, 8 and 16 ranks
//
// Each rank has KEYS rows (default 50, a kernel's time growing with the
// rank, the others alike). Every repetition starts after a barrier, so that
// the time is the reduction's and not the ranks' arrival skew: encoding,
// the tree's messages and combines, decoding on rank 0. Prints one line:
// ranks, keys, the median call time over the repetitions (the slowest
// rank's, and rank 0's), bytes sent per rank (mean and max over the ranks
// but 0, which sends nothing), and the job partial's size at rank 0; at 2
// ranks also the throughput of one combine of two 512-rank partials (the
// model's figure for large jobs, bench/README.md).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "aggregation/rank_partial.hpp"
#include "aggregation/rank_reduction.hpp"
#include "collect/mpi/rank_reduce.hpp"

namespace {

std::vector<proftrace::event_average> rows_of(int rank, int keys) {
  std::vector<proftrace::event_average> rows;
  for (int k = 0; k < keys; ++k) {
    proftrace::event_average r;
    r.key = k == 0 ? "kernel" : "phase " + std::to_string(k);
    r.count = 100 + k;
    r.cpu_time_total_ns = k == 0 ? 1'000'000LL * (rank + 1) : 50'000 + k;
    r.self_cpu_time_total_ns = r.cpu_time_total_ns / 2;
    rows.push_back(std::move(r));
  }
  return rows;
}

// The partial of ranks [low, low + count): what a subtree of that size sends up.
std::string subtree_partial(int low, int count, int keys, bool per_rank_values) {
  std::string p;
  for (int r = low; r < low + count; ++r)
    proftrace::detail::combine_rank_partials(p, proftrace::detail::encode_rank_partial(rows_of(r, keys), r, per_rank_values));
  return p;
}

// For the model of larger jobs: one combine of two 512-rank subtrees, in
// MB/s of their bytes, and its time in microseconds.
std::pair<double, double> combine_throughput(int keys, bool per_rank_values) {
  const std::string lower = subtree_partial(0, 512, keys, per_rank_values),
                    upper = subtree_partial(512, 512, keys, per_rank_values);
  const auto start = std::chrono::steady_clock::now();
  constexpr int rounds = 20;
  for (int i = 0; i < rounds; ++i) {
    std::string into = lower;
    proftrace::detail::combine_rank_partials(into, upper);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {rounds * static_cast<double>(lower.size() + upper.size()) / s / 1e6, s / rounds * 1e6};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int keys = argc > 1 ? std::atoi(argv[1]) : 50;
  const int repetitions = argc > 2 ? std::atoi(argv[2]) : 20;
  const auto rows = rows_of(rank, keys);
  (void)proftrace::detail::reduce_rows_across_ranks(rows);  // warm-up: the duplicate communicator, connections
  std::vector<double> times_us;
  std::size_t job_bytes = 0;
  for (int i = 0; i < repetitions; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = std::chrono::steady_clock::now();
    const auto job = proftrace::detail::reduce_rows_across_ranks(rows);
    times_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    if (!job || (rank == 0 && static_cast<int>(job->rows.size()) != keys)) MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const proftrace::detail::reduction_stats stats = proftrace::detail::last_reduction_stats();
  if (rank == 0) job_bytes = stats.bytes_received;  // what reached rank 0 (its own partial aside)
  const double mine[2] = {median(times_us), static_cast<double>(stats.bytes_sent)};
  std::vector<double> all(2 * static_cast<std::size_t>(size));
  MPI_Gather(mine, 2, MPI_DOUBLE, all.data(), 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    double slowest = 0, sent_sum = 0, sent_max = 0;
    for (int r = 0; r < size; ++r) {
      slowest = std::max(slowest, all[2 * static_cast<std::size_t>(r)]);
      if (r == 0) continue;
      sent_sum += all[2 * static_cast<std::size_t>(r) + 1];
      sent_max = std::max(sent_max, all[2 * static_cast<std::size_t>(r) + 1]);
    }
    std::printf("ranks %d  keys %d  call median us: slowest rank %.1f, rank 0 %.1f  bytes sent per rank: mean %.0f, "
                "max %.0f  received by rank 0: %zu\n",
                size, keys, slowest, mine[0], size > 1 ? sent_sum / (size - 1) : 0.0, sent_max, job_bytes);
    if (size == 2)
      for (const bool values : {true, false}) {
        const auto [mb_s, us] = combine_throughput(keys, values);
        std::printf("combine of two 512-rank partials (%d keys, %s per-rank values): %.0f MB/s, %.1f us\n", keys,
                    values ? "with" : "without", mb_s, us);
      }
  }
  MPI_Finalize();
  return 0;
}
