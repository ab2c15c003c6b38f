// bench/csr_matvec.hpp — a sparse matrix-vector product y = A x (CSR), the
// kernel of a CG solver, compiled plain and with the three macros a real
// solver carried around it (PROF_SCOPE_SHAPES, PROF_FLOPS, a nested
// PROF_SCOPE). proftrace_bench_placement times them with no session
// recording; tests/build/codegen checks what the macros leave in the function.
//
//   const auto a = proftrace_bench::laplacian_2d(300);
//   proftrace_bench::matvec_instrumented<0>(a.view(), x.data(), y.data());
#pragma once

#include <proftrace/macros.hpp>

#include <cstddef>
#include <vector>

namespace proftrace_bench {

struct csr_view {
  const int* row;  // n + 1 offsets into col and val
  const int* col;
  const double* val;
  std::size_t n;
  std::size_t nnz;
};

struct csr_matrix {
  std::vector<int> row, col;
  std::vector<double> val;
  csr_view view() const noexcept { return {row.data(), col.data(), val.data(), row.size() - 1, val.size()}; }
};

// The 5-point Laplacian of an m x m grid: m^2 rows, about 5 m^2 entries.
inline csr_matrix laplacian_2d(int m) {
  csr_matrix a;
  a.row.push_back(0);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < m; ++j) {
      const auto put = [&](int c, double v) { a.col.push_back(c), a.val.push_back(v); };
      if (i > 0) put((i - 1) * m + j, -1.0);
      if (j > 0) put(i * m + j - 1, -1.0);
      put(i * m + j, 4.0);
      if (j + 1 < m) put(i * m + j + 1, -1.0);
      if (i + 1 < m) put((i + 1) * m + j, -1.0);
      a.row.push_back(static_cast<int>(a.col.size()));
    }
  }
  return a;
}

// `Pad` bytes of never-executed code before the loop (jumped over) move the
// loop to another place relative to the 64-byte-aligned function start: the
// code placement that alone makes two builds of one loop differ.
template <int Pad>
[[gnu::always_inline]] inline void placement_padding() noexcept {
  if constexpr (Pad > 0) asm volatile("jmp 1f\n\t.skip %c0, 0xcc\n1:" ::"i"(Pad));
}

[[gnu::always_inline]] inline void csr_matvec_rows(const csr_view& a, const double* x, double* y) noexcept {
  for (std::size_t i = 0; i < a.n; ++i) {
    double s = 0;
    for (int k = a.row[i]; k < a.row[i + 1]; ++k) s += a.val[k] * x[a.col[k]];
    y[i] = s;
  }
}

template <int Pad>
[[gnu::noinline, gnu::aligned(64)]] void matvec_plain(const csr_view& a, const double* x, double* y) noexcept {
  placement_padding<Pad>();
  csr_matvec_rows(a, x, y);
}

template <int Pad>
[[gnu::noinline, gnu::aligned(64)]] void matvec_instrumented(const csr_view& a, const double* x, double* y) noexcept {
  placement_padding<Pad>();
  PROF_SCOPE_SHAPES("matvec", {a.n, a.n}, {a.n});
  PROF_FLOPS(2 * a.nnz);
  {
    PROF_SCOPE("spmv");
    csr_matvec_rows(a, x, y);
  }
}

}  // namespace proftrace_bench
