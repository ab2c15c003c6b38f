// Internal: torch's key_averages() rules, shared by the two aggregators that
// apply them — the live one (aggregator.hpp: a session's records as pairing
// closes them) and the command line's (tools/trace_summary.cpp: the host
// events of a Kineto JSON or Perfetto trace, nested from their intervals).
// Each keeps its own way of finding an event's parent, children and row;
// what a row is called and how a finished event counts in it is here.
// Header-only: the live drain loop inlines it, and the command line (and its
// fuzzer, which compiles its sources itself) needs no more of the library.
#pragma once

#include <charconv>
#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "proftrace/key_averages.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// ---- row names ----

// Every step's span ("ProfilerStep#N") is one row, "ProfilerStep*", without
// input shapes. A worker thread's span of a step is its own row, "thread
// step" (its event's name), so that the table counts ProfilerStep* once per step.
inline constexpr std::string_view step_event_prefix = "ProfilerStep#";
inline constexpr const char* step_row_key = "ProfilerStep*";
// Allocations and frees that no host event holds: torch's top-level row.
inline constexpr const char* memory_row_key = "[memory]";

// A step's event name, "ProfilerStep#7".
inline std::string step_event_name(std::int64_t step) {
  return std::string(step_event_prefix) + std::to_string(step);
}
// Whether an event name is a step's (and so aggregates as step_row_key).
inline bool is_step_event(std::string_view name) noexcept { return name.starts_with(step_event_prefix); }
// N of "ProfilerStep#N" (N >= 0, digits only); nullopt for any other name.
inline std::optional<std::int64_t> step_number(std::string_view name) noexcept {
  if (!is_step_event(name)) return std::nullopt;
  std::int64_t n = 0;
  const char* end = name.data() + name.size();
  const auto [stop, err] = std::from_chars(name.data() + step_event_prefix.size(), end, n);
  if (err != std::errc{} || stop != end || n < 0) return std::nullopt;
  return n;
}

// The key rows are told apart by: a name and its input shapes (JSON text;
// empty when not grouped by them). A caller adds what else keys its rows
// (the live aggregator: the enclosing stack's frames).
inline std::string row_key(std::string_view name, std::string_view shapes) {
  std::string key;
  key.reserve(name.size() + 1 + shapes.size());
  key += name;
  key += '\x1f';
  key += shapes;
  return key;
}

// ---- which events are rows ----

// The categories of host events, the ones that get rows: a trace's "cat".
// "proftrace": a producer's wait for room in its full ring, a row of its own
// and out of its scope's self time; "openmp": the OMPT collector's regions,
// loops and waits. Device events (a kernel, a memcpy) are not; neither are
// python_function frames, which only nest.
inline bool is_host_category(std::string_view cat) noexcept {
  using namespace std::string_view_literals;  // compared as views: lengths first, no strlen
  return cat == "cpu_op"sv || cat == "user_annotation"sv || cat == "cuda_runtime"sv || cat == "cuda_driver"sv ||
         cat == "proftrace"sv || cat == "openmp"sv;
}

// ---- what a finished event adds to its row ----

inline void add_saturating(std::int64_t& to, std::int64_t v) noexcept {
  if (__builtin_add_overflow(to, v, &to)) to = v > 0 ? INT64_MAX : INT64_MIN;
}
// An event's length; a clock step backwards gives 0, never a negative time.
inline std::int64_t duration_ns(std::int64_t begin_ns, std::int64_t end_ns) noexcept {
  return end_ns > begin_ns ? end_ns - begin_ns : 0;
}
// Self time: the total less the direct children's totals, never negative.
inline std::int64_t self_ns(std::int64_t duration, std::int64_t children_ns) noexcept {
  return duration > children_ns ? duration - children_ns : 0;
}

// `count` more events of the row: their total and self time (each sum never
// negative, so summing them first saturates where adding one by one would).
inline void add_event_times(event_average& row, std::int64_t count, std::int64_t duration, std::int64_t self) noexcept {
  row.count += count;
  add_saturating(row.cpu_time_total_ns, duration);
  add_saturating(row.self_cpu_time_total_ns, self);
}
// One more event of the row: its total and self time.
inline void add_event_time(event_average& row, std::int64_t duration, std::int64_t self) noexcept {
  add_event_times(row, 1, duration, self);
}
// Its FLOPs, and the bytes allocated (net of frees) while it was open,
// [0] host, [1] device: in its subtree (total) and directly in it (self:
// torch's, the total less its direct children's totals).
inline void add_event_flops_memory(event_average& row, std::int64_t flops, const std::int64_t (&memory_total)[2],
                                   const std::int64_t (&memory_self)[2]) noexcept {
  add_saturating(row.flops, flops);
  add_saturating(row.cpu_memory_usage, memory_total[0]);
  add_saturating(row.self_cpu_memory_usage, memory_self[0]);
  add_saturating(row.cuda_memory_usage, memory_total[1]);
  add_saturating(row.self_cuda_memory_usage, memory_self[1]);
}

// `events` allocations or frees that no scope held, `bytes` ([0] host, [1]
// device) in all, to the memory_row_key row: top-level, their bytes its own.
inline void add_unscoped_memory(event_average& row, const std::int64_t (&bytes)[2], std::int64_t events) noexcept {
  row.top_level = true;
  row.count += events;
  add_event_flops_memory(row, 0, bytes, bytes);
}

}  // namespace proftrace::detail
