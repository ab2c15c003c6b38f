// proftrace/config.hpp — the compile-time switches (their defaults are in
// <proftrace/switches.h>, shared with the C API) and the macros built on them.
//
//   // Compile a release build with every macro gone:
//   //   cmake -DPROFTRACE_ENABLED=OFF ...      (or -DPROFTRACE_ENABLED=0 on one TU)
//   #include <proftrace/macros.hpp>
//   PROF_SCOPE("solve");                        // expands to nothing
//
// Every switch is a 0/1 value tested with `#if`, never `#ifdef`
// (<proftrace/switches.h> says where a build's selection comes from).
#pragma once

#include "switches.h"

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
