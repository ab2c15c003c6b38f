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
#include "records/memory.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

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

}  // namespace proftrace::detail
