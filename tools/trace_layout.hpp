// tools/trace_layout.hpp — the reader contract: what every command refuses
// in a trace, and the messages every command words the same way.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "trace_reader.hpp"

namespace proftrace::tools {


// Why an event no command can use (not an object, no string "ph"; an "X"
// without a string "name" or a numeric "ts" and "dur"): "event 3 has no
// \"ph\"". Empty when it is usable.
std::string event_problem(const trace_event& e);
// Throws trace_error when the top level is not an object whose "traceEvents" is an array.
void require_trace_layout(const std::filesystem::path& path, const read_result& r);
// Reads `path` once and throws the trace_error every command throws for it
// (read_trace's, event_problem's, require_trace_layout's); a trace cut
// inside traceEvents is returned `truncated`, as read_trace does.
read_result read_readable_trace(const std::filesystem::path& path);
// What a trace's "proftrace" object says of a recording whose trace file
// could not be written whole (a full disk, a file-size limit): its
// "incomplete" reason and its "events_not_written" (.pftrace:
// "packets_not_written") count, as one line every command prints; empty for
// a trace that does not say so.
std::string incompleteness(const read_result& r);

// "\"ts\" is string, not a number": a field of the wrong JSON type.
std::string type_problem(const char* field, json_type got, const char* want);
// Where a truncated trace ends ("the <what> ends at byte N inside
// traceEvents"): a Perfetto trace names the packet instead.
std::string where_cut(const read_result& r, std::string_view what);
// "-1.500ms", "12.000us", "3.250s": a signed time for tables and messages.
std::string format_time_signed(double us);

}  // namespace proftrace::tools
