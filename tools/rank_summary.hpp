// tools/rank_summary.hpp — `proftrace summary DIR`: one summary per rank's
// trace, grouped into schedule cycles, and the view across ranks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <proftrace/key_averages.hpp>

#include "trace_reader.hpp"

namespace proftrace::tools {

struct rank_summary {
  std::filesystem::path file;
  int rank = -1;  // distributedInfo.rank; -1 when the trace has none
  int world_size = -1;  // distributedInfo.world_size; -1 when the trace has none
  std::string host;
  // The ProfilerStep#N numbers among its host events (-1: none): a schedule
  // with repeat > 1 writes one trace per cycle, told apart by these.
  std::int64_t first_step = -1, last_step = -1;
  std::int64_t base_ns = 0;  // baseTimeNanoseconds
  std::int64_t start_ns = 0; // base_ns + the earliest event's ts: the trace's order in time
  std::size_t cycle = 0;     // index into ranks_summary::cycles
  bool duplicate = false;    // a second trace of the same rank and cycle (left out of the view across ranks)
  proftrace::event_averages averages;
  // "steps 10-14", "step 7", or empty without steps.
  std::string steps() const;
};

struct cycle_summary {
  std::int64_t first_step = -1, last_step = -1;  // over its traces; -1: traces without steps
  std::string label;  // "steps 10-14", "step 7", "trace 2" or empty (one cycle of traces without steps)
  std::size_t entities = 0;  // distinct ranks (each trace without a rank counts alone)
  bool all_ranked = true;
};

struct ranks_summary {
  // Cycle by cycle (in step order), ranks in order within a cycle (traces
  // without a rank last, by file name).
  std::vector<rank_summary> traces;
  std::vector<cycle_summary> cycles;
  std::vector<skipped_file> skipped;  // files of the directory that are not traces
};

// Summaries of every trace in `dir` (see list_traces: files that are not
// Kineto traces are skipped, not an error; a broken trace is an error),
// grouped into schedule cycles: traces with steps by their first
// ProfilerStep#N (a trace cut short keeps its cycle), traces without steps
// by their order in time within their rank. Throws trace_error when no trace
// is left.
ranks_summary summarize_ranks(const std::filesystem::path& dir, bool group_by_input_shape,
                              std::vector<std::string>& warnings);
// Per key, across the traces of one cycle (duplicates left out): how many
// ranks have it, out of how many, the min, median and max of its self CPU
// time and the rank with the max ("-" when all are equal), sorted by
// max - min, largest first; `row_limit` rows at most (-1: all).
std::string cross_rank_table(const ranks_summary& ranks, std::size_t cycle, int row_limit = -1);

}  // namespace proftrace::tools
