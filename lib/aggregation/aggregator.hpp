// Internal: the rows behind key_averages() and the reports, built from the
// finished records of a trace window as pairing delivers them — times, FLOPs
// and memory per (name, input shapes[, stack]), GPU time attributed to the
// scopes that launched it, the retained events and the memory records.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "cuda/cuda_collection.hpp"
#include "memory_timeline.hpp"
#include "pairing/memory_resolver.hpp"
#include "pairing/scope_stack.hpp"
#include "proftrace/key_averages.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

// A user scope projected onto a GPU stream its work ran on.
struct gpu_span {
  const site* where;
  std::uint64_t external_id;
  std::uint32_t device, stream;
  std::int64_t begin_ns, end_ns;
};

struct aggregation_options {
  bool with_stack = false;     // rows per enclosing stack too
  bool retain_events = false;  // keep every event (profile::events(), the execution trace)
  bool cuda = false;           // remember each scope's row and parent for GPU attribution
};

class aggregator {
 public:
  explicit aggregator(aggregation_options o) : opts_(o) {}

  // `s` closed at end_ns inside ts.stack (its enclosing scopes, outermost first).
  void add_scope(const thread_state& ts, const open_scope& s, std::int64_t end_ns);
  void add_async(const open_async& a, std::int64_t end_ns, std::int64_t end_tid);
  // A resolved memory event; `scoped`: a scope was open to take its bytes.
  void add_memory(const memory_event& m, bool scoped);
  // GPU time to the launching scopes (self) and every scope around them
  // (total); returns the user scopes' projections onto the streams.
  std::vector<gpu_span> add_gpu(const std::vector<gpu_activity>& activities);
  // A CUDA allocation or free to the scope that launched it and those around it.
  void add_gpu_memory(const gpu_activity& a, const memory_event& m);

  const std::vector<event_average>& rows() const noexcept { return rows_; }
  std::vector<function_event> take_retained() { return std::move(retained_); }
  std::vector<memory_record>& memory() noexcept { return memory_; }

  // The name a scope is written and aggregated under.
  static const char* row_name(const site& where) noexcept;

 private:
  event_average& row_for(const thread_state& ts, const open_scope& s);
  event_average& keyed_row(std::string key, const char* name);
  void retain(const thread_state& ts, const open_scope& s, std::int64_t end_ns, std::int64_t self);
  void add_counters(const thread_state& ts, const open_scope& s, event_average& row);
  template <class Fn>
  void for_each_launcher(std::uint64_t external_id, Fn&& fn) const;

  aggregation_options opts_;
  std::vector<event_average> rows_;
  std::unordered_map<const site*, std::size_t> by_site_;
  // by_site_'s recent answers, direct-mapped by address: the drain loop's
  // lookup without hashing.
  struct site_slot {
    const site* where = nullptr;
    std::size_t row = 0;
  };
  std::array<site_slot, 64> site_cache_{};
  std::unordered_map<std::string, std::size_t> by_key_;
  std::vector<function_event> retained_;
  std::vector<memory_record> memory_;
  // With CUDA: every closed scope by external id, with its row, the
  // enclosing scope's id (0 at the top) and its site.
  struct launcher {
    std::size_t row;
    std::uint64_t parent;
    const site* where;
  };
  std::unordered_map<std::uint64_t, launcher> launchers_;
  // Counters' deltas of the closed children of each thread's open scopes,
  // by depth, for their self counts: [tid][depth] -> per counter kind.
  std::unordered_map<std::int64_t, std::vector<std::vector<std::int64_t>>> counter_children_;
};

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
