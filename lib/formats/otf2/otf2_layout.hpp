// Internal: where a Kineto trace's threads go in an OTF2 archive. Each
// process (pid) becomes a location group and each of its threads (pid,
// tid) a location, numbered in the order the trace first names them (so
// location ids stay unique across the ranks of a merged trace). A process
// whose threads are all GPU streams (Kineto: pid the device, tid
// "stream N", or kernel/copy categories) is an accelerator group of
// accelerator-stream locations, created by its rank's host process. A
// process's rank comes from its name ("rank 3 (host)", as `proftrace merge`
// names them) or, in a one-rank trace, from distributedInfo.rank.
//
//   otf2_layout_input in;
//   in.threads.push_back({.pid = read_id(e.pid), .tid = read_id(e.tid)});
//   in.process_names["7"] = "rank 0 (node1)";
//   const otf2_layout layout = plan_layout(in);
//   layout.groups[layout.locations[0].group].rank;  // 0
#pragma once

#include "proftrace/config.hpp"

#include <otf2/otf2.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "formats/perfetto/kineto_event.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

struct otf2_thread_ids {
  id_value pid, tid;
  bool gpu_work = false;  // it holds kernels, copies or sets
};

struct otf2_layout_input {
  std::vector<otf2_thread_ids> threads;  // by location id
  std::unordered_map<std::string, std::string> process_names;  // by pid text
  std::unordered_map<std::string, std::string> thread_names;   // by "pid\x1ftid"
  int trace_rank = -1;  // distributedInfo.rank of a one-rank trace
};

struct otf2_location_group {
  std::string name;
  OTF2_LocationGroupType type = OTF2_LOCATION_GROUP_TYPE_PROCESS;
  std::uint32_t creator = OTF2_UNDEFINED_UINT32;  // an accelerator's host group
  int rank = -1;
};

struct otf2_location {
  std::string name;
  OTF2_LocationType type = OTF2_LOCATION_TYPE_CPU_THREAD;
  std::uint32_t group = 0;
};

struct otf2_layout {
  std::vector<otf2_location_group> groups;
  std::vector<otf2_location> locations;  // by location id
  // The rank of each host group with one, ascending: a rank's place here is
  // its rank in the archive's MPI_COMM_WORLD.
  std::vector<int> ranks;

  // The place of `rank` in `ranks`; false when no group has it.
  bool comm_rank_of(int rank, std::uint32_t& place) const noexcept;
};

otf2_layout plan_layout(const otf2_layout_input& in);

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
