// proftrace/detail/recorder.hpp — what the macros expand to. Not API.
//
// Off at run time, a macro costs one relaxed load of `session_state` and a
// predicted branch. Recording, a scope costs two clock reads and two 16-byte
// ring writes; no lock, no allocation, no string work after the thread's
// first event (which attaches its ring). Every event goes to the ring of the
// thread that records it: an end names its begin by the begin's index (which
// holds the begin's ring), so a scope that ends on another thread (a
// coroutine resumed elsewhere, a fiber moved) is paired by the flusher
// without touching the other thread's ring.
#pragma once

#include <atomic>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string_view>
#include <type_traits>

#include "../config.hpp"
#include "../flops.hpp"
#include "../memory_category.hpp"
#include "clock.hpp"
#include "event.hpp"
#include "ring.hpp"
#include "site.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

enum state_bit : std::uint32_t {
  state_session = 1u << 0,        // a session is running (PROF_STEP drives it)
  state_recording = 1u << 1,      // events go to a trace
  state_record_shapes = 1u << 2,  // scopes with shapes record them
  state_flops = 1u << 3,          // FLOP estimates are recorded (with_flops)
  state_memory = 1u << 4,         // allocations are recorded (profile_memory)
  state_cuda = 1u << 5,           // CUPTI collects: scopes push their id as CUDA external correlation
  state_nvtx = 1u << 6,           // scopes also open NVTX ranges (a session with the CUDA activity)
  state_counters = 1u << 7,       // scopes read the session's perf counters at begin and end
};

inline constinit std::atomic<std::uint32_t> session_state{0};

// The calling thread's ring; null until its first event.
inline constinit thread_local ring* this_thread_ring = nullptr;

// Creates and registers the calling thread's ring (the only lock on the
// event path). Null, with the event counted as lost, once the thread is
// exiting or when no ring can be allocated.
ring* attach_this_thread() noexcept;

PROFTRACE_ALWAYS_INLINE bool recording() noexcept {
  return PROFTRACE_UNLIKELY(session_state.load(std::memory_order_relaxed) & state_recording);
}

PROFTRACE_ALWAYS_INLINE ring* thread_ring() noexcept {
  ring* r = this_thread_ring;
  if (PROFTRACE_UNLIKELY(r == nullptr)) r = attach_this_thread();
  return r;
}

// The clock is read after the ring is found on the way in and before the
// write on the way out, so attaching a thread never inflates a measured scope.
// Returns the begin's index for its end (no_begin: not recorded).
PROFTRACE_ALWAYS_INLINE std::uint64_t record_begin(const site* s, std::uint64_t payload = 0) noexcept {
  if (ring* r = thread_ring()) return r->push(r->now(), reinterpret_cast<std::uintptr_t>(s), payload, event_kind::begin);
  return no_begin;
}
// On the calling thread's ring, wherever the begin was. `begin`: the index
// record_begin returned (0: none, the innermost open begin of `s` closes).
PROFTRACE_ALWAYS_INLINE void record_end(const site* s, std::uint64_t begin = 0) noexcept {
  if (ring* r = thread_ring()) r->push(r->now(), reinterpret_cast<std::uintptr_t>(s), begin, event_kind::end);
}

#if PROFTRACE_WITH_CUDA
// While CUPTI collects, a scope pushes a fresh external id (its "External
// id" in the trace, carried in its begin event) as CUPTI's external
// correlation on its thread, so the kernels it launches name it; 0 when the
// push failed. Out of line: CUPTI's own call dominates anyway.
std::uint64_t push_cuda_correlation() noexcept;
void pop_cuda_correlation() noexcept;
#endif

// An NVTX range in the "proftrace" domain named as the site (its name
// registered on first use), or "ProfilerStep#N"; popped by pop_nvtx_range.
// Out of line, so that no NVTX header reaches the user's code. Defined in
// builds with PROFTRACE_WITH_NVTX only, and called only there.
void push_nvtx_range(const site* s) noexcept;
void push_nvtx_step(std::int64_t step) noexcept;
void pop_nvtx_range() noexcept;
// An NVTX tool (Nsight Systems) is attached; sessions open no ranges without one.
bool nvtx_tool_attached() noexcept;

// What a scope opens beside its events while the session asks for them: an
// NVTX range (a tool is attached) and a CUDA external correlation (CUPTI
// collects), closed in reverse order. Trivially constructible: written only
// once a scope records, so a switched-off scope stores nothing.
struct gpu_marks {
  std::uint64_t correlation;  // the CUDA external id pushed, 0 if none
#if PROFTRACE_WITH_NVTX
  bool nvtx;
#endif

  template <class PushRange>
  PROFTRACE_ALWAYS_INLINE void open([[maybe_unused]] std::uint32_t state,
                                    [[maybe_unused]] const PushRange& push_range) noexcept {
    correlation = 0;
#if PROFTRACE_WITH_NVTX
    nvtx = (state & state_nvtx) != 0;
    if (PROFTRACE_UNLIKELY(nvtx)) push_range();
#endif
#if PROFTRACE_WITH_CUDA
    if (PROFTRACE_UNLIKELY(state & state_cuda)) correlation = push_cuda_correlation();
#endif
  }
  PROFTRACE_ALWAYS_INLINE void close() noexcept {
#if PROFTRACE_WITH_CUDA
    if (PROFTRACE_UNLIKELY(correlation != 0)) pop_cuda_correlation();
#endif
#if PROFTRACE_WITH_NVTX
    if (PROFTRACE_UNLIKELY(nvtx)) pop_nvtx_range();
#endif
  }
};

// The session's counters around a scope (<proftrace/collect/counters.hpp>):
// counters_enter() reads this thread's counters right before the begin's
// clock read (opening them on the thread's first counted scope, outside
// the measured time) and returns the level they were kept at (no_counters:
// none); counters_leave() reads them again right before the end and, when
// the begin was recorded, writes the deltas as args of the scope that
// ends. Out of line: a read costs a system call or an rdpmc anyway. Only on
// the thread that began the scope.
inline constexpr std::uint32_t no_counters = ~std::uint32_t{0};
#if PROFTRACE_WITH_COUNTERS
std::uint32_t counters_enter() noexcept;
void counters_leave(std::uint32_t level, bool recorded) noexcept;
#endif
struct counter_marks {
#if PROFTRACE_WITH_COUNTERS
  std::uint32_t level;
  PROFTRACE_ALWAYS_INLINE void open(std::uint32_t state) noexcept {
    level = PROFTRACE_UNLIKELY(state & state_counters) ? counters_enter() : no_counters;
  }
  // `begin`: the begin's index (no_begin: it was not recorded, so no args).
  PROFTRACE_ALWAYS_INLINE void close(std::uint64_t begin) noexcept {
    if (PROFTRACE_UNLIKELY(level != no_counters)) counters_leave(level, begin != no_begin);
  }
#else
  PROFTRACE_ALWAYS_INLINE void open(std::uint32_t) noexcept {}
  PROFTRACE_ALWAYS_INLINE void close(std::uint64_t) noexcept {}
#endif
};

// What a scope keeps from its begin to its end: one word, so that a
// switched-off scope holds one register (or none) across the code it
// encloses. 0: nothing was begun (off, or no ring); otherwise the begin's
// ring index (token_dropped: the begin was dropped, the end is still
// recorded and counted), with token_marked set when the scope opened marks
// beside its events (an NVTX range, a CUDA correlation, counters), which
// the thread keeps until the end (lib/recording/scope_recording.cpp). Ring indices stay
// below token_dropped: uids stop at ring_uid_limit - 2 (ring.cpp).
using scope_token = std::uint64_t;
inline constexpr scope_token token_marked = std::uint64_t{1} << 63;
inline constexpr scope_token token_dropped = token_marked - 1;
static_assert(((ring_uid_limit - 1) << ring_uid_shift) - 1 < token_dropped);
constexpr scope_token token_of(std::uint64_t begin) noexcept { return begin == no_begin ? token_dropped : begin; }
constexpr std::uint64_t begin_of(scope_token t) noexcept {
  t &= ~token_marked;
  return t == token_dropped ? no_begin : t;
}

// The recording halves of a scope, out of line and cold (config.hpp:
// PROFTRACE_COLD_ENTRY): the calling thread's ring (attached before any
// clock read), the marks the session asks for, the begin; and the end on
// whichever thread ends the scope (an index of another thread's ring
// pairs as an async range: ring::push).
PROFTRACE_COLD_ENTRY scope_token start_scope(const site* s, std::uint32_t state) noexcept;
PROFTRACE_COLD_ENTRY void finish_scope(const site* s, scope_token t) noexcept;

// PROF_SCOPE, PROF_FUNCTION, PROF_OP, PROF_MODULE. Off at run time: one
// relaxed load, one branch, and the end's test of a token known to be 0.
class scope_guard {
 public:
  PROFTRACE_ALWAYS_INLINE explicit scope_guard(const site* s) noexcept : site_(s) {
    const std::uint32_t state = session_state.load(std::memory_order_relaxed);
    if (PROFTRACE_UNLIKELY(state & state_recording)) token_ = start_scope(s, state);
  }
  PROFTRACE_ALWAYS_INLINE ~scope_guard() {
    if (PROFTRACE_UNLIKELY(token_ != 0)) finish_scope(site_, token_);
  }
  scope_guard(const scope_guard&) = delete;
  scope_guard& operator=(const scope_guard&) = delete;

 protected:
  scope_guard() noexcept = default;
  const site* site_ = nullptr;
  scope_token token_ = 0;
};

// One dimension of an input shape: any integer type converts without a
// narrowing error (PROF_SCOPE_SHAPES("gemm", {m, k}) with size_t m, int k).
struct shape_dim {
  template <class Int>
    requires std::is_integral_v<Int>
  constexpr shape_dim(Int v) noexcept : value(static_cast<std::int64_t>(v)) {}
  std::int64_t value;
};
using shape_list = std::initializer_list<std::initializer_list<shape_dim>>;

// Input shapes travel in extension slots after the begin event:
// [count, ndim0, dims0..., ndim1, dims1...], at most max_shape_words words.
inline constexpr std::uint32_t max_shape_slots = 15;
inline constexpr std::uint32_t max_shape_words = max_shape_slots * words_per_event;

// `correlation`: the begin's payload (a CUDA external id, or 0). Both return
// the begin's index, for record_end.
std::uint64_t record_begin_with_shapes(const site* s, shape_list shapes, std::uint64_t correlation = 0) noexcept;
// The begin of a communication call (proftrace::mpi_calls): its bytes and
// peer rank (-1: none) become the event's args.
std::uint64_t record_comm_begin(const site* s, std::int64_t bytes, int peer, std::uint64_t correlation = 0) noexcept;

// PROF_SCOPE_SHAPES: `open` (the macro's lambda) builds the shape list and
// begins the scope, called only while recording, so a switched-off scope
// neither evaluates its shapes nor holds them in the enclosing frame.
PROFTRACE_COLD_ENTRY scope_token start_shapes_scope(const site* s, shape_list shapes) noexcept;
class shapes_scope_guard : public scope_guard {
 public:
  template <class Open>
  PROFTRACE_ALWAYS_INLINE shapes_scope_guard(const site* s, const Open& open) noexcept {
    site_ = s;
    if (PROFTRACE_UNLIKELY(session_state.load(std::memory_order_relaxed) & state_recording)) token_ = open();
  }
};

// A begin whose name is a runtime string, copied into the record's
// extension slots (at most max_dynamic_name_bytes; longer names are cut on a
// UTF-8 boundary and counted). `s` is the macro's site: its category, file
// and line. Returns the begin's index, for record_end.
inline constexpr std::size_t max_dynamic_name_bytes = 256;
std::uint64_t record_dynamic_begin(const site* s, std::string_view name, std::uint64_t correlation = 0) noexcept;

// PROF_SCOPE_DYNAMIC: a scope whose name is copied at record time.
PROFTRACE_COLD_ENTRY scope_token start_dynamic_scope(const site* s, std::string_view name) noexcept;
class dynamic_scope_guard : public scope_guard {
 public:
  PROFTRACE_ALWAYS_INLINE dynamic_scope_guard(const site* s, std::string_view name) noexcept {
    site_ = s;
    if (PROFTRACE_UNLIKELY(session_state.load(std::memory_order_relaxed) & state_recording))
      token_ = start_dynamic_scope(s, name);
  }
};

// PROF_ARG: a value for the innermost scope open on this thread. `key` is
// the site naming it; string values are copied (cut as dynamic names are).
PROFTRACE_COLD_ENTRY void record_arg_integer(const site* key, std::int64_t value) noexcept;
PROFTRACE_COLD_ENTRY void record_arg_unsigned(const site* key, std::uint64_t value) noexcept;  // past INT64_MAX too
PROFTRACE_COLD_ENTRY void record_arg_floating(const site* key, double value) noexcept;
PROFTRACE_COLD_ENTRY void record_arg_string(const site* key, std::string_view value) noexcept;
template <class>
inline constexpr bool unsupported_arg_value = false;
template <class T>
void record_arg(const site* key, const T& value) noexcept {
  if constexpr (std::is_enum_v<T>) {
    record_arg(key, static_cast<std::underlying_type_t<T>>(value));
  } else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T> && sizeof(T) == sizeof(std::uint64_t)) {
    record_arg_unsigned(key, value);
  } else if constexpr (std::is_integral_v<T>) {
    record_arg_integer(key, static_cast<std::int64_t>(value));
  } else if constexpr (std::is_floating_point_v<T>) {
    record_arg_floating(key, static_cast<double>(value));
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    record_arg_string(key, std::string_view(value));
  } else {
    static_assert(unsupported_arg_value<T>, "PROF_ARG takes an integer, a floating-point number or a string");
  }
}

// PROF_STEP: the calling thread enters its next step. The first thread to
// reach step N advances the running session's schedule to N and `drives`
// it: its span is the trace's one ProfilerStep#N; every other thread's is a
// "thread step" span. Returns the step number to annotate, or -1 when
// nothing is recorded.
std::int64_t enter_step(bool& drives) noexcept;
extern const site step_site;         // ProfilerStep#N: one per step, on the thread that drives it
extern const site thread_step_site;  // "thread step": the other threads' spans of step N
// "ring full: waiting": a producer's wait for room in its full ring under
// `block`, which the ring records as a complete record (category proftrace).
extern const site ring_wait_site;
#if PROFTRACE_WITH_CUDA
// A step's begin whose payload is its number carries the CUDA external id
// it pushed in an extension slot. Returns its index.
std::uint64_t record_step_begin(const site* s, std::int64_t step, std::uint64_t correlation) noexcept;
#endif

// A step's span as it began: its site (the driver's or another thread's)
// and token; a null site when nothing was begun.
struct open_step_span {
  const site* where;
  scope_token token;
};
PROFTRACE_COLD_ENTRY open_step_span start_step() noexcept;
class step_guard : public scope_guard {
 public:
  PROFTRACE_ALWAYS_INLINE step_guard() noexcept {
    if (PROFTRACE_UNLIKELY(session_state.load(std::memory_order_relaxed) & state_session)) {
      const open_step_span span = start_step();
      site_ = span.where;
      token_ = span.token;
    }
  }
};

// PROF_INSTANT, PROF_COUNTER: out of line and cold, as every macro's
// recording call.
PROFTRACE_COLD_ENTRY void record_instant(const site* s) noexcept;
PROFTRACE_COLD_ENTRY void record_counter(const site* s, double value) noexcept;

PROFTRACE_ALWAYS_INLINE bool recording_flops() noexcept {
  return PROFTRACE_UNLIKELY(session_state.load(std::memory_order_relaxed) & state_flops);
}

// Adds a FLOP estimate to the scope open on this thread (an invalid one is
// only counted).
PROFTRACE_COLD_ENTRY void record_flops(std::int64_t value, bool valid) noexcept;

PROFTRACE_ALWAYS_INLINE bool recording_memory() noexcept {
  return PROFTRACE_UNLIKELY(session_state.load(std::memory_order_relaxed) & state_memory);
}

// The category an allocation without one takes: PROF_MEMORY_CATEGORY's.
inline constinit thread_local memory_category this_thread_memory_category = memory_category::unknown;

// An allocation of `bytes` at `address` on `device` (-1: host memory),
// in `category` (unknown: the thread's, PROF_MEMORY_CATEGORY's).
PROFTRACE_COLD_ENTRY void record_alloc(const void* address, std::int64_t bytes, int device = -1,
                                       memory_category category = memory_category::unknown) noexcept;
PROFTRACE_COLD_ENTRY void record_free(const void* address, int device = -1) noexcept;
// A pool's reserved size on `device` now (Total Reserved, max reserved).
PROFTRACE_COLD_ENTRY void record_reserved(std::int64_t bytes, int device = -1) noexcept;

// PROF_MEMORY_CATEGORY: sets the thread's category for the enclosing block.
class memory_category_guard {
 public:
  explicit memory_category_guard(memory_category c) noexcept : previous_(this_thread_memory_category) {
    this_thread_memory_category = c;
  }
  ~memory_category_guard() { this_thread_memory_category = previous_; }
  memory_category_guard(const memory_category_guard&) = delete;
  memory_category_guard& operator=(const memory_category_guard&) = delete;

 private:
  memory_category previous_;
};

// Non-zero while this thread runs proftrace's own code (the flusher, a
// window switch): the operator new hook leaves its allocations out, so the
// profiler never records itself nor waits on a ring it is draining.
inline constinit thread_local int this_thread_in_profiler = 0;
struct in_profiler_guard {
  in_profiler_guard() noexcept { ++this_thread_in_profiler; }
  ~in_profiler_guard() { --this_thread_in_profiler; }
  in_profiler_guard(const in_profiler_guard&) = delete;
  in_profiler_guard& operator=(const in_profiler_guard&) = delete;
};

// What PROF_FLOPS accepts: a raw FLOP count of any integer type (bool
// excepted), or an estimate with `value` and `valid` members
// (proftrace::flops::estimate, or a type of the program's own shaped so).
template <class T>
inline constexpr bool is_raw_flop_count = std::is_integral_v<T> && !std::is_same_v<std::remove_cv_t<T>, bool>;
template <class T>
concept flop_estimate_like = requires(const T& e) {
  { e.value } -> std::convertible_to<std::int64_t>;
  { e.valid } -> std::convertible_to<bool>;
};
template <class>
inline constexpr bool unsupported_flop_argument = false;

// A raw count: negative, or above what 64 bits hold, is invalid (counted,
// adds nothing); zero is a valid count of no work.
template <class T>
constexpr flops::estimate raw_flop_count(T n) noexcept {
  if constexpr (std::is_signed_v<T>) {
    if (n < 0) return {0, false};
  }
  using U = std::make_unsigned_t<T>;
  if (static_cast<U>(n) > static_cast<std::make_unsigned_t<std::int64_t>>(INT64_MAX)) return {0, false};
  return {static_cast<std::int64_t>(n), true};
}

// An estimate (a braced {value, valid} too: PROF_FLOPS({n, true})). A
// negative value is invalid, whatever `valid` says.
PROFTRACE_ALWAYS_INLINE void record_estimate(const flops::estimate& e) noexcept {
  record_flops(e.value, e.valid && e.value >= 0);
}

// Any other argument: a raw count, an estimate-like type, or a compile error
// that says what PROF_FLOPS takes.
template <class T>
PROFTRACE_ALWAYS_INLINE void record_estimate(const T& e) noexcept {
  if constexpr (is_raw_flop_count<T>) {
    record_estimate(raw_flop_count(e));
  } else if constexpr (flop_estimate_like<T>) {
    const auto value = static_cast<std::int64_t>(e.value);
    record_flops(value, static_cast<bool>(e.valid) && value >= 0);
  } else {
    static_assert(unsupported_flop_argument<T>,
                  "PROF_FLOPS takes a FLOP count of an integer type or a proftrace::flops::estimate "
                  "(floating-point counts: round them to an integer, e.g. std::llround(x))");
  }
}

// Names the calling thread in traces (copied; works with or without a session).
void set_thread_name(const char* name) noexcept;

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
