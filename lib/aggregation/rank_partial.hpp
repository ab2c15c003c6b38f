// Internal: the compact binary *partial* of the job's report that the ranks
// combine over MPI (rank_reduction.hpp): what a subtree of ranks [low, high]
// knows, per key (name and stack) the sums, the min and max of one rank's
// total time with their ranks (a rank of the range without the key counting
// 0), how many ranks have the key and each such rank's calls, total and self
// time. O(keys) bytes for one rank; the per-rank values, kept for the job
// profile, add 28 bytes per key and rank that has it, so that a partial
// without them (per_rank_values false) is O(keys) whatever its range.
//
//   std::string p = encode_rank_partial(rows, /*rank=*/3);
//   combine_rank_partials(p, partial_of_ranks_4_to_7);   // adjacent ranges, either order
//   const rank_averages job = decode_rank_report(p);     // ranks = high - low + 1
//
// Layout, little-endian: "PTRK", version byte (2), flags byte (1: with
// per-rank values, 0: without), i32 low, i32 high, u32 rows;
// per row: key, u32 frames and each frame (a string: u32 length, bytes),
// ten i64 sums (calls, CPU total and self, CUDA total and self, the four
// memory figures, FLOPs), u32 counters and each (name, i64 total, i64 self),
// i64 min, i32 its rank, i64 max, i32 its rank, then with per-rank values
// u32 per-rank values and each (i32 rank, i64 calls, total, self), in rank
// order, without them i32 ranks_with_calls. Rows are in the order
// of first appearance in rank order, so that combining in any bracketing
// gives the same bytes.
#pragma once

#include "proftrace/config.hpp"

#include <string>
#include <string_view>
#include <vector>

#include "proftrace/key_averages.hpp"
#include "proftrace/rank_averages.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// The decoded form: rows with their sums, min / max with ranks,
// ranks_with_calls and per_rank over [low_rank, high_rank]; `ranks` and
// `mean_ns` are left for decode_rank_report.
struct rank_partial {
  int low_rank = 0;
  int high_rank = 0;
  bool per_rank_values = true;
  std::vector<rank_average> rows;
};

// Throws std::runtime_error, saying what is wrong, for bytes that are not a
// whole, consistent partial.
rank_partial parse_rank_partial(std::string_view bytes);
std::string serialize_rank_partial(const rank_partial& partial);

// One rank's rows (rows of one key and stack, e.g. by input shape, summed).
std::string encode_rank_partial(const std::vector<event_average>& rows, int rank, bool per_rank_values = true);
// `into` becomes the partial of both ranges, which must be adjacent (either
// may be the lower); an empty `into` takes `other` as it is. Throws
// std::runtime_error for a malformed partial, ranges that are not adjacent,
// or one partial with per-rank values and the other without.
void combine_rank_partials(std::string& into, std::string_view other);
// The job's report from the partial of all its ranks (without per-rank
// values: per_rank_note says only that the partials carried none).
rank_averages decode_rank_report(std::string_view partial);

}  // namespace proftrace::detail
