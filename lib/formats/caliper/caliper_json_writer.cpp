#include "caliper_json_writer.hpp"

#include <cmath>

#include "formats/json_text.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

// A sum as JSON: a whole number as an integer (calls, bytes), else a double.
void append_value(std::string& out, double v) {
  if (std::trunc(v) == v && std::fabs(v) < 9e15) append_int(out, static_cast<std::int64_t>(v));
  else append_double(out, v);
}

// Thicket groups runs by metadata only when a run's rows are not by rank.
bool by_rank(const call_path_profile& profile) { return profile.ranks().size() > 1; }

void write_rows(const call_path_profile& profile, std::string& out) {
  const std::size_t columns = profile.metric_names().size();
  bool first = true;
  for (const std::int64_t rank : profile.ranks()) {
    for (std::uint32_t node = 0; node < profile.nodes().size(); ++node) {
      out += first ? "\n  [" : ",\n  [";
      first = false;
      append_int(out, node);  // Node order
      out += ", ";
      append_int(out, node);  // path: the node's index
      if (by_rank(profile)) {
        out += ", ";
        append_int(out, rank);
      }
      const std::vector<double>* sums = profile.values(node, rank);
      for (std::size_t m = 0; m < columns; ++m) {
        const double sum = sums && m < sums->size() ? (*sums)[m] : 0.0;
        const bool time = m == call_path_profile::exclusive_ns || m == call_path_profile::inclusive_ns;
        out += ", ";
        append_value(out, time ? sum / 1e9 : sum);
      }
      out += ']';
    }
  }
  out += "\n ]";
}

void write_columns(const call_path_profile& profile, std::string& out) {
  out += ",\n \"columns\": [\"Node order\", \"path\"";
  if (by_rank(profile)) out += ", \"mpi.rank\"";
  for (const std::string& name : profile.metric_names()) {
    out += ", ";
    append_json_string(out, name);
  }
  out += "],\n \"column_metadata\": [{\"is_value\": false}, {\"is_value\": false}";
  if (by_rank(profile)) out += ", {\"is_value\": true}";
  for (std::size_t m = 0; m < profile.metric_names().size(); ++m) out += ", {\"is_value\": true}";
  out += ']';
}

void write_nodes(const call_path_profile& profile, std::string& out) {
  out += ",\n \"nodes\": [";
  bool first = true;
  for (const call_path_profile::node& n : profile.nodes()) {
    out += first ? "\n  {\"label\": " : ",\n  {\"label\": ";
    first = false;
    append_json_string(out, n.label);
    out += ", \"column\": \"path\"";
    if (n.parent != call_path_profile::no_node) {
      out += ", \"parent\": ";
      append_int(out, n.parent);
    }
    out += '}';
  }
  out += "\n ]";
}

}  // namespace

void write_caliper_json(const call_path_profile& profile, std::string_view run_metadata_members, std::string& out) {
  out += "{\"data\": [";
  write_rows(profile, out);
  write_columns(profile, out);
  write_nodes(profile, out);
  out += run_metadata_members;
  out += "\n}\n";
}

}  // namespace proftrace::detail
