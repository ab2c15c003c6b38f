// Mann-Whitney U and the Hodges-Lehmann shift (see diff_statistics.hpp).
#include "diff_statistics.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace proftrace::tools::stats {

rank_test mann_whitney(std::span<const double> a, std::span<const double> b) {
  rank_test out;
  const double n = static_cast<double>(a.size()), m = static_cast<double>(b.size());
  if (a.empty() || b.empty()) return out;
  std::vector<std::pair<double, bool>> all;  // (value, from B)
  all.reserve(a.size() + b.size());
  for (double v : a) all.emplace_back(v, false);
  for (double v : b) all.emplace_back(v, true);
  std::sort(all.begin(), all.end());
  double rank_sum_b = 0, ties = 0;  // ties: the sum of t^3 - t over groups of t equal values
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) ++j;
    const double t = static_cast<double>(j - i), mid_rank = static_cast<double>(i + j + 1) / 2.0;
    for (std::size_t k = i; k < j; ++k)
      if (all[k].second) rank_sum_b += mid_rank;
    ties += t * t * t - t;
    i = j;
  }
  const double N = n + m;
  out.u = rank_sum_b - m * (m + 1) / 2.0;
  const double mean = n * m / 2.0;
  const double variance = n * m / 12.0 * ((N + 1) - ties / (N * (N - 1)));
  if (!(variance > 0)) return out;
  const double sd = std::sqrt(variance), d = out.u - mean;
  out.z = d / sd;
  const double corrected = std::max(0.0, std::fabs(d) - 0.5) / sd;
  out.p = std::min(1.0, std::erfc(corrected / std::sqrt(2.0)));
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t h = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h), v.end());
  const double upper = v[h];
  if (v.size() % 2) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h));
  return (lower + upper) / 2.0;
}

namespace {

// At most k values: the sorted sample's order statistics at evenly spaced ranks.
std::vector<double> thinned(std::span<const double> s, std::size_t k) {
  std::vector<double> v(s.begin(), s.end());
  std::sort(v.begin(), v.end());
  if (v.size() <= k) return v;
  std::vector<double> out(k);
  for (std::size_t i = 0; i < k; ++i)
    out[i] = v[static_cast<std::size_t>((static_cast<double>(i) + 0.5) * static_cast<double>(v.size()) / static_cast<double>(k))];
  return out;
}

double kth(std::vector<double>& v, std::size_t k) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace

shift_estimate hodges_lehmann(std::span<const double> a, std::span<const double> b, double z, std::size_t max_per_side) {
  shift_estimate out;
  if (a.empty() || b.empty()) return out;
  const auto x = thinned(a, std::max<std::size_t>(max_per_side, 1)), y = thinned(b, std::max<std::size_t>(max_per_side, 1));
  std::vector<double> d;
  d.reserve(x.size() * y.size());
  for (double bv : y)
    for (double av : x) d.push_back(bv - av);
  const double n = static_cast<double>(x.size()), m = static_cast<double>(y.size());
  // The interval's ends are the k-th smallest and largest differences, k
  // from the normal approximation of U's distribution.
  const double k_real = std::floor(n * m / 2.0 - z * std::sqrt(n * m * (n + m + 1) / 12.0));
  const std::size_t k = k_real > 0 ? static_cast<std::size_t>(k_real) : 0;
  out.low = kth(d, k);
  out.high = kth(d, d.size() - 1 - k);
  out.estimate = median(std::move(d));
  return out;
}

}  // namespace proftrace::tools::stats
