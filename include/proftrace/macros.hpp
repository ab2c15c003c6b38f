// proftrace/macros.hpp — every user macro, nothing else.
//
//   #include <proftrace/macros.hpp>
//   void multiply(const Matrix& a, const Matrix& b, Matrix& c) {
//     PROF_FUNCTION();                                  // scope named "multiply"
//     for (int blk = 0; blk < nblocks; ++blk) {
//       PROF_SCOPE_SHAPES("gemm_block", {bs, bs}, {bs, bs});   // cpu_op with "Input Dims"
//       ...
//     }
//     PROF_COUNTER("residual", r);
//   }
//   for (int it = 0; it < iters; ++it) { PROF_STEP(); solve(); }   // ProfilerStep#it
//   { PROF_SCOPE("gemm"); PROF_MATMUL(m, n, k); gemm(...); }      // 2·m·n·k FLOPs on "gemm"
//
// With PROFTRACE_ENABLED=0 every macro expands to nothing, or names its
// arguments as sizeof's operand only (so a variable kept for the profile
// stays used): it evaluates nothing, emits no code and references no
// proftrace symbol. With PROFTRACE_WITH_CPU_RANGES=0 the same happens to the
// CPU-range macros, with PROFTRACE_WITH_FLOPS=0 to the FLOP macros and with
// PROFTRACE_WITH_MEMORY=0 to the memory macros. Name arguments must be string literals (or other
// constants that outlive the program): only a pointer is recorded.
#pragma once

#include "async_range.hpp"
#include "config.hpp"
#include "detail/unevaluated.hpp"

#if PROFTRACE_ENABLED && PROFTRACE_WITH_CPU_RANGES

#include "detail/recorder.hpp"

#if defined(__GNUC__)
#define PROFTRACE_DETAIL_PRETTY_FUNCTION __PRETTY_FUNCTION__
#else
#define PROFTRACE_DETAIL_PRETTY_FUNCTION __func__
#endif

#define PROFTRACE_DETAIL_SITE(id, name, cat)                                            \
  static constexpr ::proftrace::detail::site PROFTRACE_DETAIL_CAT(proftrace_site_, id){ \
      name, PROFTRACE_DETAIL_PRETTY_FUNCTION, __FILE__, __LINE__, ::proftrace::detail::category::cat}

#define PROFTRACE_DETAIL_SCOPE(id, name, cat) \
  PROFTRACE_DETAIL_SITE(id, name, cat);       \
  const ::proftrace::detail::scope_guard PROFTRACE_DETAIL_CAT(proftrace_scope_, id) { \
    &PROFTRACE_DETAIL_CAT(proftrace_site_, id)                                          \
  }

// The shapes are a lambda's work, run only while recording (detail/recorder.hpp).
#define PROFTRACE_DETAIL_SCOPE_SHAPES(id, name, ...)                                                     \
  PROFTRACE_DETAIL_SITE(id, name, cpu_op);                                                               \
  const ::proftrace::detail::shapes_scope_guard PROFTRACE_DETAIL_CAT(proftrace_scope_, id) {             \
    &PROFTRACE_DETAIL_CAT(proftrace_site_, id), [&]() noexcept {                                         \
      return ::proftrace::detail::start_shapes_scope(&PROFTRACE_DETAIL_CAT(proftrace_site_, id), {__VA_ARGS__}); \
    }                                                                                                    \
  }

// The site's name shows only for an empty runtime name: one empty-named row,
// as proftrace_push("") and torch's record_function("") give.
#define PROFTRACE_DETAIL_SCOPE_DYNAMIC(id, name)                                                  \
  PROFTRACE_DETAIL_SITE(id, "", user_annotation);                                                  \
  const ::proftrace::detail::dynamic_scope_guard PROFTRACE_DETAIL_CAT(proftrace_scope_, id) {     \
    &PROFTRACE_DETAIL_CAT(proftrace_site_, id), name                                               \
  }

// PROF_INSTANT and PROF_COUNTER are void expressions, like their disabled
// form ((void)0); the site lives in a capture-less lambda so that an
// expression can own it. The value is evaluated only while recording.
#define PROFTRACE_DETAIL_SITE_OF(id, name, cat)          \
  []() noexcept -> const ::proftrace::detail::site* {     \
    PROFTRACE_DETAIL_SITE(id, name, cat);                 \
    return &PROFTRACE_DETAIL_CAT(proftrace_site_, id);    \
  }()

#define PROFTRACE_DETAIL_INSTANT(id, name)                                                              \
  (::proftrace::detail::recording()                                                                     \
       ? ::proftrace::detail::record_instant(PROFTRACE_DETAIL_SITE_OF(id, name, instant))              \
       : (void)0)

#define PROFTRACE_DETAIL_ARG(id, key, value)                                                            \
  (::proftrace::detail::recording()                                                                     \
       ? ::proftrace::detail::record_arg(PROFTRACE_DETAIL_SITE_OF(id, key, user_annotation), value)     \
       : (void)0)

#define PROFTRACE_DETAIL_COUNTER(id, name, value)                                                       \
  (::proftrace::detail::recording()                                                                     \
       ? ::proftrace::detail::record_counter(PROFTRACE_DETAIL_SITE_OF(id, name, counter),               \
                                             static_cast<double>(value))                                \
       : (void)0)

// A named scope: "cat": "user_annotation".
#define PROF_SCOPE(name) PROFTRACE_DETAIL_SCOPE(__COUNTER__, name, user_annotation)
// A scope named after the enclosing function.
#define PROF_FUNCTION() PROFTRACE_DETAIL_SCOPE(__COUNTER__, __func__, user_annotation)
// An op-like scope: "cat": "cpu_op".
#define PROF_OP(name) PROFTRACE_DETAIL_SCOPE(__COUNTER__, name, cpu_op)
// An op-like scope that records its input shapes when the session asks for
// them (record_shapes): PROF_SCOPE_SHAPES("gemm", {m, k}, {k, n}).
#define PROF_SCOPE_SHAPES(name, ...) PROFTRACE_DETAIL_SCOPE_SHAPES(__COUNTER__, name, __VA_ARGS__)
// A scope that is one level of the module hierarchy (with_modules).
#define PROF_MODULE(name) PROFTRACE_DETAIL_SCOPE(__COUNTER__, name, module)
// The calling thread enters its next step until the end of the enclosing
// block; the first thread to reach step N advances the session's schedule.
#define PROF_STEP() const ::proftrace::detail::step_guard PROFTRACE_DETAIL_CAT(proftrace_step_, __COUNTER__) {}
#define PROF_INSTANT(name) PROFTRACE_DETAIL_INSTANT(__COUNTER__, name)
#define PROF_COUNTER(name, value) PROFTRACE_DETAIL_COUNTER(__COUNTER__, name, value)
#define PROF_THREAD_NAME(name) ::proftrace::detail::set_thread_name(name)
// A scope whose name is a runtime string (anything std::string_view takes):
// copied at record time into the ring (no allocation, no lock), at most
// proftrace::detail::max_dynamic_name_bytes (256) bytes; a longer name is cut
// on a UTF-8 character boundary and counted ("truncated_names"). Scopes
// with the same text are one row in the table, whatever buffer held it.
// The name expression is evaluated whether or not a session records.
#define PROF_SCOPE_DYNAMIC(name) PROFTRACE_DETAIL_SCOPE_DYNAMIC(__COUNTER__, name)
// A value in the args of the innermost scope open on this thread: an
// integer, a floating-point number or a string (copied, cut like dynamic
// names). Several per scope (at most 16); evaluated only while recording.
#define PROF_ARG(key, value) PROFTRACE_DETAIL_ARG(__COUNTER__, key, value)
// A proftrace::async_range that begins here and may end on another thread:
// auto r = PROF_ASYNC_RANGE("request"); ... r.end();
#define PROF_ASYNC_RANGE(name) ::proftrace::async_range(PROFTRACE_DETAIL_SITE_OF(__COUNTER__, name, user_annotation))

#else  // compiled out

// A runtime name or value is named, never evaluated (detail/unevaluated.hpp).
#define PROF_SCOPE(name)
#define PROF_FUNCTION()
#define PROF_OP(name)
#define PROF_SCOPE_SHAPES(name, ...) \
  PROFTRACE_DETAIL_UNEVALUATED_CALL(::proftrace::detail::unevaluated::shapes({__VA_ARGS__}))
#define PROF_MODULE(name)
#define PROF_STEP()
#define PROF_INSTANT(name) ((void)0)
#define PROF_COUNTER(name, value) PROFTRACE_DETAIL_UNEVALUATED(value)
#define PROF_THREAD_NAME(name) PROFTRACE_DETAIL_UNEVALUATED(name)
#define PROF_SCOPE_DYNAMIC(name) PROFTRACE_DETAIL_UNEVALUATED(name)
#define PROF_ARG(key, value) PROFTRACE_DETAIL_UNEVALUATED(value)
#define PROF_ASYNC_RANGE(name) ::proftrace::async_range()

#endif

#if PROFTRACE_ENABLED && PROFTRACE_WITH_CUDA

#include "cuda.hpp"

// cudaProfilerStart/Stop around the enclosing block (torch.cuda.profiler's
// profile()): `nsys profile --capture-range=cudaProfilerApi` records only
// inside it. A failure (no driver) is one warning, never an exception.
#define PROF_CUDA_PROFILE() \
  const ::proftrace::cuda::profiler_scope PROFTRACE_DETAIL_CAT(proftrace_cuda_profile_, __COUNTER__) {}

#else

#define PROF_CUDA_PROFILE()

#endif

#if PROFTRACE_ENABLED && PROFTRACE_WITH_FLOPS

#include "detail/recorder.hpp"
#include "flops.hpp"

// FLOPs for the scope open on this thread: a raw count of any integer type
// (PROF_FLOPS(n); negative counts are invalid) or a proftrace::flops::estimate
// (PROF_FLOPS(proftrace::flops::mm(m, n, k)), PROF_FLOPS(proftrace::flops::estimate{n, true}),
// PROF_FLOPS({n, true})); anything else (a double, a pointer) is a compile
// error that says so. Variadic, so braces with commas need no extra
// parentheses. Evaluated only while a session records with with_flops.
#define PROF_FLOPS(...) \
  (::proftrace::detail::recording_flops() ? ::proftrace::detail::record_estimate(__VA_ARGS__) : (void)0)
#define PROF_MATMUL(m, n, k) PROF_FLOPS(::proftrace::flops::mm(m, n, k))
#define PROF_ADDMM(m, n, k) PROF_FLOPS(::proftrace::flops::addmm(m, n, k))
#define PROF_BMM(b, m, n, k) PROF_FLOPS(::proftrace::flops::bmm(b, m, n, k))
#define PROF_BADDBMM(b, m, n, k) PROF_FLOPS(::proftrace::flops::baddbmm(b, m, n, k))
#define PROF_ELEMENTWISE(numel) PROF_FLOPS(::proftrace::flops::elementwise(numel))
// PROF_CONV(.batch = 8, .in_channels = 3, .out_channels = 64, .input = {224, 224}, .kernel = {7, 7}, ...)
#define PROF_CONV(...) PROF_FLOPS(::proftrace::flops::conv(::proftrace::flops::conv_params{__VA_ARGS__}))
#define PROF_CONV_BACKWARD(...) \
  PROF_FLOPS(::proftrace::flops::conv_backward(::proftrace::flops::conv_params{__VA_ARGS__}))

#else

#define PROF_FLOPS(...) PROFTRACE_DETAIL_UNEVALUATED_CALL(::proftrace::detail::unevaluated::flops(__VA_ARGS__))
#define PROF_MATMUL(m, n, k) PROFTRACE_DETAIL_UNEVALUATED_CALL(::proftrace::flops::mm(m, n, k))
#define PROF_ADDMM(m, n, k) PROFTRACE_DETAIL_UNEVALUATED_CALL(::proftrace::flops::addmm(m, n, k))
#define PROF_BMM(b, m, n, k) PROFTRACE_DETAIL_UNEVALUATED_CALL(::proftrace::flops::bmm(b, m, n, k))
#define PROF_BADDBMM(b, m, n, k) PROFTRACE_DETAIL_UNEVALUATED_CALL(::proftrace::flops::baddbmm(b, m, n, k))
#define PROF_ELEMENTWISE(numel) PROFTRACE_DETAIL_UNEVALUATED_CALL(::proftrace::flops::elementwise(numel))
#define PROF_CONV(...) PROFTRACE_DETAIL_UNEVALUATED_CALL(::proftrace::flops::conv_params{__VA_ARGS__})
#define PROF_CONV_BACKWARD(...) PROF_CONV(__VA_ARGS__)

#endif

#if PROFTRACE_ENABLED && PROFTRACE_WITH_MEMORY

#include "detail/recorder.hpp"

// PROF_ALLOC(ptr, bytes[, device[, category]]) and PROF_FREE(ptr[, device])
// for a program's own allocators; device -1 (the default) is host memory,
// the category a proftrace::memory_category (default: the thread's, set by
// PROF_MEMORY_CATEGORY). PROF_MEMORY_RESERVED(bytes[, device]) reports a
// pool's reserved size. Recorded while a session runs with profile_memory;
// arguments are evaluated only then.
#define PROF_ALLOC(ptr, ...) \
  (::proftrace::detail::recording_memory() ? ::proftrace::detail::record_alloc(ptr, __VA_ARGS__) : (void)0)
#define PROF_FREE(ptr, ...) \
  (::proftrace::detail::recording_memory() ? ::proftrace::detail::record_free(ptr __VA_OPT__(, ) __VA_ARGS__) : (void)0)
#define PROF_MEMORY_RESERVED(...) \
  (::proftrace::detail::recording_memory() ? ::proftrace::detail::record_reserved(__VA_ARGS__) : (void)0)
// Allocations on this thread until the end of the enclosing block take this
// category unless they name one.
#define PROF_MEMORY_CATEGORY(category) \
  const ::proftrace::detail::memory_category_guard PROFTRACE_DETAIL_CAT(proftrace_memory_category_, __COUNTER__) { category }

#else

#define PROF_ALLOC(ptr, ...) \
  PROFTRACE_DETAIL_UNEVALUATED_CALL(::proftrace::detail::unevaluated::alloc(ptr, __VA_ARGS__))
#define PROF_FREE(ptr, ...) \
  PROFTRACE_DETAIL_UNEVALUATED_CALL(::proftrace::detail::unevaluated::free(ptr __VA_OPT__(, ) __VA_ARGS__))
#define PROF_MEMORY_RESERVED(...) \
  PROFTRACE_DETAIL_UNEVALUATED_CALL(::proftrace::detail::unevaluated::reserved(__VA_ARGS__))
#define PROF_MEMORY_CATEGORY(which) \
  PROFTRACE_DETAIL_UNEVALUATED_CALL(::proftrace::detail::unevaluated::category(which))

#endif

// An op scope that carries its own estimate: PROF_FLOPS_SCOPE("gemm", proftrace::flops::mm(m, n, k)),
// PROF_FLOPS_SCOPE("loop", n) or PROF_FLOPS_SCOPE("loop", proftrace::flops::estimate{n, true}).
#define PROF_FLOPS_SCOPE(name, ...) \
  PROF_OP(name);                    \
  PROF_FLOPS(__VA_ARGS__)
