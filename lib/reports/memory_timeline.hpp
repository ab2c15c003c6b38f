// Internal: the memory events of one trace, in the form torch's
// MemoryProfileTimeline works on, and what is computed from them: peak
// statistics and the exported timelines (.json, .json.gz, raw.json.gz, .html).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "proftrace/config.hpp"
#include "proftrace/memory_category.hpp"
#include "proftrace/memory_stats.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

// torch's _memory_profiler.Action values (INCREMENT_VERSION = 3 has no
// counterpart here); `reserve` is proftrace's own and is not exported.
enum class memory_action : std::uint8_t { preexisting = 1, create = 2, destroy = 4, reserve = 5 };

struct memory_record {
  std::int64_t t_ns = 0;  // Unix ns; -1 for an allocation live when the trace began
  std::int64_t bytes = 0;  // negative on destroy; the reported size on reserve
  std::int64_t total_allocated = 0;  // on the device, just after this record
  std::int64_t total_reserved = 0;
  std::int64_t step = -1;
  std::int32_t device = -1;
  memory_category category = memory_category::unknown;
  memory_action action = memory_action::create;
};

// Peaks and current totals per device over `records` (trace and session
// fields both set to the trace's peaks), devices in increasing order.
std::vector<device_memory_stats> memory_stats_of(const std::vector<memory_record>& records);

// torch's coalesced timeline for one device: times in integer microseconds,
// and per time a row [0, bytes per category in timeline order].
struct memory_timeline {
  std::vector<std::int64_t> times_us;
  std::vector<std::vector<std::int64_t>> sizes;
};
memory_timeline coalesce(const std::vector<memory_record>& records, int device);

std::string timeline_json(const memory_timeline& t);
std::string raw_timeline_json(const std::vector<memory_record>& records, int device);
// A self-contained page: the stacked plot as inline SVG, one <path
// class="series"> per category that holds memory, the peak marked.
std::string timeline_html(const memory_timeline& t, int device, const memory_peaks& peaks);

// Parses torch's device names: "cpu" -> -1, "cuda" / "cuda:N" -> N.
// Throws std::invalid_argument on anything else.
int parse_memory_device(std::string_view name);

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
