// Internal: a Caliper profile's run metadata: its top-level keys other than
// data, columns, column_metadata and nodes, which Hatchet keeps as the
// GraphFrame's metadata and Thicket groups and compares runs by. Taken
// from a Kineto trace's top-level members: the session's add_metadata keys
// as they are, and the run's own under the names Caliper's Adiak gives
// them (launchdate, user, hostname, cluster, executable, cmdline,
// mpi.world.size, jobsize; mpi.rank for a profile of one rank) and
// proftrace.version.
//
//   caliper_run_metadata meta;
//   meta.member("distributedInfo", R"({"rank": 1, "world_size": 4, "host": "node7"})");
//   meta.member("version", R"("v2")");   // add_metadata("version", "v2")
//   std::string out;
//   meta.write(out, {.ranks = 4, .hosts = {"node7"}});  // appends `, "version": "v2", ...`
#pragma once

#include "proftrace/config.hpp"

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

class caliper_run_metadata {
 public:
  // What the profile itself tells: its distinct ranks and hosts.
  struct profile_facts {
    std::size_t ranks = 0;
    std::set<std::string> hosts;  // from a merged trace's "rank N (host)" processes
  };

  // A top-level member of the trace (`json_value`: its JSON text).
  void member(std::string_view key, std::string_view json_value);
  // distributedInfo's rank, for a trace of one rank; 0 without.
  std::int64_t rank() const noexcept { return rank_; }
  // Appends `, "key": value` for each key: the user's, then the run's own.
  void write(std::string& out, const profile_facts& facts) const;

 private:
  void read_distributed(std::string_view json_value);
  void read_run(std::string_view json_value);

  std::vector<std::pair<std::string, std::string>> user_;  // key, JSON text
  std::vector<std::pair<std::string, std::string>> run_;   // Adiak's key, JSON text
  std::int64_t rank_ = 0;
  bool has_rank_ = false;
  std::int64_t world_size_ = 0;
  std::int64_t base_ns_ = 0;
  std::string host_;
};

}  // namespace proftrace::detail
