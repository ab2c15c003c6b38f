#include "otf2_definitions.hpp"

#include <algorithm>

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

namespace {

constexpr OTF2_SystemTreeNodeRef machine_node = 0;
constexpr OTF2_GroupRef world_locations = 0, world_ranks = 1;
constexpr std::uint64_t ns_per_second = 1'000'000'000;

}  // namespace

OTF2_StringRef otf2_definitions::string(std::string_view s) {
  const auto [it, fresh] = string_ids_.try_emplace(std::string(s), static_cast<OTF2_StringRef>(strings_.size()));
  if (fresh) strings_.push_back(it->first);
  return it->second;
}

OTF2_RegionRef otf2_definitions::region(std::string_view name, std::string_view category) {
  const auto [it, fresh] = region_ids_.try_emplace(std::string(name), static_cast<OTF2_RegionRef>(regions_.size()));
  if (fresh) regions_.push_back({string(name), region_kind_of(name, category)});
  return it->second;
}

OTF2_MetricRef otf2_definitions::metric(std::string_view name, std::string_view unit) {
  const auto [it, fresh] = metric_ids_.try_emplace(std::string(name), static_cast<OTF2_MetricRef>(metrics_.size()));
  if (fresh) metrics_.push_back({string(name), string(unit)});
  return it->second;
}

void otf2_definitions::write(otf2_archive& archive, const otf2_layout& layout, const otf2_clock& clock,
                             const std::map<int, std::uint64_t>& mpi_locations,
                             const std::vector<std::uint64_t>& events) {
  // Every name is interned before the strings are written: definitions name strings by id.
  string("machine"), string("step"), string("MPI"), string("MPI_COMM_WORLD"), string("");
  for (const otf2_location_group& g : layout.groups) string(g.name);
  for (const otf2_location& l : layout.locations) string(l.name);
  OTF2_GlobalDefWriter* w = archive.definitions();
  archive.check(OTF2_GlobalDefWriter_WriteClockProperties(w, ns_per_second, 0, clock.length_ns, clock.start_unix_ns),
                "the clock properties");
  write_strings(w, archive);
  archive.check(OTF2_GlobalDefWriter_WriteParadigm(w, OTF2_PARADIGM_MPI, string("MPI"), OTF2_PARADIGM_CLASS_PROCESS),
                "the MPI paradigm");
  write_system(w, archive, layout, events);
  write_regions(w, archive);
  archive.check(OTF2_GlobalDefWriter_WriteParameter(w, step_parameter, string("step"), OTF2_PARAMETER_TYPE_INT64),
                "the step parameter");
  write_metrics(w, archive);
  write_world(w, archive, layout, mpi_locations);
}

void otf2_definitions::write_strings(OTF2_GlobalDefWriter* w, const otf2_archive& a) {
  for (std::size_t i = 0; i < strings_.size(); ++i)
    a.check(OTF2_GlobalDefWriter_WriteString(w, static_cast<OTF2_StringRef>(i), std::string(strings_[i]).c_str()),
            "a string");
}

void otf2_definitions::write_system(OTF2_GlobalDefWriter* w, const otf2_archive& a, const otf2_layout& layout,
                                    const std::vector<std::uint64_t>& events) {
  a.check(OTF2_GlobalDefWriter_WriteSystemTreeNode(w, machine_node, string("machine"), string("machine"),
                                                   OTF2_UNDEFINED_SYSTEM_TREE_NODE),
          "the system tree");
  for (std::uint32_t i = 0; i < layout.groups.size(); ++i) {
    const otf2_location_group& g = layout.groups[i];
    a.check(OTF2_GlobalDefWriter_WriteLocationGroup(w, i, string(g.name), g.type, machine_node, g.creator),
            "a location group");
  }
  for (std::uint64_t i = 0; i < layout.locations.size(); ++i) {
    const otf2_location& l = layout.locations[i];
    a.check(OTF2_GlobalDefWriter_WriteLocation(w, i, string(l.name), l.type, i < events.size() ? events[i] : 0, l.group),
            "a location");
  }
}

void otf2_definitions::write_regions(OTF2_GlobalDefWriter* w, const otf2_archive& a) {
  const OTF2_StringRef none = string("");
  for (std::size_t i = 0; i < regions_.size(); ++i) {
    const region_def& r = regions_[i];
    a.check(OTF2_GlobalDefWriter_WriteRegion(w, static_cast<OTF2_RegionRef>(i), r.name, r.name, none, r.kind.role,
                                             r.kind.paradigm, OTF2_REGION_FLAG_NONE, none, 0, 0),
            "a region");
  }
}

// One metric class of one member per metric, sampled where it happens.
void otf2_definitions::write_metrics(OTF2_GlobalDefWriter* w, const otf2_archive& a) {
  for (std::size_t i = 0; i < metrics_.size(); ++i) {
    const OTF2_MetricMemberRef member = static_cast<OTF2_MetricMemberRef>(i);
    a.check(OTF2_GlobalDefWriter_WriteMetricMember(w, member, metrics_[i].name, metrics_[i].name, OTF2_METRIC_TYPE_USER,
                                                   OTF2_METRIC_ABSOLUTE_POINT, OTF2_TYPE_DOUBLE, OTF2_BASE_DECIMAL, 0,
                                                   metrics_[i].unit),
            "a metric member");
    a.check(OTF2_GlobalDefWriter_WriteMetricClass(w, static_cast<OTF2_MetricRef>(i), 1, &member,
                                                  OTF2_METRIC_ASYNCHRONOUS, OTF2_RECORDER_KIND_ABSTRACT),
            "a metric class");
  }
}

// MPI_COMM_WORLD: its locations group lists, by rank, the location of each
// rank's MPI calls (a rank without any: its first thread); its ranks group
// lists 0..N-1 into that.
void otf2_definitions::write_world(OTF2_GlobalDefWriter* w, const otf2_archive& a, const otf2_layout& layout,
                                   const std::map<int, std::uint64_t>& mpi_locations) {
  if (layout.ranks.empty()) return;
  std::vector<std::uint64_t> locations, ranks;
  for (const int rank : layout.ranks) {
    const auto used = mpi_locations.find(rank);
    std::uint64_t location = 0;
    if (used != mpi_locations.end()) location = used->second;
    else
      for (std::uint64_t i = layout.locations.size(); i-- > 0;)
        if (layout.groups[layout.locations[i].group].rank == rank &&
            layout.groups[layout.locations[i].group].type == OTF2_LOCATION_GROUP_TYPE_PROCESS)
          location = i;
    ranks.push_back(locations.size());
    locations.push_back(location);
  }
  const auto n = static_cast<std::uint32_t>(locations.size());
  a.check(OTF2_GlobalDefWriter_WriteGroup(w, world_locations, string(""), OTF2_GROUP_TYPE_COMM_LOCATIONS,
                                          OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, n, locations.data()),
          "the MPI locations");
  a.check(OTF2_GlobalDefWriter_WriteGroup(w, world_ranks, string(""), OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                          OTF2_GROUP_FLAG_NONE, n, ranks.data()),
          "MPI_COMM_WORLD's group");
  a.check(OTF2_GlobalDefWriter_WriteComm(w, world, string("MPI_COMM_WORLD"), world_ranks, OTF2_UNDEFINED_COMM,
                                         OTF2_COMM_FLAG_NONE),
          "MPI_COMM_WORLD");
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
