// Internal: what the trace window asks of a format's writer (one per row of
// formats/trace_formats.hpp that records: kineto_json/, perfetto/, none/),
// and the records it hands each one. drain/trace_window.hpp holds every
// writer of its variant to this concept.
//
//   class my_writer : pinned_writer {  // formats/<name>/<name>_writer.hpp
//    public:
//     static constexpr trace_format format = trace_format::<name>;
//     explicit my_writer(const trace_head& head);
//     ... each call of trace_writer below ...
//   };
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "formats/trace_head.hpp"
#include "records/async_range.hpp"
#include "records/gpu_batch.hpp"
#include "records/memory.hpp"
#include "records/thread.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

struct finished_trace;

// A writer's buffers point into one another: it is built in place and never copied.
struct pinned_writer {
  pinned_writer() = default;
  pinned_writer(const pinned_writer&) = delete;
  pinned_writer& operator=(const pinned_writer&) = delete;
};

template <class W>
concept trace_writer = requires(W& w, thread_state& ts, const open_scope& s, std::span<const closed_leaf> run,
                                const open_async& a, const memory_event& m, const site& where,
                                const std::vector<gpu_activity>& activities, const std::vector<gpu_span>& spans,
                                const finished_trace& f, std::int64_t n) {
  { W::format } -> std::convertible_to<trace_format>;
  { w.head() } -> std::convertible_to<std::string>;  // the spool's first bytes
  { W::tail(f, std::string()) } -> std::convertible_to<std::string>;  // its closing part, at each commit
  w.thread(n, std::string());
  w.thread_done(n);
  w.scope(ts, s, n);
  w.leaves(ts, run);
  w.async(a, std::uint64_t{}, n, n);
  w.withdrawn(n, s, n);
  w.memory(m);
  w.instant(n, where, n);
  w.counter(n, where, n, 1.0);
  w.gpu(activities, spans);
  { w.buffer() } -> std::same_as<std::string&>;  // what the window commits, then clears
};

}  // namespace proftrace::detail
