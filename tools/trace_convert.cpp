// `proftrace convert`: Kineto JSON <-> Perfetto, and either to a Caliper
// profile, by suffix, through the library's converters.
#include "perfetto_input.hpp"
#include "trace_input.hpp"
#include "trace_convert.hpp"
#include <proftrace_trace_io/compression.hpp>
#include <proftrace_trace_io/format_converters.hpp>
#include <proftrace_trace_io/trace_formats.hpp>

namespace proftrace::tools {

namespace {

namespace pd = proftrace::detail;

// The uncompressed bytes of `input` written to `output`, compressed by its suffix.
std::uint64_t recompress(const std::filesystem::path& input, const std::filesystem::path& output) {
  trace_input in(input);
  pd::compressed_output out(output);
  std::vector<char> buf(in.buffer_size(std::size_t{1} << 20));
  std::uint64_t total = 0;
  while (const std::size_t n = in.read(buf.data(), buf.size())) {
    out.stream().write(buf.data(), static_cast<std::streamsize>(n));
    total += n;
  }
  if (in.status() != trace_input::state::complete)
    throw trace_error(input.string() + ": " + (in.error().empty() ? "compressed stream cut off" : in.error()));
  out.commit();
  return total;
}

// Whether IN is Perfetto's (else JSON); throws for a format IN or OUT cannot have.
bool input_is_perfetto(const std::filesystem::path& input, const std::filesystem::path& output) {
  refuse_export_only(input);
  const bool in_perfetto = is_perfetto_trace(input);
  if (!in_perfetto && !named_json(input))
    throw trace_error(input.string() + ": cannot tell its format (" + std::string(trace_suffixes) + ")");
  if (!named_perfetto_trace(output) && !named_json(output) && !named_export_only(output))
    throw trace_error(output.string() + ": unknown output format (" + std::string(output_trace_suffixes) + ")");
  return in_perfetto;
}

// OUT of an export-only format (.otf2), through the library's table: from
// Kineto JSON, a .pftrace converted to it first. Its summary line.
std::string write_export_only(const std::filesystem::path& input, bool in_perfetto, const std::filesystem::path& output,
                              std::uint64_t events) {
  const pd::format_row& from = pd::row_of(in_perfetto ? trace_format::pftrace : trace_format::json);
  const pd::format_row& to = *pd::trace_name_of(output).format;
  try {
    pd::convert_trace(from, to, input, output);
  } catch (const std::runtime_error& e) {  // the library's "proftrace: " would follow the tool's own
    const std::string_view what = e.what();
    throw trace_error(std::string(what.starts_with("proftrace: ") ? what.substr(11) : what));
  }
  return std::to_string(events) + " events written as " + std::string(to.name) + " (" + output.filename().string() + ")";
}

}  // namespace

conversion_report convert_trace(const std::filesystem::path& input, const std::filesystem::path& output) {
  const bool in_perfetto = input_is_perfetto(input, output);
  // What any other command refuses, convert refuses with the same words.
  const read_result checked = read_readable_trace(input);
  conversion_report report;
  // The "proftrace" object goes along, so the output says so too.
  if (const std::string note = incompleteness(checked); !note.empty()) report.warnings.push_back(input.string() + ": " + note);
  try {
    if (named_export_only(output)) {
      report.summary = write_export_only(input, in_perfetto, output, checked.events);
      if (checked.truncated)
        report.warnings.push_back(input.string() + ": truncated inside traceEvents: its complete events were converted");
      return report;
    }
    if (in_perfetto && named_json(output)) {
      pd::compressed_output out(output);
      pd::decoded_json_writer w(out.stream());
      const pd::perfetto_read_result r = read_perfetto_file(input, {}, nullptr, &w);
      refuse_packetless(input, r);  // nothing to convert: no file written
      w.finish();
      out.commit();
      report.summary = std::to_string(r.events) + " events from " + std::to_string(r.packets) + " packets";
      if (r.truncated) report.warnings.push_back(input.string() + ": truncated: " + r.truncation);
      if (r.open_slices) report.warnings.push_back(std::to_string(r.open_slices) + " slices never ended (left out)");
      if (r.unplaced)
        report.warnings.push_back(std::to_string(r.unplaced) +
                                  " events on a clock that no clock snapshot of their sequence placed (left out)");
      if (r.skipped_open)
        report.warnings.push_back(std::to_string(r.skipped_open) +
                                  " slices begun while " + std::to_string(pd::max_open_slices) +
                                  " were open (left out; a corrupt trace?)");
      return report;
    }
    if (in_perfetto == named_perfetto_trace(output)) {  // same format: the bytes as they are, compressed anew
      // A cut input is copied as it is, with the warning a conversion gives; garbage is refused first.
      const repair_plan plan = plan_repair(input);
      report.summary = std::to_string(recompress(input, output)) + " bytes copied";
      if (!plan.complete)
        report.warnings.push_back(input.string() + ": truncated (" + plan.cut +
                                  "): copied as it is; 'proftrace validate --repair' keeps its complete events");
      return report;
    }
    const auto r = pd::kineto_to_perfetto(input, output);
    report.summary = std::to_string(r.events) + " events: " + std::to_string(r.slices) + " slices, " +
                     std::to_string(r.instants) + " instants, " + std::to_string(r.counters) + " counters, " +
                     std::to_string(r.async_slices) + " async slices, " + std::to_string(r.flows) + " flow ends";
    if (r.skipped) report.warnings.push_back(std::to_string(r.skipped) + " events not converted (other phases or unusable)");
    if (r.clamped)
      report.warnings.push_back(std::to_string(r.clamped) +
                                " ts or dur values beyond +-4e18 ns (126 years) written as that bound");
    if (r.truncated) report.warnings.push_back(input.string() + ": truncated inside traceEvents: its complete events were converted");
  } catch (const trace_error&) {
    throw;
  } catch (const std::exception& e) {
    throw trace_error(e.what());
  }
  return report;
}

}  // namespace proftrace::tools
