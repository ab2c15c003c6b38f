// A real kernel for `proftrace diff`'s evidence (tools/README.md, diff): a
// conjugate-gradient solve of the 2-D Poisson equation (5-point stencil,
// Dirichlet boundary) for a fixed number of iterations, its kernels in
// PROF_SCOPEs, the trace written to the path given.
//
//   proftrace_cg_solve OUT.json [GRID] [ITERATIONS]
//
// PROFTRACE_CG_SLOW_DOT_US=50 spins 50 us more in every `dot` call: the
// injected regression that diff must catch (scripts/diff-evidence.sh).
#include <proftrace/proftrace.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

int grid = 300;
double slow_dot_us = 0;

void spin_us(double us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(us);
  while (std::chrono::steady_clock::now() < until) {
  }
}

void impose_dirichlet(std::vector<double>& v) {
  PROF_SCOPE("impose_dirichlet");
  for (int i = 0; i < grid; ++i) {
    v[static_cast<std::size_t>(i)] = v[static_cast<std::size_t>((grid - 1) * grid + i)] = 0;
    v[static_cast<std::size_t>(i * grid)] = v[static_cast<std::size_t>(i * grid + grid - 1)] = 0;
  }
}

void spmv(const std::vector<double>& x, std::vector<double>& y) {
  PROF_SCOPE("spmv");
  for (int i = 1; i + 1 < grid; ++i)
    for (int j = 1; j + 1 < grid; ++j) {
      const auto k = static_cast<std::size_t>(i * grid + j), g = static_cast<std::size_t>(grid);
      y[k] = 4 * x[k] - x[k - 1] - x[k + 1] - x[k - g] - x[k + g];
    }
  impose_dirichlet(y);
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  PROF_SCOPE("dot");
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  if (slow_dot_us > 0) spin_us(slow_dot_us);
  return s;
}

void axpy(double alpha, const std::vector<double>& x, std::vector<double>& y) {
  PROF_SCOPE("axpy");
  for (std::size_t i = 0; i < x.size(); ++i) y[i] += alpha * x[i];
}

double solve(int iterations) {
  const auto n = static_cast<std::size_t>(grid) * static_cast<std::size_t>(grid);
  std::vector<double> x(n, 0), r(n, 1), p, q(n, 0);
  impose_dirichlet(r);
  p = r;
  double rr = dot(r, r);
  for (int it = 0; it < iterations; ++it) {
    PROF_SCOPE("cg_iteration");
    spmv(p, q);
    const double alpha = rr / dot(p, q);
    axpy(alpha, p, x);
    axpy(-alpha, q, r);
    const double rr_next = dot(r, r);
    for (std::size_t i = 0; i < n; ++i) p[i] = r[i] + rr_next / rr * p[i];
    rr = rr_next;
  }
  return std::sqrt(rr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: proftrace_cg_solve OUT.json [GRID] [ITERATIONS]\n");
    return 2;
  }
  if (argc > 2) grid = std::max(8, std::atoi(argv[2]));
  const int iterations = argc > 3 ? std::max(1, std::atoi(argv[3])) : 133;
  if (const char* slow = std::getenv("PROFTRACE_CG_SLOW_DOT_US")) slow_dot_us = std::atof(slow);
  proftrace::profile prof;
  prof.start();
  const double residual = solve(iterations);
  prof.stop();
  prof.export_chrome_trace(argv[1]);
  std::printf("residual %.6e after %d iterations on %dx%d\n", residual, iterations, grid, grid);
  return 0;
}
