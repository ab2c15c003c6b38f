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

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

class trace_file;

// A closed trace window: its file, its aggregates and what it lost.
struct finished_trace {
  std::filesystem::path path;
  trace_format format = trace_format::json;  // the spool's
  std::shared_ptr<trace_file> spool;  // still open: exports read through it
  bool spool_is_export = false;       // the spool was renamed to an export's path: never removed
  std::vector<event_average> averages;  // keyed by (name, input shapes)
  loss_counts losses;
  std::uint64_t instant_events = 0;  // written, as the table's rows count scopes
  std::uint64_t counter_events = 0;
  std::vector<std::pair<std::string, std::string>> tail_metadata;  // added while or after recording
  std::string write_error;  // non-empty when the spool could not be written completely
  std::int64_t start_unix_ns = 0;
  std::int64_t stop_unix_ns = 0;
  bool with_stack = false;
  overflow_policy overflow = overflow_policy::drop;  // the rings' policy when the trace closed
  bool retained_events = false;
  std::uint64_t invalid_flop_estimates = 0;   // negative dimensions or counts, impossible shapes, overflow: counted, not added (a zero estimate is valid)
  std::uint64_t unscoped_flop_estimates = 0;  // recorded with no scope open on the thread
  std::uint64_t unknown_frees = 0;            // frees of addresses never seen allocated (no event was lost)
  std::uint64_t invalid_memory_devices = 0;   // memory events naming a device outside -1..253: not written
  std::uint64_t unfreed_reallocations = 0;    // allocations at an address still live (no event was lost)
  std::uint64_t truncated_scopes = 0;         // scopes whose end was lost: written up to the loss, marked
  std::uint64_t moved_scopes = 0;             // scopes that ended on another thread: written as async ranges
  std::uint64_t closed_at_thread_exit = 0;    // scopes open when their thread exited: written ending there
  std::uint64_t ended_after_their_session = 0;  // ends of scopes written closed at an earlier trace's end
  std::uint64_t truncated_names = 0;          // runtime names and string args cut at the maximum length
  std::uint64_t dropped_args = 0;             // PROF_ARG with no scope open, or too many on one scope
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

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
