// Internal: one row per trace format and per compression. Every place that
// picks a format or a compression by a file's name, names a spool or an
// export, or converts between formats asks these tables; adding a format is
// its folder under formats/, its writer in trace_window's writer_variant and
// one row here.
//
//   const trace_name n = parse_trace_name("rank0.pt.trace.pftrace.zst");
//   // n.format->format == trace_format::pftrace, n.compressed == compression::zstd
//   convert_trace(row_of(trace_format::json), *n.format, "in.json", "out.pftrace.zst");
#pragma once

#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "proftrace/profile.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

enum class compression : std::uint8_t { none, gzip, zstd };

struct compression_row {
  compression kind;
  std::string_view suffix;  // after the format's: ".gz", ".zst"
};
inline constexpr std::array<compression_row, 2> compressions{{{compression::gzip, ".gz"}, {compression::zstd, ".zst"}}};

// Converts the trace at `in` (the row's format, compressed by its name) to
// Kineto JSON at `out`, or the reverse; compression by `out`'s name.
using trace_converter = void (*)(const std::filesystem::path& in, const std::filesystem::path& out);

struct format_row {
  trace_format format;
  std::string_view name;    // PROFTRACE_CONFIG's format= value, the command line's word
  std::string_view suffix;  // a file's, before any compression suffix
  // Written only by converting a finished trace from Kineto JSON
  // (from_kineto; to_kineto is null): never streamed, spooled, compressed
  // or read back. A session whose handler names one streams Kineto JSON
  // and converts at the export.
  bool export_only;
  // No trace at all (trace_format::none): a profile-only session's row,
  // with no suffix, no spool and no writer beyond the aggregates.
  bool profile_only;
  // The spool's closing part is rewritten at each commit (JSON's "]}"), or
  // the spool is only appended to (Perfetto's packets).
  bool rewrites_tail;
  // The key under which an incomplete trace counts what its spool lacks,
  // in the spool's own records.
  const char* not_written_key;
  trace_converter to_kineto;    // null: the format is Kineto JSON
  trace_converter from_kineto;  // null: the format is Kineto JSON
};

extern const std::array<format_row, 5> trace_formats;

// The row of a format (trace_format::automatic: Kineto JSON's, the default).
const format_row& row_of(trace_format f) noexcept;
// The format a trace streams and spools in when `f` is asked for: `f`'s,
// Kineto JSON's for automatic and export-only formats.
trace_format stream_format_for(trace_format f) noexcept;

// A file name's format and compression: "x.pftrace.gz" -> Perfetto's, gzip.
// `format` is null when no format suffix comes before the compression's.
struct trace_name {
  const format_row* format = nullptr;
  compression compressed = compression::none;
};
trace_name parse_trace_name(std::string_view file_name) noexcept;
// Of a path's file name; a name with no format suffix is Kineto JSON (torch
// writes any name but ".gz" as JSON).
trace_name trace_name_of(const std::filesystem::path& p) noexcept;
compression compression_of(const std::filesystem::path& p) noexcept;
std::string_view suffix_of(compression c) noexcept;
// Whether a name ends in a suffix of the tables (a format's or a compression's).
bool names_a_trace_suffix(const std::filesystem::path& p) noexcept;
// "json", "json.gz", ..., "pftrace.zst", "none": PROFTRACE_CONFIG's format= value.
std::optional<trace_name> parse_format_value(std::string_view value) noexcept;
// Every format and compression as a name ends: `lead` + "json", ..., the
// last after `last_separator` ("json, json.gz, ... or none"). With a
// `lead` (file suffixes) the profile-only row, which names no file, is left out.
std::string format_values(std::string_view lead = "", std::string_view last_separator = " or ");
// ".pt.trace.pftrace.zst": a trace file's name after its worker's and time.
std::string trace_file_suffix(trace_format f, compression c);

// `in` (of format `from`) converted to `out` (of format `to`), through
// Kineto JSON: the converters' common ground. Throws std::runtime_error
// naming the file when `from` is export-only or `out` names a compression
// that `to` (export-only) does not take.
void convert_trace(const format_row& from, const format_row& to, const std::filesystem::path& in,
                   const std::filesystem::path& out);

}  // namespace proftrace::detail
