// bench/e2e_workload.cpp — the end-to-end workloads: a blocked matrix
// multiply and a 5-point stencil with one PROF_SCOPE per tile.
//
// Compiled three times into proftrace_bench_e2e, each copy in its own
// namespace (E2E_VARIANT):
//   plain         -DUSE_MACROS=0                        no macro lines at all
//   compiled_out  -DUSE_MACROS=1 -DPROFTRACE_ENABLED=0  the macros, compiled out
//   instrumented  -DUSE_MACROS=1 (the library's switches) runtime off or recording
// and, by the e2e_objcode_identity test, twice more to prove that
// compiled_out and plain hold identical object code.
#include <proftrace/macros.hpp>

#ifndef USE_MACROS
#error "compile with -DUSE_MACROS=0 or -DUSE_MACROS=1"
#endif
#ifndef E2E_VARIANT
#define E2E_VARIANT e2e
#endif

namespace E2E_VARIANT {

// c (n x n) += a * b, in tiles of tile x tile x tile; n a multiple of tile.
void blocked_matmul(const float* a, const float* b, float* c, int n, int tile) {
  for (int i0 = 0; i0 < n; i0 += tile)
    for (int j0 = 0; j0 < n; j0 += tile)
      for (int k0 = 0; k0 < n; k0 += tile) {
#if USE_MACROS
        PROF_SCOPE("matmul.tile");
#endif
        for (int i = i0; i < i0 + tile; ++i)
          for (int k = k0; k < k0 + tile; ++k) {
            const float aik = a[i * n + k];
            for (int j = j0; j < j0 + tile; ++j) c[i * n + j] += aik * b[k * n + j];
          }
      }
}

// One Jacobi sweep of the 5-point stencil over the interior of an n x n
// grid, each row cut into segments of `tile` points (n - 2 a multiple of
// tile); returns the sum of the new values.
float stencil_sweep(const float* in, float* out, int n, int tile) {
  float sum = 0.0f;
  for (int i = 1; i < n - 1; ++i)
    for (int j0 = 1; j0 < n - 1; j0 += tile) {
#if USE_MACROS
      PROF_SCOPE("stencil.tile");
#endif
      float s = 0.0f;
      for (int j = j0; j < j0 + tile; ++j) {
        const int k = i * n + j;
        const float v = 0.2f * (in[k] + in[k - 1] + in[k + 1] + in[k - n] + in[k + n]);
        out[k] = v;
        s += v;
      }
      sum += s;
    }
  return sum;
}

}  // namespace E2E_VARIANT
