/* proftrace/switches.h — the documented default of every compile-time switch
 * (C and C++: <proftrace/config.hpp> and the C API's <proftrace/proftrace.h>
 * include it).
 *
 *   // Compile a release build with every macro gone:
 *   //   cmake -DPROFTRACE_ENABLED=OFF ...      (or -DPROFTRACE_ENABLED=0 on one TU)
 *   #include <proftrace/switches.h>
 *   #if PROFTRACE_WITH_CUDA
 *   ...
 *   #endif
 *
 * Every switch is a 0/1 value tested with `#if`, never `#ifdef`; the build
 * uses -Wundef so a misspelt switch is an error instead of a silent 0.
 * CMake writes the build's selection into <proftrace/build_config.hpp> and
 * also passes it as PUBLIC compile definitions; a switch given on the
 * command line wins over the generated header.
 */
#ifndef PROFTRACE_SWITCHES_H
#define PROFTRACE_SWITCHES_H

#if defined(__has_include)
#if __has_include(<proftrace/build_config.hpp>)
#include <proftrace/build_config.hpp> /* only #defines */
#endif
#endif

/* Master switch. 0: every PROF_* macro compiles to no code (nothing,
 * ((void)0), or a runtime name or value as sizeof's operand), its arguments
 * are not evaluated and no proftrace symbol is referenced. */
#ifndef PROFTRACE_ENABLED
#define PROFTRACE_ENABLED 1
#endif

/* Collectors compiled into this build (see the headers in <proftrace/collect/>). */
#ifndef PROFTRACE_WITH_CPU_RANGES
#define PROFTRACE_WITH_CPU_RANGES 1
#endif
#ifndef PROFTRACE_WITH_MEMORY
#define PROFTRACE_WITH_MEMORY 0
#endif
#ifndef PROFTRACE_WITH_FLOPS
#define PROFTRACE_WITH_FLOPS 0
#endif
#ifndef PROFTRACE_WITH_CUDA
#define PROFTRACE_WITH_CUDA 0
#endif
/* NVTX3: each recorded scope also opens a range in the "proftrace" domain
 * (Nsight Systems shows the same names). Needs the CUDA collector. */
#ifndef PROFTRACE_WITH_NVTX
#define PROFTRACE_WITH_NVTX 0
#endif
/* MPI-aware sessions (<proftrace/distributed.hpp>): the library asks MPI
 * for the rank and aligns clocks against rank 0. Changes no inline code. */
#ifndef PROFTRACE_WITH_MPI
#define PROFTRACE_WITH_MPI 0
#endif
/* Counters per scope through perf_event_open (Linux): a session's
 * `counters` option names them (<proftrace/collect/counters.hpp>). */
#ifndef PROFTRACE_WITH_COUNTERS
#define PROFTRACE_WITH_COUNTERS 0
#endif
/* OpenMP regions, loops and waits through OMPT (<proftrace/collect/openmp.hpp>).
 * Changes no inline code. */
#ifndef PROFTRACE_WITH_OPENMP
#define PROFTRACE_WITH_OPENMP 0
#endif
#if PROFTRACE_WITH_NVTX && !PROFTRACE_WITH_CUDA
#error "PROFTRACE_WITH_NVTX=1 needs PROFTRACE_WITH_CUDA=1"
#endif

/* Default overflow policy of the per-thread rings (a session may override it
 * at run time): 0 = drop (never stall, count losses), 1 = block (lossless,
 * the caller waits for the flusher), 2 = drop_oldest (overwrite the oldest
 * unread events, count them). See <proftrace/overflow.hpp>. */
#ifndef PROFTRACE_OVERFLOW_POLICY
#define PROFTRACE_OVERFLOW_POLICY 0
#endif

/* Default size of a thread's ring in 32-byte records (a power of two; a
 * session may choose another): 1 MiB per thread by default. A plain scope's
 * begin and end take 16 bytes each, so a ring holds as many plain scopes. */
#ifndef PROFTRACE_RING_EVENTS
#define PROFTRACE_RING_EVENTS 32768
#endif


#endif /* PROFTRACE_SWITCHES_H */
