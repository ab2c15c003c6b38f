// A realistic instrumented kernel for the object-code identity tests
// (tests/build/objcode/check_objcode.cmake). Compiled with -DUSE_MACROS=1 it uses
// the PROF_* macros; with -DUSE_MACROS=0 every macro line is left out. At
// PROFTRACE_ENABLED=0 both objects must hold identical code. With
// -DUMBRELLA=1 the macro build includes the umbrella header and the other
// includes nothing of proftrace: the header itself must add no code either
// (no static initializer, no emitted function or constant).
#if defined(UMBRELLA) && UMBRELLA
#if USE_MACROS
#include <proftrace/proftrace.hpp>
#endif
#else
#include <proftrace/macros.hpp>
#endif

#include <cmath>
#include <cstddef>
#include <vector>

#ifndef USE_MACROS
#error "compile with -DUSE_MACROS=0 or -DUSE_MACROS=1"
#endif

namespace sample {

// One Jacobi sweep over an n x n grid; returns the squared update norm.
double jacobi_sweep(std::vector<double>& next, const std::vector<double>& cur, int n) {
#if USE_MACROS
  PROF_FUNCTION();
#endif
  double residual = 0.0;
  for (int i = 1; i < n - 1; ++i) {
#if USE_MACROS
    PROF_SCOPE("jacobi.row");
#endif
    for (int j = 1; j < n - 1; ++j) {
      const std::size_t k = static_cast<std::size_t>(i) * static_cast<std::size_t>(n) + static_cast<std::size_t>(j);
      const double v = 0.25 * (cur[k - 1] + cur[k + 1] + cur[k - static_cast<std::size_t>(n)] +
                               cur[k + static_cast<std::size_t>(n)]);
      const double d = v - cur[k];
      residual += d * d;
      next[k] = v;
    }
  }
#if USE_MACROS
  PROF_COUNTER("jacobi.residual", std::sqrt(residual));
  PROF_FLOPS(proftrace::flops::estimate{6LL * (n - 2) * (n - 2), true});
#endif
  return residual;
}

// c += a * b, blocked; n a multiple of bs.
void blocked_matmul(const double* a, const double* b, double* c, int n, int bs) {
#if USE_MACROS
  PROF_FUNCTION();
#endif
  for (int ib = 0; ib < n; ib += bs) {
    for (int jb = 0; jb < n; jb += bs) {
      for (int kb = 0; kb < n; kb += bs) {
#if USE_MACROS
        PROF_SCOPE_SHAPES("gemm_block", {bs, bs}, {bs, bs}, {ib, jb});
        PROF_MATMUL(bs, bs, bs);
        PROF_FLOPS(2 * bs * bs * bs);
        PROF_FLOPS({2LL * bs * bs * bs, true});
#endif
        for (int i = ib; i < ib + bs; ++i)
          for (int k = kb; k < kb + bs; ++k) {
            const double aik = a[i * n + k];
            for (int j = jb; j < jb + bs; ++j) c[i * n + j] += aik * b[k * n + j];
          }
      }
    }
#if USE_MACROS
    PROF_COUNTER("matmul.rows_done", ib + bs);
#endif
  }
}

// The driver: steps, module scopes, an instant on convergence.
double solve(int n, int max_iters, double tol) {
#if USE_MACROS
  PROF_THREAD_NAME("solver");
  PROF_OP("solve");
#endif
  std::vector<double> cur(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), 0.0);
  std::vector<double> next(cur.size(), 0.0);
  for (int j = 0; j < n; ++j) cur[static_cast<std::size_t>(j)] = next[static_cast<std::size_t>(j)] = 1.0;
  double r = 0.0;
  for (int it = 0; it < max_iters; ++it) {
#if USE_MACROS
    PROF_STEP();
    PROF_MODULE("solver.sweep");
    PROF_FLOPS_SCOPE("solver.flops", static_cast<unsigned>(n) * 6u);
#endif
    r = jacobi_sweep(next, cur, n);
    cur.swap(next);
    if (r < tol) {
#if USE_MACROS
      PROF_INSTANT("solver.converged");
#endif
      break;
    }
  }
  return r;
}

}  // namespace sample
