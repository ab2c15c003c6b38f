#include "trace_formats.hpp"

#include "formats/caliper/kineto_to_caliper.hpp"
#include "formats/otf2/kineto_to_otf2.hpp"
#include "formats/perfetto/kineto_to_perfetto.hpp"
#include "formats/perfetto/perfetto_to_kineto.hpp"
#include "spool/export_temporary.hpp"

#include <stdexcept>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

const std::array<format_row, 5> trace_formats{{
    {trace_format::json, "json", ".json", false, false, true, "events_not_written", nullptr, nullptr},
    {trace_format::pftrace, "pftrace", ".pftrace", false, false, false, "packets_not_written",
     [](const std::filesystem::path& in, const std::filesystem::path& out) { perfetto_to_kineto(in, out); },
     [](const std::filesystem::path& in, const std::filesystem::path& out) { kineto_to_perfetto(in, out); }},
    // An OTF2 archive's anchor file; without libotf2 its converter throws, naming the package.
    {trace_format::otf2, "otf2", ".otf2", true, false, false, "events_not_written", nullptr,
     [](const std::filesystem::path& in, const std::filesystem::path& out) { kineto_to_otf2(in, out); }},
    // After ".json": "x.cali.json" ends with both, and the last row wins.
    {trace_format::caliper, "cali.json", ".cali.json", true, false, false, "events_not_written", nullptr,
     [](const std::filesystem::path& in, const std::filesystem::path& out) { kineto_to_caliper(in, out); }},
    // A profile-only session: aggregates, no trace; no file name ends in it.
    {trace_format::none, "none", "", false, true, false, "events_not_written", nullptr, nullptr},
}};

const format_row& row_of(trace_format f) noexcept {
  for (const format_row& r : trace_formats)
    if (r.format == f) return r;
  return trace_formats[0];
}

trace_format stream_format_for(trace_format f) noexcept {
  return f == trace_format::automatic || row_of(f).export_only ? trace_format::json : f;
}

trace_name parse_trace_name(std::string_view name) noexcept {
  trace_name n;
  for (const compression_row& c : compressions) {
    if (name.ends_with(c.suffix)) {
      n.compressed = c.kind;
      name.remove_suffix(c.suffix.size());
      break;
    }
  }
  for (const format_row& f : trace_formats)
    if (!f.profile_only && name.ends_with(f.suffix)) n.format = &f;
  return n;
}

trace_name trace_name_of(const std::filesystem::path& p) noexcept {
  trace_name n = parse_trace_name(p.filename().native());
  if (n.format == nullptr) n.format = &row_of(trace_format::json);
  return n;
}

compression compression_of(const std::filesystem::path& p) noexcept {
  return parse_trace_name(p.filename().native()).compressed;
}

std::string_view suffix_of(compression c) noexcept {
  for (const compression_row& r : compressions)
    if (r.kind == c) return r.suffix;
  return {};
}

bool names_a_trace_suffix(const std::filesystem::path& p) noexcept {
  const trace_name n = parse_trace_name(p.filename().native());
  return n.format != nullptr || n.compressed != compression::none;
}

std::optional<trace_name> parse_format_value(std::string_view value) noexcept {
  for (const format_row& f : trace_formats)
    if (f.profile_only && value == f.name) return trace_name{&f, compression::none};
  const std::string name = "." + std::string(value);
  const trace_name n = parse_trace_name(name);
  if (n.format == nullptr || (n.format->export_only && n.compressed != compression::none) || n.format->suffix.size() + suffix_of(n.compressed).size() != name.size()) return std::nullopt;
  return n;
}

std::string format_values(std::string_view lead, std::string_view last_separator) {
  std::string out;
  const auto forms = [&](const format_row& f) -> std::size_t {
    if (f.profile_only) return lead.empty() ? 1 : 0;
    return f.export_only ? 1 : compressions.size() + 1;
  };
  std::size_t count = 0;
  for (const format_row& f : trace_formats) count += forms(f);
  std::size_t i = 0;
  for (const format_row& f : trace_formats) {
    for (std::size_t c = 0; c < forms(f); ++c, ++i) {
      if (i != 0) out += i + 1 == count ? last_separator : ", ";
      out += lead;
      out += f.name;
      if (c != 0) out += compressions[c - 1].suffix;
    }
  }
  return out;
}

std::string trace_file_suffix(trace_format f, compression c) {
  return ".pt.trace" + std::string(row_of(f).suffix) + std::string(suffix_of(c));
}

void convert_trace(const format_row& from, const format_row& to, const std::filesystem::path& in,
                   const std::filesystem::path& out) {
  if (&from == &to) throw std::logic_error("proftrace: convert_trace between one format");
  if (from.profile_only || to.profile_only) throw std::logic_error("proftrace: convert_trace to or from no trace (none)");
  if (from.export_only)
    throw std::runtime_error("proftrace: " + in.string() + ": " + std::string(from.name) +
                             " is written only (converted from a trace), never read back: read its .json or .pftrace");
  if (to.export_only && compression_of(out) != compression::none)
    throw std::runtime_error("proftrace: cannot write '" + out.string() + "': a " + std::string(to.name) +
                             " output is not compressed (drop '" + std::string(suffix_of(compression_of(out))) + "')");
  if (to.from_kineto == nullptr) return from.to_kineto(in, out);
  if (from.to_kineto == nullptr) return to.from_kineto(in, out);
  const export_temporary json(out, {.suffix = ".json", .or_temp_dir = true});
  from.to_kineto(in, json.path());
  to.from_kineto(json.path(), out);
}

}  // namespace proftrace::detail
