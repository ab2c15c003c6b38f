// tools/trace_repair.hpp — `proftrace validate --repair`: the complete events of a cut trace,
// closed (tools/trace_repair.cpp).
#pragma once

#include <filesystem>

#include "trace_reader.hpp"

namespace proftrace::tools {

// What `proftrace validate --repair` keeps of a trace that may be cut off
// anywhere: the longest prefix of its uncompressed text that ends on a
// complete event of "traceEvents" (or a complete top-level member, when the
// cut is before or after that array), and the closing that makes it valid.
struct repair_plan {
  bool complete = false;          // whole JSON, whole compressed stream: nothing to repair
  std::uint64_t bytes = 0;        // uncompressed bytes read before the input ended or went wrong
  std::uint64_t keep_bytes = 0;   // the prefix of the uncompressed text that is kept
  std::string closing;            // written after it: "]}", "}" or ", \"traceEvents\": []}"
  std::uint64_t events_kept = 0;  // complete elements of traceEvents in the prefix
  // How and where the input stops, e.g. "cut inside event 12 at byte 3456",
  // "gzip stream cut between events at uncompressed byte 9000"; empty when complete.
  std::string cut;
};

// Reads `path` once, streaming, in bounded memory. Throws trace_error
// ("PATH: nothing to repair: ...") when no trace can be recovered: missing,
// empty or unreadable file, a top-level value that is not an object, invalid
// JSON or corrupt compressed data before "traceEvents", "traceEvents" not an
// array. A cut (end of data, truncated gzip or zstd stream, corrupt
// compressed data, invalid JSON such as a zero-filled tail) inside or after
// traceEvents keeps every complete event before it; a cut before it keeps
// the complete members and adds an empty "traceEvents".
repair_plan plan_repair(const std::filesystem::path& path);

// Writes the plan's prefix of `input` and its closing to `output`,
// compressed by output's suffix (.gz, .zst, else plain), through a temporary
// file renamed at the end (so `output` may be `input`). Throws trace_error.
void write_repaired(const std::filesystem::path& input, const repair_plan& plan, const std::filesystem::path& output);

// "<name>.repaired<suffixes>" next to `input`: t.pt.trace.json.gz ->
// t.pt.trace.repaired.json.gz.
std::filesystem::path default_repair_output(const std::filesystem::path& input);

}  // namespace proftrace::tools
