// tools/trace_pftrace.hpp — Perfetto traces (.pftrace, .pftrace.gz, .pftrace.zst) read as the
// Kineto-layout events the commands take (tools/trace_pftrace.cpp).
#pragma once

#include <filesystem>
#include <string>

#include "event_handover.hpp"
#include "trace_reader.hpp"

namespace proftrace::tools {

// A .pftrace, .pftrace.gz or .pftrace.zst name, or a file whose
// (decompressed) first byte is 0x0a (Trace.packet) and whose first byte
// other than white space is not '{' (that is JSON starting with a newline).
// Never throws.
bool is_perfetto_trace(const std::filesystem::path& path);
bool named_perfetto_trace(const std::filesystem::path& path);  // by the suffix alone
// The suffix of the format `path` holds (".json", ".pftrace"), as is_perfetto_trace tells it.
std::string format_suffix_of(const std::filesystem::path& path);
bool named_json(const std::filesystem::path& path);            // .json, .json.gz, .json.zst (not .cali.json)
inline constexpr const char* trace_suffixes = ".json, .json.gz, .json.zst, .pftrace, .pftrace.gz, .pftrace.zst";
// What convert and merge write besides (written only, never read: an OTF2
// archive's anchor file, a Caliper profile).
inline constexpr const char* output_trace_suffixes =
    ".json, .json.gz, .json.zst, .pftrace, .pftrace.gz, .pftrace.zst, .otf2, .cali.json";
// A name of a format that is written only (.otf2, .cali.json), never read back.
bool named_export_only(const std::filesystem::path& path);

// read_trace's work for a Perfetto trace: its slices become "X" events,
// instants "i", counters "C" (in the order their END appears), with pid,
// tid (a named track's name as tid), ts and dur in microseconds from the
// first event's time base, and the args the summary reads. A file cut
// inside a packet is `truncated`; malformed content throws trace_error.
// The file is decoded on a thread of its own, the events handed to
// options.on_event (on the calling thread) in batches. When on_event stops
// the read, what the decoder had read past that event is not reported
// (neither a cut, an error nor trace-wide entries after it), as if it had
// stopped there; only `bytes`, `unplaced_events` and `skipped_open_slices`
// may count some of it.
read_result read_perfetto_trace(const std::filesystem::path& path, const read_options& options);
// The same in batches of another size (tests: batch boundaries).
read_result read_perfetto_trace(const std::filesystem::path& path, const read_options& options,
                                const event_batching& batching);

}  // namespace proftrace::tools
