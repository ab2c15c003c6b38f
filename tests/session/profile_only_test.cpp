// Profile-only sessions (trace_format::none) and the ranks that write
// traces (trace_ranks, PROFTRACE_TRACE_RANKS): every report, no file.
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "c_api/c_config.hpp"
#include "session/trace_ranks.hpp"
#include "test_support.hpp"

using test_support::temp_dir;
using test_support::warning_capture;

namespace {

// Each leaf lasts 20 us: collapsed stacks count whole microseconds.
void work(int n) {
  PROF_FUNCTION();
  for (int i = 0; i < n; ++i) {
    PROF_SCOPE("leaf");
    PROF_MATMUL(4, 8, 16);
    const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
    while (std::chrono::steady_clock::now() < end) {
    }
  }
  PROF_INSTANT("marker");
}

std::size_t files_in(const std::filesystem::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::recursive_directory_iterator(dir)) ++n;
  return n;
}

const proftrace::event_average* row(const proftrace::event_averages& a, const std::string& key) {
  for (const auto& r : a.rows)
    if (r.key == key) return &r;
  return nullptr;
}

struct env_var {
  const char* name;
  env_var(const char* n, const char* value) : name(n) { ::setenv(n, value, 1); }
  ~env_var() { ::unsetenv(name); }
};

}  // namespace

TEST_CASE("a profile-only session aggregates every report and writes no trace and no spool") {
  temp_dir spool("profile-only-spool");
  temp_dir out("profile-only-out");
  proftrace::profile p({.with_stack = true, .with_flops = true, .stream_format = proftrace::trace_format::none,
                        .spool_dir = spool.path});
  p.start();
  work(50);
  CHECK(files_in(spool.path) == 0);  // not even while recording
  p.stop();
  CHECK(files_in(spool.path) == 0);
  REQUIRE(p.has_trace());
  CHECK(p.trace_path().empty());
  const auto averages = p.key_averages();
  REQUIRE(row(averages, "leaf") != nullptr);
  CHECK(row(averages, "leaf")->count == 50);
  CHECK(row(averages, "leaf")->flops == 50 * 2 * 4 * 8 * 16);
  CHECK(averages.instant_events == 1);
  CHECK(p.table().find("leaf") != std::string::npos);
  const auto by_stack = p.key_averages(false, 1);
  CHECK(row(by_stack, "leaf")->stack.size() == 1);
  p.export_stacks(out.path / "stacks.txt");
  CHECK(test_support::read_text(out.path / "stacks.txt").find("leaf") != std::string::npos);
}

TEST_CASE("an export of a profile-only session's trace says why there is none, and writes nothing") {
  temp_dir out("profile-only-export");
  proftrace::profile p({.stream_format = proftrace::trace_format::none});
  p.start();
  work(3);
  p.stop();
  for (const char* name : {"t.json", "t.pftrace.gz", "t.cali.json"}) {
    try {
      p.export_chrome_trace(out.path / name);
      FAIL("no exception for ", name);
    } catch (const std::logic_error& e) {
      CHECK(std::string(e.what()).find("profile-only (stream_format = none)") != std::string::npos);
    }
  }
  CHECK_THROWS_AS(p.export_profile(out.path / "t.cali.json"), std::logic_error);
  CHECK(files_in(out.path) == 0);
}

TEST_CASE("a TensorBoard handler of format none writes nothing and a user's handler still sees every cycle") {
  temp_dir out("profile-only-handler");
  int cycles = 0;
  std::int64_t leaves = 0;
  {
    proftrace::profile p({.schedule = proftrace::schedule({.wait = 0, .warmup = 0, .active = 2, .repeat = 2}),
                          .on_trace_ready = proftrace::tensorboard_trace_handler(out.path / "tb", "w", false,
                                                                                 proftrace::trace_format::none)});
    warning_capture warnings;
    p.start();
    for (int step = 0; step < 4; ++step, p.step()) work(2);
    p.stop();
    CHECK(warnings.seen.empty());
    CHECK_FALSE(std::filesystem::exists(out.path / "tb"));
  }
  proftrace::profile q({.schedule = proftrace::schedule({.wait = 0, .warmup = 0, .active = 1, .repeat = 3}),
                        .on_trace_ready =
                            [&](proftrace::session& s) {
                              ++cycles;
                              leaves += row(s.key_averages(), "leaf")->count;
                            },
                        .stream_format = proftrace::trace_format::none});
  q.start();
  for (int step = 0; step < 3; ++step, q.step()) work(5);
  q.stop();
  CHECK(cycles == 3);
  CHECK(leaves == 15);
}

TEST_CASE("PROFTRACE_CONFIG's format=none configures a profile-only session (the C API and Fortran take the same text)") {
  temp_dir out("profile-only-config");
  proftrace::detail::c_config c;
  std::string error;
  REQUIRE(proftrace::detail::parse_config("out=" + out.path.string() + ",format=none,ranks,trace_ranks=0+2", c, error));
  proftrace::profile p(c.opts);
  p.start();
  work(1);
  p.stop();
  CHECK(p.trace_path().empty());
  CHECK(row(p.key_averages(), "leaf")->count == 1);
  CHECK(files_in(out.path) == 0);
}

TEST_CASE("trace_ranks: a list of ranks and ranges; a rank left out runs profile-only") {
  namespace d = proftrace::detail;
  const auto list = d::parse_rank_list("0, 7,100-131");
  REQUIRE(list);
  CHECK(list->contains(0));
  CHECK(list->contains(7));
  CHECK(list->contains(131));
  CHECK_FALSE(list->contains(8));
  CHECK_FALSE(list->contains(132));
  CHECK(d::parse_rank_list("3+5-6")->contains(6));
  for (const char* bad : {"", ",", "1,", "a", "5-3", "-1", "1-", "1--2", "2 3"}) CHECK_MESSAGE(!d::parse_rank_list(bad), bad);

  CHECK(d::traces_this_rank("", 5));
  CHECK(d::traces_this_rank("0-3", -1));  // no rank known: every process traces
  CHECK_FALSE(d::traces_this_rank("0-3", 5));
  CHECK_THROWS_AS(d::traces_this_rank("zero", 0), std::invalid_argument);
  CHECK_THROWS_AS(proftrace::profile({.trace_ranks = "1-"}), std::invalid_argument);
  {
    const env_var env("PROFTRACE_TRACE_RANKS", "5");
    CHECK(d::traces_this_rank("0-3", 5));  // the environment's list wins
    CHECK_FALSE(d::traces_this_rank("", 4));
  }
  {
    const env_var env("PROFTRACE_TRACE_RANKS", "five");
    warning_capture warnings;
    CHECK(d::traces_this_rank("", 4));
    CHECK(warnings.contains("PROFTRACE_TRACE_RANKS='five'"));
  }
}

TEST_CASE("a rank trace_ranks leaves out keeps its reports, writes no trace, and its export says which ranks trace") {
  temp_dir spool("trace-ranks-spool");
  const env_var rank("OMPI_COMM_WORLD_RANK", "3");
  const env_var size("OMPI_COMM_WORLD_SIZE", "4");
  proftrace::profile p({.trace_ranks = "0,1", .spool_dir = spool.path});
  p.start();
  work(4);
  CHECK(files_in(spool.path) == 0);
  p.stop();
  CHECK(row(p.key_averages(), "leaf")->count == 4);
  try {
    p.export_chrome_trace(spool.path / "t.json");
    FAIL("no exception");
  } catch (const std::logic_error& e) {
    CHECK(std::string(e.what()).find("rank 3 is not among the ranks that write traces") != std::string::npos);
  }
  proftrace::profile q({.trace_ranks = "2-3", .spool_dir = spool.path});
  q.start();
  work(1);
  q.stop();
  CHECK(std::filesystem::exists(q.trace_path()));
}

TEST_CASE("rank_averages() outside a job says why it is empty: across_ranks off, no MPI, no trace yet") {
  proftrace::profile off;
  off.start();
  work(1);
  off.stop();
  CHECK(off.rank_averages().rows.empty());
  CHECK(off.rank_averages().note.find("across_ranks is off") != std::string::npos);

  proftrace::profile p({.stream_format = proftrace::trace_format::none, .across_ranks = true});
  CHECK(p.rank_averages().note.find("never started") != std::string::npos);
  p.start();
  work(2);
  CHECK(p.rank_averages().note.find("still running") != std::string::npos);
  p.stop();
  CHECK(row(p.key_averages(), "leaf")->count == 2);  // the rank's own report is there
  const proftrace::rank_averages job = p.rank_averages();
  CHECK(job.rows.empty());
  CHECK(job.note.find("does not link proftrace::mpi") != std::string::npos);
  CHECK(job.table().find("does not link proftrace::mpi") != std::string::npos);
}
