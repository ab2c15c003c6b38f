// A killed export leaves its temporary beside the destination; the next
// export to that path removes it, and only it: never a live export's, nor
// another destination's (lib/spool/export_temporary.hpp).
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <proftrace/proftrace.hpp>

#include "spool/export_temporary.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace {

// A child that makes a temporary of `dest` and writes a megabyte into it,
// as an export does, tells its path through a pipe, then waits to be killed.
struct exporting_child {
  pid_t pid = -1;
  fs::path temporary;

  exporting_child(const fs::path& dest, const std::string& suffix) {
    int link[2];
    REQUIRE(::pipe(link) == 0);
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      proftrace::detail::export_temporary t(dest, {.suffix = suffix});
      const std::string megabyte(1 << 20, 'x');
      const std::string path = t.path().string();
      if (::write(t.fd(), megabyte.data(), megabyte.size()) < 0 || ::write(link[1], path.data(), path.size()) < 0)
        ::_exit(1);
      ::close(link[1]);
      for (;;) ::pause();
    }
    ::close(link[1]);
    std::string path;
    char buf[512];
    for (ssize_t n; (n = ::read(link[0], buf, sizeof buf)) > 0;) path.append(buf, static_cast<std::size_t>(n));
    ::close(link[0]);
    temporary = path;
  }
  void kill() {
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
};

void record(proftrace::profile& p) {
  p.start();
  for (int i = 0; i < 100; ++i) {
    PROF_SCOPE("work");
  }
  p.stop();
}

}  // namespace

TEST_CASE("a killed export's temporaries go at the next export to that path; a live export's and other paths' stay") {
  test_support::temp_dir dir("export-temporaries");
  const fs::path dest = dir.path / "k.pftrace.zst", other = dir.path / "other.pftrace.zst";

  exporting_child killed(dest, ""), killed_scratch(dest, ".json"), live(dest, ""), other_killed(other, "");
  killed.kill();
  killed_scratch.kill();
  other_killed.kill();
  const fs::path lookalike = dir.path / ".k.pftrace.zst.notes";  // no pid, no random part: not a temporary
  std::ofstream(lookalike) << "mine";
  REQUIRE(fs::exists(killed.temporary));
  CHECK(killed.temporary.filename().string().starts_with(".k.pftrace.zst." + std::to_string(killed.pid) + "."));
  CHECK(killed_scratch.temporary.filename().string().ends_with(".json"));

  proftrace::profile p({.stream_format = proftrace::trace_format::json});
  record(p);
  p.export_chrome_trace(dest);  // converted: a scratch copy and the converter's output, both temporaries of dest

  CHECK_FALSE(fs::exists(killed.temporary));
  CHECK_FALSE(fs::exists(killed_scratch.temporary));
  CHECK(fs::exists(live.temporary));          // its process still writes
  CHECK(fs::exists(other_killed.temporary));  // another destination's
  CHECK(fs::exists(lookalike));
  std::vector<fs::path> expected{lookalike, live.temporary, other_killed.temporary, dest};
  std::sort(expected.begin(), expected.end());
  CHECK(test_support::files_in(dir.path) == expected);

  // Once its writer is gone, the next export takes it too; a plain copy's path as well.
  live.kill();
  p.export_chrome_trace(dest);
  CHECK_FALSE(fs::exists(live.temporary));
  p.export_chrome_trace(other.parent_path() / "other.json.zst");
  CHECK(fs::exists(other_killed.temporary));  // "other.json.zst" is yet another destination
}

TEST_CASE("a kill during export leaves a temporary named after the destination and the writer") {
  test_support::temp_dir dir("export-temporary-name");
  const fs::path dest = dir.path / "t.json.zst";
  exporting_child killed(dest, "");
  killed.kill();
  CHECK(proftrace::detail::remove_stale_temporaries(dest, dir.path) == 1);
  CHECK(test_support::files_in(dir.path).empty());
  // Its own process's temporaries are never stale to it.
  {
    proftrace::detail::export_temporary mine(dest);
    CHECK(proftrace::detail::remove_stale_temporaries(dest, dir.path) == 0);
    CHECK(fs::exists(mine.path()));
  }
  CHECK(test_support::files_in(dir.path).empty());  // not renamed: removed with it
}
