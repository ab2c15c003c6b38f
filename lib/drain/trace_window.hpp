// Internal: one trace being recorded — the sink pairing writes into.
//
// A window opens at a tick, takes the finished records pairing delivers
// (thread_seen, scope, async, memory, instant, counter), hands each to the
// aggregator (the rows behind the reports) and to the writer of its spool's
// format, and commits the writer's bytes to the spool once per flush. At
// its close, GPU activities join it and finish() returns what it was.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "aggregation/aggregator.hpp"
#include "flusher.hpp"
#include "records/async_range.hpp"
#include "records/pairing_counts.hpp"
#include "records/thread.hpp"
#include "proftrace/detail/clock.hpp"
#include "spool/trace_file.hpp"
#include "formats/kineto_json/kineto_json_writer.hpp"
#include "formats/none/none_writer.hpp"
#include "formats/perfetto/perfetto_writer.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// One writer per format of formats/trace_formats.hpp's table, each naming its trace_format.
using trace_writers = std::variant<kineto_json_writer, perfetto_writer, none_writer>;
static_assert(trace_writer<kineto_json_writer> && trace_writer<perfetto_writer> && trace_writer<none_writer>);

// A CUDA allocation or free (CUPTI's MEMORY2) as an event among the host's,
// so that it resolves with them in time order, and what it resolved to.
struct gpu_memory_event {
  const gpu_activity* activity;
  event e;
  resolved_memory m;
};

class trace_window {
 public:
  // Throws std::runtime_error when the spool cannot be created.
  trace_window(window_options options, std::uint64_t start_ticks, std::uint64_t id);

  // ---- what pairing reads and writes ----
  const std::uint64_t start_ticks;
  const std::uint64_t id;
  std::uint64_t next_external_id = 1;
  loss_counts losses;
  pairing_counts counts;
  std::int64_t to_ns(std::uint64_t ticks) const noexcept { return cal_.to_unix_ns(ticks); }
  auto ns_of_ticks() const noexcept {
    return [cal = cal_](std::uint64_t ticks) noexcept { return cal.to_unix_ns(ticks); };
  }
  std::uint64_t to_ticks(std::int64_t unix_ns) const noexcept { return cal_.from_unix_ns(unix_ns); }
  bool record_shapes() const noexcept { return opts_.record_shapes; }

  void thread_seen(thread_state& ts);
  // The thread exited and its records are all processed.
  void thread_done(std::int64_t tid) {
    each_writer([&](auto& w) { w.thread_done(tid); });
  }
  void scope(thread_state& ts, const open_scope& s, std::int64_t end_ns) {
    aggregator_.add_scope(ts, s, end_ns);
    each_writer([&](auto& w) { w.scope(ts, s, end_ns); });
  }
  void leaves(thread_state& ts, std::span<const closed_leaf> run) {  // inline: the drain's common case
    aggregator_.add_leaves(ts, run);
    each_writer([&](auto& w) { w.leaves(ts, run); });
  }
  // A profile-only window takes runs of leaves as each site's totals, where its aggregator can.
  bool takes_leaf_totals(const thread_state& ts) const noexcept {
    return std::holds_alternative<none_writer>(writer_) && aggregator_.takes_leaf_totals(ts);
  }
  void leaves(thread_state& ts, const leaf_totals& t) { aggregator_.add_leaf_totals(ts, t); }
  void async(const open_async& a, std::uint64_t async_id, std::int64_t end_ns, std::int64_t end_tid);
  void withdrawn(const thread_state& ts, const open_scope& s, std::int64_t ns);
  void memory(const thread_state& ts, const memory_event& m, bool scoped);
  void unscoped_memory(const std::int64_t (&bytes)[2], std::int64_t events) {
    aggregator_.add_unscoped_memory(bytes, events);
  }
  void instant(const thread_state& ts, const site& where, std::int64_t ns);
  void counter(const thread_state& ts, const site& where, std::int64_t ns, double value);

  // ---- the flusher's ----
  const window_options& options() const noexcept { return opts_; }
  std::vector<memory_record>& memory_records() noexcept { return aggregator_.memory(); }
  std::vector<std::pair<std::string, std::string>> tail_metadata;
  // GPU work of the closing window, attributed to the scopes that launched it.
  void write_gpu(const gpu_batch& gpu, const std::vector<gpu_memory_event>& allocations);
  // Writes what accumulated to the spool. A failure is kept in
  // pending_warning (emitted once the flusher lock is released).
  void commit();
  std::size_t buffered() { return buffer().size(); }  // formatted, not yet committed
  std::string pending_warning;
  // Closes the window at `stop_ns`: its aggregates, losses and still open spool.
  std::shared_ptr<finished_trace> finish(std::int64_t stop_ns, std::vector<std::string>& warnings);

 private:
  using writer_variant = trace_writers;
  template <std::size_t I = 0>
  void make_writer(trace_format f) {
    if constexpr (I < std::variant_size_v<writer_variant>) {
      using writer = std::variant_alternative_t<I, writer_variant>;
      if (writer::format == f) writer_.emplace<writer>(head_);
      else make_writer<I + 1>(f);
    }
  }
  template <class F>
  void each_writer(F&& f) {
    std::visit(f, writer_);
  }
  finished_trace counters() const;
  std::string result_tail() const;
  std::string& buffer();

  window_options opts_;
  clock_calibration cal_;
  trace_head head_;
  aggregator aggregator_;
  writer_variant writer_;
  std::shared_ptr<trace_file> file_;
  gpu_loss_counts gpu_losses_;
  bool warned_ = false;
  std::uint64_t names_over_limit_at_open_ = 0;  // names_over_limit() when the window opened
};

}  // namespace proftrace::detail
