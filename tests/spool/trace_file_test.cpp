// The spool file (lib/spool/trace_file.cpp): its bytes after each commit, and the
// space it reserves past its end on ext4, which never shows in its size or
// content and goes back once the trace is finished.
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <string>

#include "test_support.hpp"
#include "spool/trace_file.hpp"

using test_support::read_text;
using test_support::temp_dir;

namespace {
std::atomic<int> fallocate_calls{0};
std::atomic<bool> refuse_fallocate{false};
}  // namespace

// The library's fallocate: counted, and, when asked, refused with ENOSPC
// after doing the work, as a file system that runs out partway may leave
// blocks allocated.
extern "C" int fallocate(int fd, int mode, off_t offset, off_t len) {
  using fallocate_fn = int (*)(int, int, off_t, off_t);
  static const auto real = reinterpret_cast<fallocate_fn>(::dlsym(RTLD_NEXT, "fallocate"));
  ++fallocate_calls;
  const int rc = real(fd, mode, offset, len);
  if (rc != 0 || !refuse_fallocate) return rc;
  errno = ENOSPC;
  return -1;
}

namespace {

struct file_space {
  std::uint64_t size = 0;
  std::uint64_t allocated = 0;  // bytes of blocks the file holds
};

file_space space_of(const std::filesystem::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return {static_cast<std::uint64_t>(st.st_size), static_cast<std::uint64_t>(st.st_blocks) * 512};
}

bool on_ext4(const std::filesystem::path& dir) {
  struct statfs fs {};
  REQUIRE(::statfs(dir.c_str(), &fs) == 0);
  return fs.f_type == 0xEF53;
}

constexpr std::uint64_t mib = std::uint64_t{1} << 20;

}  // namespace

TEST_CASE("a spool holds exactly its head, events and closing part, with space reserved past them until finished") {
  temp_dir dir("trace-file-reserve");
  const auto path = dir.path / "spool.json";
  proftrace::detail::trace_file file(path, "[head", "]tail");
  const std::string events(300'000, 'e');
  std::string expected_events;
  for (int i = 0; i < 4; ++i) {
    REQUIRE(file.commit(events, "]tail"));
    expected_events += events;
    const std::string text = read_text(path);
    // The closing part ends with a trailer of tabs and spaces (the offset of the tail).
    REQUIRE(text.starts_with("[head" + expected_events + "]tail\t"));
    CHECK(text.find_first_not_of(" \t\n", 5 + expected_events.size() + 5) == std::string::npos);
    CHECK(space_of(path).size == text.size());
  }
  const file_space recording = space_of(path);
  if (on_ext4(dir.path)) {
    CHECK(recording.allocated >= recording.size + 8 * mib);  // the reserve, past the end
  } else {
    MESSAGE("the temporary directory is not on ext4: no reserve expected there");
  }
  file.release_reserve();
  const file_space finished = space_of(path);
  CHECK(finished.size == recording.size);
  CHECK(finished.allocated <= finished.size + 64 * 1024);  // the last blocks only
  CHECK(read_text(path).starts_with("[head" + expected_events + "]tail\t"));
  // Commits after the release write on without a reserve.
  REQUIRE(file.commit(events, "]tail"));
  CHECK(space_of(path).allocated <= space_of(path).size + 64 * 1024);
}

TEST_CASE("a finished session's trace keeps no reserved space, in either format") {
  temp_dir dir("trace-file-session");
  using proftrace::trace_format;
  for (const auto& case_ : {std::pair{trace_format::json, "t.pt.trace.json"}, std::pair{trace_format::pftrace, "t.pftrace"}}) {
    const auto format = case_.first;
    const char* const name = case_.second;  // not a structured binding: clang 14 cannot capture one (CAPTURE)
    CAPTURE(name);
    proftrace::profile p({.stream_format = format, .spool_dir = dir.path});
    p.start();
    for (int i = 0; i < 20'000; ++i) {
      PROF_SCOPE("reserved");
    }
    p.stop();
    const file_space spool = space_of(p.trace_path());
    CHECK(spool.allocated <= spool.size + 64 * 1024);
    p.export_chrome_trace(dir.path / name);  // the spool itself, renamed
    const file_space s = space_of(dir.path / name);
    CHECK(s.size > 0);
    CHECK(s.allocated <= s.size + 64 * 1024);
  }
}

TEST_CASE("a reserve the disk refuses is given back, once, and the spool writes on without one") {
  temp_dir dir("trace-file-refused");
  if (!on_ext4(dir.path)) {
    MESSAGE("the temporary directory is not on ext4: no reserve is tried there");
    return;
  }
  const auto path = dir.path / "spool.json";
  refuse_fallocate = true;
  fallocate_calls = 0;
  proftrace::detail::trace_file file(path, "[head", "]tail");
  const std::string events(300'000, 'e');
  for (int i = 0; i < 3; ++i) REQUIRE(file.commit(events, "]tail"));
  refuse_fallocate = false;
  CHECK(fallocate_calls == 1);  // refused once, never asked again
  CHECK(file.error().empty());
  CHECK(read_text(path).starts_with("[head" + events + events + events + "]tail\t"));
  const file_space s = space_of(path);
  CHECK(s.allocated <= s.size + 64 * 1024);  // what the refused call left is freed
}
