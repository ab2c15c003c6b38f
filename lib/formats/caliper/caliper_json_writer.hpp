// Internal: a call_path_profile written in Caliper's JSON-split layout, as
// `cali-query -q "... format json-split"` writes it and Hatchet's
// GraphFrame.from_caliper and Thicket.from_caliper read it:
//
//   {"data": [[node order, path, mpi.rank, count, sum#time.duration, ...], ...],
//    "columns": ["Node order", "path", "mpi.rank", "count", ...],
//    "column_metadata": [{"is_value": false}, {"is_value": false}, {"is_value": true}, ...],
//    "nodes": [{"label": "main", "column": "path"}, {"label": "solve", "column": "path", "parent": 0}, ...],
//    "user": "ada", ...run metadata...}
//
// One row per node and rank, rank by rank, each rank's rows in node order
// (Hatchet takes the first rows' "Node order" for the nodes'; a node a rank
// never entered has zeros there). mpi.rank is a value column (Hatchet takes
// a non-value one for an index into "nodes"), written only for a profile
// of several ranks: Thicket cannot group runs whose rows are by rank, so a
// profile of one rank has one row per node (its rank, if any, is metadata).
//
//   std::string text;
//   write_caliper_json(profile, run_metadata_members, text);
#pragma once

#include "proftrace/config.hpp"

#include <string>
#include <string_view>

#include "call_path_profile.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// Appends the profile's JSON to `out`; `run_metadata_members`: the
// top-level members after "nodes", each as `, "key": value`.
void write_caliper_json(const call_path_profile& profile, std::string_view run_metadata_members, std::string& out);

}  // namespace proftrace::detail
