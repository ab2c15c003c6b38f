// The reader contract (trace_layout.hpp): what every command refuses.
#include "trace_layout.hpp"

#include <cmath>
#include <cstdio>
#include <optional>

namespace proftrace::tools {

std::string type_problem(const char* field, json_type got, const char* want) {
  return std::string("\"") + field + "\" is " + to_string(got) + ", not " + want;
}

std::string format_time_signed(double us) {
  char buf[64];
  const double a = std::fabs(us);
  const char* sign = us < 0 ? "-" : "";
  if (a >= 1e6) std::snprintf(buf, sizeof buf, "%s%.3fs", sign, a / 1e6);
  else if (a >= 1e3) std::snprintf(buf, sizeof buf, "%s%.3fms", sign, a / 1e3);
  else std::snprintf(buf, sizeof buf, "%s%.3fus", sign, a);
  return buf;
}

std::string event_problem(const trace_event& e) {
  // Made only for a problem: this runs for every event.
  const auto where = [&] { return "event " + std::to_string(e.index); };
  if (e.type != json_type::object) return where() + " is " + to_string(e.type) + ", not an object";
  if (e.ph_type == json_type::absent) return where() + " has no \"ph\"";
  if (e.ph_type != json_type::string) return where() + ": " + type_problem("ph", e.ph_type, "a string");
  if (e.ph != "X") return {};
  if (e.name_type != json_type::string)
    return where() + (e.name_type == json_type::absent ? " has no \"name\"" : ": " + type_problem("name", e.name_type, "a string"));
  if (e.ts_type != json_type::number)
    return where() + (e.ts_type == json_type::absent ? " has no \"ts\"" : ": " + type_problem("ts", e.ts_type, "a number"));
  if (e.dur_type != json_type::number)
    return where() + (e.dur_type == json_type::absent ? " has no \"dur\"" : ": " + type_problem("dur", e.dur_type, "a number"));
  return {};
}

void require_trace_layout(const std::filesystem::path& path, const read_result& r) {
  if (!r.top_level_object) throw trace_error(path.string() + ": the top-level value is not an object");
  if (!r.has_trace_events) throw trace_error(path.string() + ": no \"traceEvents\" key");
  if (!r.trace_events_is_array) throw trace_error(path.string() + ": \"traceEvents\" is not an array");
}

read_result read_readable_trace(const std::filesystem::path& path) {
  std::string error;
  read_options opts;
  opts.on_event = [&](const trace_event& e) {
    error = event_problem(e);
    return error.empty();
  };
  const read_result r = read_trace(path, opts);
  if (!error.empty()) throw trace_error(path.string() + ": " + error);
  require_trace_layout(path, r);
  return r;
}

std::string incompleteness(const read_result& r) {
  const metadata_entry* reason = nullptr;
  std::optional<std::int64_t> missing;
  std::string unit = "events";
  for (const metadata_entry& m : r.metadata) {
    if (m.key == "proftrace.incomplete") reason = &m;
    if (m.key == "proftrace.events_not_written" || m.key == "proftrace.packets_not_written") {
      missing = integer_value(m, 0, INT64_MAX);
      if (m.key == "proftrace.packets_not_written") unit = "packets";
    }
  }
  if (reason == nullptr) return {};
  const std::string why = reason->type == json_type::string ? reason->value : "(no reason given)";
  const std::string how_much = missing ? std::to_string(*missing) + " " + unit + " the session recorded are not in it"
                                       : "how much is missing was not recorded";
  return "incomplete trace: " + how_much + " (it holds the " + std::to_string(r.events) +
         " events written before the trace file failed: " + why + ")";
}

std::string where_cut(const read_result& r, std::string_view what) {
  if (!r.cut_inside_packet.empty()) return r.cut_inside_packet;
  return "the " + std::string(what) + " ends at byte " + std::to_string(r.bytes) + " inside \"traceEvents\"";
}

}  // namespace proftrace::tools
