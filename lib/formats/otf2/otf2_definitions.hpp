// Internal: an OTF2 archive's global definitions, gathered while its events
// are written (each region, metric and string gets its id at first use)
// and written once they end: clock properties, paradigms, strings, the
// system tree, location groups and locations (otf2_layout), regions, the
// ProfilerStep "step" parameter, metrics, and MPI_COMM_WORLD over the
// ranks' MPI locations.
//
//   otf2_definitions defs;
//   const OTF2_RegionRef r = defs.region("MPI_Send", "user_annotation");
//   const OTF2_MetricRef m = defs.metric("Total Allocated", "bytes");
//   ...  // events
//   defs.write(archive, layout, {.start_unix_ns = base, .length_ns = span}, mpi_locations, event_counts);
#pragma once

#include "proftrace/config.hpp"

#include <otf2/otf2.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "otf2_archive.hpp"
#include "otf2_layout.hpp"
#include "otf2_region_kind.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

// The archive's clock: nanosecond ticks counted from the trace's first
// event, which happened at `start_unix_ns`.
struct otf2_clock {
  std::uint64_t start_unix_ns = 0;
  std::uint64_t length_ns = 0;
};

class otf2_definitions {
 public:
  OTF2_RegionRef region(std::string_view name, std::string_view category);
  OTF2_MetricRef metric(std::string_view name, std::string_view unit);
  static constexpr OTF2_ParameterRef step_parameter = 0;
  static constexpr OTF2_CommRef world = 0;

  // `mpi_locations`: by rank, the location its MPI calls were on.
  // `events`: by location id, how many events it holds.
  void write(otf2_archive& archive, const otf2_layout& layout, const otf2_clock& clock,
             const std::map<int, std::uint64_t>& mpi_locations, const std::vector<std::uint64_t>& events);

 private:
  struct region_def {
    OTF2_StringRef name;
    otf2_region_kind kind;
  };
  struct metric_def {
    OTF2_StringRef name, unit;
  };
  OTF2_StringRef string(std::string_view s);
  void write_strings(OTF2_GlobalDefWriter* w, const otf2_archive& a);
  void write_system(OTF2_GlobalDefWriter* w, const otf2_archive& a, const otf2_layout& layout,
                    const std::vector<std::uint64_t>& events);
  void write_regions(OTF2_GlobalDefWriter* w, const otf2_archive& a);
  void write_metrics(OTF2_GlobalDefWriter* w, const otf2_archive& a);
  void write_world(OTF2_GlobalDefWriter* w, const otf2_archive& a, const otf2_layout& layout,
                   const std::map<int, std::uint64_t>& mpi_locations);

  std::unordered_map<std::string, OTF2_StringRef> string_ids_;
  std::vector<std::string_view> strings_;  // by id: keys of string_ids_
  std::unordered_map<std::string, OTF2_RegionRef> region_ids_;
  std::vector<region_def> regions_;
  std::unordered_map<std::string, OTF2_MetricRef> metric_ids_;
  std::vector<metric_def> metrics_;
};

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
