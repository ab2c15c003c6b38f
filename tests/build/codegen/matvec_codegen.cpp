// The CSR matvec of bench/csr_matvec.hpp, plain and with its three macros,
// compiled at -O2 for check_off_codegen.py to compare their object code.
#include "csr_matvec.hpp"

namespace proftrace_bench {
template void matvec_plain<0>(const csr_view&, const double*, double*) noexcept;
template void matvec_instrumented<0>(const csr_view&, const double*, double*) noexcept;
}  // namespace proftrace_bench
