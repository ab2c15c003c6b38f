// tools/diff_statistics.hpp — the statistics behind `proftrace diff`: a rank
// test of two samples (Mann-Whitney U) and the shift between them
// (Hodges-Lehmann) with its interval. Nothing here knows about traces.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace proftrace::tools::stats {

struct rank_test {
  double u = 0;  // pairs (a, b) with b > a, ties counting one half
  double z = 0;  // > 0 when B tends to be larger
  double p = 1;  // two-sided
};

// Mann-Whitney U with the tie correction of its variance and the normal
// approximation with a continuity correction (scipy's mannwhitneyu,
// method="asymptotic"). p = 1 when either side is empty or every value ties.
rank_test mann_whitney(std::span<const double> a, std::span<const double> b);

struct shift_estimate {
  double estimate = 0;      // median of the pairwise differences b - a
  double low = 0, high = 0;  // its distribution-free interval (normal approximation of the ranks)
};

// The two-sided 95% quantile of the standard normal distribution.
inline constexpr double z_95 = 1.959963984540054;

// Hodges-Lehmann shift of B from A. Beyond `max_per_side` values a side is
// thinned to that many evenly spaced order statistics (n*m differences are
// held), which widens the interval a little and keeps memory bounded.
shift_estimate hodges_lehmann(std::span<const double> a, std::span<const double> b, double z = z_95,
                              std::size_t max_per_side = 1000);

// The median (the mean of the middle two for an even count); 0 when empty.
double median(std::vector<double> v);

}  // namespace proftrace::tools::stats
