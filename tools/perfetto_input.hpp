// A Perfetto trace read through trace_input, for the command line's readers
// (summary, validate --repair, convert); internal to tools/.
//
//   bool damaged = false;
//   const auto r = read_perfetto_file("t.pftrace.zst", callbacks, &damaged);
#pragma once

#include <filesystem>

#include <proftrace_trace_io/perfetto_reader.hpp>

namespace proftrace::detail {
class decoded_json_writer;
}

namespace proftrace::tools {

// The library's reader given a stream from trace_input: a compressed stream
// that is cut off or corrupt ends the read like a cut inside a packet, after
// every whole packet before it, and `compressed_damage` is set (Boost's
// filters would end a cut zstd stream silently and lose a cut gzip
// stream's last block). Throws trace_error.
//
// The result's `events` are what every command counts as a trace's events:
// the elements of "traceEvents" of the JSON `proftrace convert` writes from
// it, metadata ("M") and flow events included, counted by that converter
// as it writes them: `json`, or one whose text is discarded. Each event
// reaches callbacks.on_event before the converter writes it, so
// json->elements() is then its index in that JSON.
proftrace::detail::perfetto_read_result read_perfetto_file(const std::filesystem::path& path,
                                                           const proftrace::detail::perfetto_callbacks& callbacks,
                                                           bool* compressed_damage = nullptr,
                                                           proftrace::detail::decoded_json_writer* json = nullptr);

// A read that found no whole packet (an empty file, or one cut inside its
// first packet) is no trace: throws trace_error saying which, as every
// command says it.
void refuse_packetless(const std::filesystem::path& path, const proftrace::detail::perfetto_read_result& r);

}  // namespace proftrace::tools
