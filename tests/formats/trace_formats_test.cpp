// The format table (lib/formats/trace_formats.hpp): names to rows, what a
// session streams for each format, and the rules of export-only rows
// (written by converting from Kineto JSON; never read back or compressed).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "formats/trace_formats.hpp"
#include "test_support.hpp"

namespace d = proftrace::detail;
using proftrace::trace_format;

namespace {

int converted = 0;

// An export-only row as a new format adds it: a suffix and a from_kineto converter.
const d::format_row write_only{trace_format::json, "writeonly", ".writeonly", true, false, false, "events_not_written",
                               nullptr, [](const std::filesystem::path&, const std::filesystem::path& out) {
                                 ++converted;
                                 std::ofstream(out) << "converted";
                               }};

}  // namespace

TEST_CASE("a file's name picks its row and compression; a name without a format's suffix is Kineto JSON") {
  CHECK(d::trace_name_of("a/b.pt.trace.pftrace.zst").format->format == trace_format::pftrace);
  CHECK(d::trace_name_of("a/b.pt.trace.pftrace.zst").compressed == d::compression::zstd);
  CHECK(d::trace_name_of("b.json.gz").format->format == trace_format::json);
  CHECK(d::trace_name_of("b.txt").format->format == trace_format::json);
  CHECK_FALSE(d::names_a_trace_suffix("b.txt"));
  CHECK(d::names_a_trace_suffix("b.gz"));
}

TEST_CASE("a session streams Kineto JSON for automatic and every export-only format, else the format asked for") {
  CHECK(d::stream_format_for(trace_format::automatic) == trace_format::json);
  for (const d::format_row& f : d::trace_formats)
    CHECK(d::stream_format_for(f.format) == (f.export_only ? trace_format::json : f.format));
}

TEST_CASE("format values list export-only rows once, without compression; a compressed export-only value is refused") {
  for (const d::format_row& f : d::trace_formats) {
    CHECK(d::parse_format_value(f.name));
    for (const d::compression_row& c : d::compressions)
      CHECK(d::parse_format_value(std::string(f.name) + std::string(c.suffix)).has_value() ==
            !(f.export_only || f.profile_only));
  }
}

TEST_CASE("the profile-only row names no file: no name picks it, file suffix lists leave it out, nothing converts to it") {
  const d::format_row& none = d::row_of(trace_format::none);
  CHECK(none.profile_only);
  CHECK(none.suffix.empty());
  CHECK(d::stream_format_for(trace_format::none) == trace_format::none);
  CHECK(d::trace_name_of("run.none").format->format == trace_format::json);
  CHECK(d::trace_name_of("run").format->format == trace_format::json);
  CHECK_FALSE(d::names_a_trace_suffix("run"));
  CHECK(d::format_values().ends_with("or none"));
  CHECK(d::format_values(".", ", ").find("none") == std::string::npos);
  CHECK_THROWS_AS(d::convert_trace(d::row_of(trace_format::json), none, "in.json", "out"), std::logic_error);
  CHECK_THROWS_AS(d::convert_trace(none, d::row_of(trace_format::json), "in", "out.json"), std::logic_error);
}

TEST_CASE("an export-only format converts from Kineto JSON, refuses a compressed output and is never read back") {
  const test_support::temp_dir dir("formats");
  const auto json = dir.path / "in.json";
  std::ofstream(json) << R"({"traceEvents": []})";
  const d::format_row& kineto = d::row_of(trace_format::json);
  converted = 0;
  d::convert_trace(kineto, write_only, json, dir.path / "out.writeonly");
  CHECK(converted == 1);
  CHECK(std::filesystem::exists(dir.path / "out.writeonly"));
  CHECK_THROWS_WITH_AS(d::convert_trace(kineto, write_only, json, dir.path / "out.writeonly.gz"),
                       doctest::Contains("is not compressed (drop '.gz')"), std::runtime_error);
  CHECK_THROWS_WITH_AS(d::convert_trace(write_only, kineto, dir.path / "out.writeonly", dir.path / "back.json"),
                       doctest::Contains("never read back"), std::runtime_error);
  CHECK(converted == 1);
  CHECK_FALSE(std::filesystem::exists(dir.path / "back.json"));
}
