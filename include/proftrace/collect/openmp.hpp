// proftrace/collect/openmp.hpp — OpenMP's parallel regions, worksharing
// loops and waits, seen through the runtime's tool interface (OMPT).
//
//   // clang++ -fopenmp app.cpp (LLVM's libomp)
//   proftrace::profile p;            // the OpenMP collector is on by default
//   p.start();
//   #pragma omp parallel for
//   for (int i = 0; i < n; ++i) { PROF_SCOPE("cell"); work(i); }
//   p.stop();   // "omp parallel: main (app.cpp:5)" on the calling thread, an implicit task
//               // on each thread with "cell" inside it, "omp loop", "omp barrier" waits
//
// Events carry "cat": "openmp". The runtime loads proftrace as its OMPT tool
// (ompt_start_tool) when it initialises; regions are named after the code
// location the runtime reports (function and file:line, resolved from the
// program's symbols and debug line tables; the address where there are
// none). With a runtime without OMPT (GCC's libgomp), or with OMP_TOOL=disabled,
// a session says so once and records everything else. Costs: each callback
// pushes ring records as a scope does (bench/README.md).
//
// Compiled in where omp-tools.h was found (PROFTRACE_WITH_OPENMP=AUTO);
// the library links no OpenMP runtime.
#pragma once

#include "../collectors.hpp"
#include "../config.hpp"

namespace proftrace {
namespace collect {
struct openmp {
  static constexpr activity kind = activity::openmp;
  static constexpr std::string_view name = "openmp";
};
}  // namespace collect

template <>
struct is_available<collect::openmp> : std::bool_constant<PROFTRACE_ENABLED != 0 && PROFTRACE_WITH_OPENMP != 0> {};

}  // namespace proftrace
