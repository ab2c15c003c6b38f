// OTF2 archives (lib/formats/otf2/): the converter's counts on the nesting
// walk's cases, a session's export and the trace handler's names, read back
// by otf2-print without a warning; bad outputs; the message a build without
// libotf2 gives.
#include <doctest/doctest.h>
#include <proftrace/proftrace.hpp>
#include <proftrace/trace_handler.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include "formats/otf2/kineto_to_otf2.hpp"
#include "formats/trace_formats.hpp"
#include "test_support.hpp"

namespace d = proftrace::detail;
using proftrace::trace_format;

namespace {

// otf2-print's output for an archive, with its stderr; empty when it is not installed.
std::string otf2_print(const std::filesystem::path& anchor, int& status) {
  status = 0;
  if (std::system("command -v otf2-print >/dev/null 2>&1") != 0) return {};
  const std::string cmd = "otf2-print '" + anchor.string() + "' 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(cmd.c_str(), "r"), ::pclose);
  std::string out;
  std::array<char, 4096> buf{};
  while (const std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe.get())) out.append(buf.data(), n);
  status = ::pclose(pipe.release());
  return out;
}

std::size_t count_of(const std::string& text, const std::string& word) {
  std::size_t n = 0;
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

// The scopes otf2-print reads (as many leaves as enters, no warning or
// error); `at_least` when otf2-print is not installed (check_otf2.py says so).
std::size_t readable_scopes(const std::filesystem::path& anchor, std::size_t at_least) {
  int status = 0;
  const std::string out = otf2_print(anchor, status);
  if (out.empty()) return at_least;
  CHECK(status == 0);
  CHECK(out.find("rror") == std::string::npos);
  CHECK(out.find("arning") == std::string::npos);
  CHECK(count_of(out, "\nENTER ") == count_of(out, "\nLEAVE "));
  return count_of(out, "\nENTER ");
}

constexpr const char* edge_trace = R"({"baseTimeNanoseconds": 1000, "traceEvents": [
  {"ph": "X", "name": "P", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
  {"ph": "X", "name": "Q", "pid": 1, "tid": 1, "ts": 10, "dur": 140},
  {"ph": "X", "name": "R", "pid": 1, "tid": 1, "ts": 20, "dur": 0},
  {"ph": "X", "name": "S", "pid": 1, "tid": 1, "ts": 50, "dur": 50},
  {"ph": "X", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": 200, "dur": 100},
  {"ph": "X", "name": "ProfilerStep#8", "pid": 1, "tid": 1, "ts": 300, "dur": 100},
  {"ph": "C", "name": "queue", "pid": 1, "tid": 1, "ts": 250, "args": {"queue": 3}},
  {"ph": "X", "name": "kernel", "cat": "kernel", "pid": 0, "tid": "stream 7", "ts": 20, "dur": 5},
  {"ph": "s", "name": "flow", "pid": 1, "tid": 1, "ts": 20, "id": 1}
]})";

}  // namespace

TEST_CASE("the converter walks each thread's nesting: overlaps cut, steps one region, GPU streams apart") {
  const test_support::temp_dir dir("otf2");
  std::ofstream(dir.path / "in.json") << edge_trace;
  const d::otf2_conversion r = d::kineto_to_otf2(dir.path / "in.json", dir.path / "out.otf2");
  CHECK(r.events == 9);
  CHECK(r.scopes == 7);
  CHECK(r.cut == 1);  // Q, at P's end
  CHECK(r.metric_samples == 1);
  CHECK(r.skipped == 1);  // the flow
  CHECK(r.locations == 2);
  CHECK(std::filesystem::is_regular_file(dir.path / "out.otf2"));
  CHECK(std::filesystem::is_regular_file(dir.path / "out.def"));
  CHECK(std::filesystem::is_directory(dir.path / "out"));
  CHECK(readable_scopes(dir.path / "out.otf2", 7) == 7);
  int status = 0;
  const std::string printed = otf2_print(dir.path / "out.otf2", status);
  if (!printed.empty()) CHECK(count_of(printed, "PARAMETER_INT") == 2);
  // Nothing of the scratch directory is left beside the archive.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path)) ++entries;
  CHECK(entries == 4);
}

TEST_CASE("a trace with no event is an archive readers take; a cut trace converts its complete events") {
  const test_support::temp_dir dir("otf2-empty");
  std::ofstream(dir.path / "empty.json") << R"({"traceEvents": []})";
  const d::otf2_conversion empty = d::kineto_to_otf2(dir.path / "empty.json", dir.path / "empty.otf2");
  CHECK(empty.locations == 1);  // otf2-print refuses an archive without one
  CHECK(readable_scopes(dir.path / "empty.otf2", 0) == 0);
  std::ofstream(dir.path / "cut.json") << R"({"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 5, "dur": 1},)";
  const d::otf2_conversion cut = d::kineto_to_otf2(dir.path / "cut.json", dir.path / "cut.otf2");
  CHECK(cut.truncated);
  CHECK(cut.scopes == 1);
  CHECK(readable_scopes(dir.path / "cut.otf2", 1) == 1);
}

TEST_CASE("a session exports an OTF2 archive; the trace handler names it .pt.trace.otf2, never compressed") {
  const test_support::temp_dir dir("otf2-session");
  proftrace::profile p({.on_trace_ready = proftrace::tensorboard_trace_handler(dir.path / "tb", "w", true, trace_format::otf2)});
  p.start();
  {
    PROF_SCOPE("outer");
    PROF_SCOPE("inner");
  }
  p.stop();
  p.export_chrome_trace(dir.path / "run.otf2");
  const std::size_t scopes = readable_scopes(dir.path / "run.otf2", 2);
  CHECK(scopes >= 2);
  std::size_t anchors = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path / "tb"))
    if (e.path().filename().string().ends_with(".pt.trace.otf2")) {
      ++anchors;
      CHECK(readable_scopes(e.path(), scopes) == scopes);
    }
  CHECK(anchors == 1);
  // Exported again over itself: the archive is replaced whole.
  p.export_chrome_trace(dir.path / "run.otf2");
  CHECK(readable_scopes(dir.path / "run.otf2", scopes) == scopes);
}

TEST_CASE("an OTF2 output that cannot be written is a clear error, never a crash") {
  const test_support::temp_dir dir("otf2-bad");
  std::ofstream(dir.path / "in.json") << edge_trace;
  CHECK_THROWS_WITH_AS(d::kineto_to_otf2(dir.path / "in.json", dir.path / "missing" / "out.otf2"),
                       doctest::Contains("cannot write"), std::runtime_error);
  CHECK_THROWS_WITH_AS(d::kineto_to_otf2(dir.path / "absent.json", dir.path / "out.otf2"),
                       doctest::Contains("absent.json"), std::runtime_error);
  CHECK_FALSE(std::filesystem::exists(dir.path / "out.otf2"));
  std::filesystem::create_directory(dir.path / "locked");
  ::chmod((dir.path / "locked").c_str(), 0500);
  if (::access((dir.path / "locked").c_str(), W_OK) != 0)  // not as root, who writes anyway
    CHECK_THROWS_WITH_AS(d::kineto_to_otf2(dir.path / "in.json", dir.path / "locked" / "out.otf2"),
                         doctest::Contains("Permission denied"), std::runtime_error);
  ::chmod((dir.path / "locked").c_str(), 0700);
  const d::format_row& otf2 = d::row_of(trace_format::otf2);
  CHECK(otf2.export_only);
  CHECK_THROWS_WITH_AS(d::convert_trace(otf2, d::row_of(trace_format::json), dir.path / "x.otf2", dir.path / "x.json"),
                       doctest::Contains("never read back"), std::runtime_error);
}

TEST_CASE("a build without libotf2 names the package and the option") {
  const std::string m = d::otf2_unavailable_message("run.otf2");
  CHECK(m.find("'run.otf2'") != std::string::npos);
  CHECK(m.find("libotf2-trace-dev") != std::string::npos);
  CHECK(m.find("pkg-config module otf2") != std::string::npos);
  CHECK(m.find("PROFTRACE_WITH_OTF2") != std::string::npos);
#if !PROFTRACE_WITH_OTF2
  const test_support::temp_dir dir("otf2-absent");
  std::ofstream(dir.path / "in.json") << edge_trace;
  CHECK_THROWS_WITH_AS(d::kineto_to_otf2(dir.path / "in.json", dir.path / "out.otf2"), doctest::Contains("libotf2-trace-dev"),
                       std::runtime_error);
#endif
}
