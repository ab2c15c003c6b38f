// Exports onto a full disk or past a file-size limit fail loudly and leave
// nothing cut under the final name; a recording problem inside step() or
// stop() is one warning, never an exception; spool files never collide
// across runs; the session's options and metadata refuse what would break
// the trace. (/dev/full stands in for a full disk, RLIMIT_FSIZE for a small
// one: no mount needed.)
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include "test_support.hpp"
#include "spool/trace_file.hpp"

namespace {

using test_support::file_size_limit;
using test_support::temp_dir;
using test_support::warning_capture;

void busy_trace(proftrace::session& p, int scopes) {
  p.start();
  for (int i = 0; i < scopes; ++i) {
    PROF_SCOPE("busy");
    if (i % 10000 == 9999) p.flush();  // within the ring: nothing dropped
  }
  p.stop();
}

std::string plain_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::size_t files_in(const std::filesystem::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] auto& f : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

TEST_CASE("an export onto a full disk throws, in every format, and returns at once") {
  temp_dir out("faults-full");
  proftrace::profile p;
  busy_trace(p, 20000);
  CHECK_THROWS_WITH_AS(p.export_chrome_trace("/dev/full"), doctest::Contains("cannot write trace '/dev/full'"),
                       std::runtime_error);
  // Converted to the other format: the same message, the library's prefix first.
  try {
    p.export_chrome_trace("/proc/no.pftrace");
    FAIL("no exception");
  } catch (const std::runtime_error& e) {
    CHECK(std::string_view(e.what()).starts_with("proftrace: cannot write trace '/proc/no.pftrace"));
  }
  for (const char* name : {"t.json", "t.json.gz", "t.json.zst"}) {
    CAPTURE(name);
    const auto link = out.path / name;  // a name with the format's suffix, onto the full device
    std::filesystem::create_symlink("/dev/full", link);
    const auto begin = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH_AS(p.export_chrome_trace(link), doctest::Contains("No space left on device"), std::runtime_error);
    CHECK(std::chrono::steady_clock::now() - begin < std::chrono::seconds(10));  // Boost's gzip close used to spin
  }
  CHECK_THROWS_WITH_AS(p.export_memory_timeline(out.path / "t.json"), doctest::Contains("profile_memory"),
                       std::logic_error);
}

TEST_CASE("an export past a file-size limit throws and leaves neither a cut file nor a temporary one") {
  temp_dir out("faults-limit");
  proftrace::profile p;
  busy_trace(p, 50000);  // several MB of JSON
  for (const char* name : {"t.json", "t.json.gz", "t.json.zst"}) {
    CAPTURE(name);
    const auto dest = out.path / name;
    { std::ofstream(dest) << "previous"; }
    {
      file_size_limit limit(16 * 1024);
      CHECK_THROWS_WITH_AS(p.export_chrome_trace(dest), doctest::Contains("File too large"), std::runtime_error);
    }
    CHECK(plain_text(dest) == "previous");  // untouched: the export was written aside
    std::filesystem::remove(dest);
  }
  CHECK(files_in(out.path) == 0);  // no temporary left behind
  // Without the limit the same exports succeed and read back whole.
  p.export_chrome_trace(out.path / "t.json.gz");
  CHECK(test_support::events_named(test_support::read_trace(out.path / "t.json.gz"), "busy").size() == 50000);
}

TEST_CASE("exporting onto the spool's own path replaces it with the export instead of truncating it") {
  proftrace::profile p;
  busy_trace(p, 1000);
  const auto spool = p.trace_path();
  p.export_chrome_trace(spool);
  CHECK(test_support::events_named(test_support::read_trace(spool), "busy").size() == 1000);
  p.export_chrome_trace(spool);  // the session still reads its spool through the open file
  CHECK(test_support::events_named(test_support::read_trace(spool), "busy").size() == 1000);
}

TEST_CASE("a handler that fails inside stop() or step() is one warning per session, never an exception") {
  warning_capture warnings;
  proftrace::profile p({.schedule = proftrace::schedule({.wait = 0, .warmup = 1, .active = 1}),
                        .on_trace_ready = [](proftrace::session& s) { s.export_chrome_trace("/dev/full"); }});
  p.start();
  for (int i = 0; i < 40; ++i) {
    { PROF_SCOPE("step work"); }
    CHECK_NOTHROW(p.step());
  }
  CHECK_NOTHROW(p.stop());
  std::size_t failures = 0;
  for (const auto& w : warnings.seen) failures += w.find("on_trace_ready failed") != std::string::npos;
  CHECK(failures == 1);
}

TEST_CASE("the spool directory removed mid-run: step() goes on, one warning, the next traces are lost and said so") {
  warning_capture warnings;
  temp_dir spool("faults-spool-gone");
  proftrace::profile p({.schedule = proftrace::schedule({.wait = 0, .warmup = 1, .active = 1}),
                        .spool_dir = spool.path / "sub"});
  std::filesystem::create_directories(spool.path / "sub");
  p.start();
  std::filesystem::remove_all(spool.path / "sub");
  for (int i = 0; i < 20; ++i) {
    PROF_STEP();
    PROF_SCOPE("work");
  }
  for (int i = 0; i < 20; ++i) CHECK_NOTHROW(p.step());
  CHECK_NOTHROW(p.stop());
  std::size_t failures = 0;
  for (const auto& w : warnings.seen) failures += w.find("a trace could not be started") != std::string::npos;
  CHECK(failures == 1);
}

TEST_CASE("spool names carry the run, and a spool file is never reused: O_EXCL") {
  proftrace::profile p;
  busy_trace(p, 10);
  const std::string name = p.trace_path().filename().string();
  CHECK(std::regex_match(name, std::regex("proftrace-" + std::to_string(::getpid()) +
                                          R"(-[0-9a-f]+-[0-9a-f]{8}-[0-9]+\.pt\.trace\.json\.part)")));

  temp_dir dir("faults-excl");
  const auto crashed = dir.path / "proftrace-1-1.pt.trace.json.part";
  { std::ofstream(crashed) << "a crashed run's events"; }
  CHECK_THROWS_WITH_AS(proftrace::detail::trace_file(crashed, "{", "}"), doctest::Contains("File exists"),
                       std::runtime_error);
  CHECK(plain_text(crashed) == "a crashed run's events");
}

TEST_CASE("options and metadata that would break the trace are refused") {
  CHECK_THROWS_AS(proftrace::profile({.flush_period = std::chrono::milliseconds(0)}), std::invalid_argument);
  CHECK_THROWS_AS(proftrace::profile({.flush_period = std::chrono::milliseconds(-5)}), std::invalid_argument);
  proftrace::profile p;
  for (const char* key : {"traceEvents", "proftrace", "traceName", "schemaVersion", "baseTimeNanoseconds"}) {
    CAPTURE(key);
    CHECK_THROWS_WITH_AS(p.add_metadata_json(key, "[]"), doctest::Contains("reserved"), std::invalid_argument);
  }
  CHECK_NOTHROW(p.add_metadata_json("my_key", "[]"));
}
