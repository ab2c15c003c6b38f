// `proftrace validate` (trace_validate.hpp).
#include "trace_validate.hpp"

#include "trace_layout.hpp"

namespace proftrace::tools {

std::uint64_t validate(const std::filesystem::path& path, const std::function<void(const problem&)>& on_problem,
                       read_result* result) {
  std::uint64_t n = 0;
  const auto report = [&](std::int64_t index, std::string message) {
    ++n;
    on_problem(problem{index, std::move(message)});
  };
  std::uint64_t seen = 0;
  read_options opts;
  opts.on_event = [&](const trace_event& e) {
    ++seen;
    const auto i = static_cast<std::int64_t>(e.index);
    if (e.type != json_type::object) {
      report(i, std::string("is ") + to_string(e.type) + ", not an object");
      return true;
    }
    if (e.ph_type == json_type::absent) report(i, "has no \"ph\"");
    else if (e.ph_type != json_type::string) report(i, type_problem("ph", e.ph_type, "a string"));
    if (e.name_type == json_type::absent) report(i, "has no \"name\" (TensorBoard needs one on every event)");
    else if (e.name_type != json_type::string) report(i, type_problem("name", e.name_type, "a string"));
    const bool complete = e.ph_type == json_type::string && e.ph == "X";
    if (complete) {
      if (e.cat_type == json_type::absent) report(i, "is a complete event (\"X\") without \"cat\"");
      else if (e.cat_type != json_type::string) report(i, type_problem("cat", e.cat_type, "a string"));
      if (e.ts_type == json_type::absent) report(i, "is a complete event (\"X\") without \"ts\"");
      if (e.dur_type == json_type::absent) report(i, "is a complete event (\"X\") without \"dur\"");
    }
    if (e.ts_type != json_type::absent && e.ts_type != json_type::number) report(i, type_problem("ts", e.ts_type, "a number"));
    if (e.dur_type != json_type::absent && e.dur_type != json_type::number) report(i, type_problem("dur", e.dur_type, "a number"));
    if (e.ts_type == json_type::number && e.ts < 0) report(i, "\"ts\" is negative (" + format_time_signed(e.ts) + ")");
    if (e.dur_type == json_type::number && e.dur < 0) report(i, "\"dur\" is negative (" + format_time_signed(e.dur) + ")");
    return true;
  };
  read_result r;
  try {
    r = read_trace(path, opts);
  } catch (const trace_error& e) {
    r.events = seen;
    report(-1, e.reason(path));
    if (result) *result = r;
    return n;
  }
  if (!r.top_level_object) report(-1, "the top-level value is not an object");
  else if (!r.has_trace_events) report(-1, "no \"traceEvents\" key");
  else if (!r.trace_events_is_array) report(-1, "\"traceEvents\" is not an array");
  if (r.truncated)
    report(-1, where_cut(r, "file") + " (truncated after " + std::to_string(r.events) + " events)");
  if (const std::string note = incompleteness(r); !note.empty()) report(-1, note);
  if (result) *result = r;
  return n;
}

}  // namespace proftrace::tools
