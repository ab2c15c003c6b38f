// Records: a closed trace window as the drain hands it to the session, the
// exports and the writers' tails: its spool, its aggregates, what it lost.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "proftrace/key_averages.hpp"
#include "proftrace/overflow.hpp"
#include "proftrace/profile.hpp"
#include "records/gpu_batch.hpp"
#include "records/memory.hpp"
#include "records/pairing_counts.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

class trace_file;

// A closed trace window: its file, its aggregates and what it lost.
struct finished_trace {
  std::filesystem::path path;
  trace_format format = trace_format::json;  // the spool's
  std::shared_ptr<trace_file> spool;  // still open: exports read through it
  bool spool_is_export = false;       // the spool was renamed to an export's path: never removed
  std::vector<event_average> averages;  // keyed by (name, input shapes)
  loss_counts losses;
  std::vector<std::pair<std::string, std::string>> tail_metadata;  // added while or after recording
  std::string write_error;  // non-empty when the spool could not be written completely
  std::int64_t start_unix_ns = 0;
  std::int64_t stop_unix_ns = 0;
  bool with_stack = false;
  overflow_policy overflow = overflow_policy::drop;  // the rings' policy when the trace closed
  bool retained_events = false;
  pairing_counts counts;  // what pairing counted: invalid FLOP estimates, moved scopes, instants written, ...
  gpu_loss_counts gpu_losses;
  std::vector<function_event> events;  // only with retain_events
  std::vector<memory_record> memory;   // every allocation, free and reserve report, with running totals
  // With write_error: the events recorded that the spool does not hold
  // (JSON: elements of traceEvents; .pftrace: TracePackets).
  std::uint64_t events_not_written = 0;
  // C API events and args recorded as "[names over limit]" (recording/interned_names.hpp).
  std::uint64_t names_over_limit = 0;

  // What closes the spool's format: late metadata, proftrace's counters and traceName.
  std::string tail(const std::string& trace_name) const;
  // proftrace's counters as the trace reports them, in order.
  std::vector<std::pair<const char*, std::uint64_t>> counter_list() const;
  // The trace's "proftrace" key: the overflow policy, the counters and, when
  // the spool is incomplete, why and how much it lacks (a JSON object's
  // text; both formats write it).
  std::string counters_json() const;
  // The key under which an incomplete trace counts what it lacks.
  const char* not_written_key() const noexcept;
};

}  // namespace proftrace::detail
