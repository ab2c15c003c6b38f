// proftrace/config.hpp — the documented default of every compile-time switch.
//
//   // Compile a release build with every macro gone:
//   //   cmake -DPROFTRACE_ENABLED=OFF ...      (or -DPROFTRACE_ENABLED=0 on one TU)
//   #include <proftrace/macros.hpp>
//   PROF_SCOPE("solve");                        // expands to nothing
//
// Every switch is a 0/1 value tested with `#if`, never `#ifdef`; the build
// uses -Wundef so a misspelt switch is an error instead of a silent 0.
// CMake writes the build's selection into <proftrace/build_config.hpp> and
// also passes it as PUBLIC compile definitions; a switch given on the
// command line wins over the generated header.
#pragma once

#if defined(__has_include)
#if __has_include(<proftrace/build_config.hpp>)
#include <proftrace/build_config.hpp>
#endif
#endif

// Master switch. 0: every PROF_* macro compiles to no code (nothing,
// ((void)0), or a runtime name or value as sizeof's operand), its arguments
// are not evaluated and no proftrace symbol is referenced.
#ifndef PROFTRACE_ENABLED
#define PROFTRACE_ENABLED 1
#endif

// Collectors compiled into this build (see <proftrace/collect/*.hpp>).
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
// NVTX3: each recorded scope also opens a range in the "proftrace" domain
// (Nsight Systems shows the same names). Needs the CUDA collector.
#ifndef PROFTRACE_WITH_NVTX
#define PROFTRACE_WITH_NVTX 0
#endif
// MPI-aware sessions (<proftrace/distributed.hpp>): the library asks MPI
// for the rank and aligns clocks against rank 0. Changes no inline code.
#ifndef PROFTRACE_WITH_MPI
#define PROFTRACE_WITH_MPI 0
#endif
// Counters per scope through perf_event_open (Linux): a session's
// `counters` option names them (<proftrace/collect/counters.hpp>).
#ifndef PROFTRACE_WITH_COUNTERS
#define PROFTRACE_WITH_COUNTERS 0
#endif
// OpenMP regions, loops and waits through OMPT (<proftrace/collect/openmp.hpp>).
// Changes no inline code.
#ifndef PROFTRACE_WITH_OPENMP
#define PROFTRACE_WITH_OPENMP 0
#endif
#if PROFTRACE_WITH_NVTX && !PROFTRACE_WITH_CUDA
#error "PROFTRACE_WITH_NVTX=1 needs PROFTRACE_WITH_CUDA=1"
#endif

// Default overflow policy of the per-thread rings (a session may override it
// at run time): 0 = drop (never stall, count losses), 1 = block (lossless,
// the caller waits for the flusher), 2 = drop_oldest (overwrite the oldest
// unread events, count them). See <proftrace/overflow.hpp>.
#ifndef PROFTRACE_OVERFLOW_POLICY
#define PROFTRACE_OVERFLOW_POLICY 0
#endif

// Default size of a thread's ring in 32-byte records (a power of two; a
// session may choose another): 1 MiB per thread by default. A plain scope's
// begin and end take 16 bytes each, so a ring holds as many plain scopes.
#ifndef PROFTRACE_RING_EVENTS
#define PROFTRACE_RING_EVENTS 32768
#endif

#define PROFTRACE_DETAIL_CAT2(a, b) a##b
#define PROFTRACE_DETAIL_CAT(a, b) PROFTRACE_DETAIL_CAT2(a, b)

// The collector selection and the overflow default change inline code, so
// they name an inline namespace: translation units built with different
// selections reference different symbols and fail to link together instead
// of misbehaving.
#define PROFTRACE_ABI_NAMESPACE                                                   \
  PROFTRACE_DETAIL_CAT(                                                           \
      PROFTRACE_DETAIL_CAT(                                                       \
          PROFTRACE_DETAIL_CAT(                                                   \
              PROFTRACE_DETAIL_CAT(abi_c, PROFTRACE_WITH_CPU_RANGES),             \
              PROFTRACE_DETAIL_CAT(_m, PROFTRACE_WITH_MEMORY)),                   \
          PROFTRACE_DETAIL_CAT(PROFTRACE_DETAIL_CAT(_f, PROFTRACE_WITH_FLOPS),    \
                               PROFTRACE_DETAIL_CAT(_k, PROFTRACE_WITH_CUDA))),   \
      PROFTRACE_DETAIL_CAT(PROFTRACE_DETAIL_CAT(_n, PROFTRACE_WITH_NVTX),         \
                           PROFTRACE_DETAIL_CAT(PROFTRACE_DETAIL_CAT(_p, PROFTRACE_WITH_COUNTERS), \
                                                PROFTRACE_DETAIL_CAT(_o, PROFTRACE_OVERFLOW_POLICY))))

// Where the session API (session, profile, reports, trace handlers, the
// execution trace observer, signals) lives: the ABI namespace, or with
// PROFTRACE_ENABLED=0 `compiled_out`, whose inline stand-ins reference no
// library symbol and cannot be confused with the library's classes.
#if PROFTRACE_ENABLED
#define PROFTRACE_SESSION_NAMESPACE PROFTRACE_ABI_NAMESPACE
#else
#define PROFTRACE_SESSION_NAMESPACE compiled_out
#endif

#if defined(__GNUC__)
#define PROFTRACE_LIKELY(x) __builtin_expect(!!(x), 1)
#define PROFTRACE_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define PROFTRACE_NOINLINE __attribute__((noinline))
#define PROFTRACE_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define PROFTRACE_LIKELY(x) (x)
#define PROFTRACE_UNLIKELY(x) (x)
#define PROFTRACE_NOINLINE
#define PROFTRACE_ALWAYS_INLINE inline
#endif

// The recording entry points as an instrumented program sees them: cold, so
// that the compiler moves each call, and the work around it (a shape list,
// a FLOP estimate), out of the instrumented function's body into its
// `.cold` part. Off at run time, a macro then leaves one load, one branch
// and the scope's one-word token in the function (tests/build/codegen). The
// library compiles their definitions without the attribute
// (PROFTRACE_DETAIL_BUILDING_LIBRARY), optimised for speed, not size.
#if defined(__GNUC__) && !defined(PROFTRACE_DETAIL_BUILDING_LIBRARY)
#define PROFTRACE_COLD_ENTRY __attribute__((cold))
#else
#define PROFTRACE_COLD_ENTRY
#endif
