// The job's report across ranks as a Caliper profile (lib/formats/caliper/
// rank_profile_*.cpp): one data row per node and rank, the rank count in the
// metadata, and read back to the same table and CSV; without per-rank
// values, one data row per node with the figures' columns.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "aggregation/rank_partial.hpp"
#include "formats/caliper/rank_profile.hpp"
#include "proftrace/rank_averages.hpp"

namespace pd = proftrace::detail;
namespace json = boost::json;

namespace {

proftrace::event_average row(std::string key, std::int64_t calls, std::int64_t total_ns, std::int64_t self_ns) {
  proftrace::event_average r;
  r.key = std::move(key);
  r.count = calls;
  r.cpu_time_total_ns = total_ns;
  r.self_cpu_time_total_ns = self_ns;
  return r;
}

// Four ranks: "solve" under "main" (a stack) on every rank, "io" on ranks
// 1 and 3, FLOPs and a counter on rank 2; rank 0 has a key of its own.
proftrace::rank_averages job(bool per_rank_values = true) {
  std::string partial;
  for (int rank = 0; rank < 4; ++rank) {
    proftrace::event_average solve = row("solve", 4, 1'000'000 * (rank + 1), 900'000 * (rank + 1));
    solve.stack = {"main.cpp(12): main"};
    std::vector<proftrace::event_average> rows{solve};
    if (rank % 2 == 1) rows.push_back(row("io", 1, 123'457, 123'457));
    if (rank == 2) rows[0].flops = 5'000'000, rows[0].counters = {{"cycles", 77, 70}};
    if (rank == 0) rows.push_back(row("setup", 1, 42, 42));
    pd::combine_rank_partials(partial, pd::encode_rank_partial(rows, rank, per_rank_values));
  }
  return pd::decode_rank_report(partial);
}

std::filesystem::path temp_profile(const char* name) {
  return std::filesystem::temp_directory_path() / (std::string("proftrace-rank-profile-") + name + ".cali.json");
}

json::object read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str()).as_object();
}

}  // namespace

TEST_CASE("write_profile: one row per call-path node and rank, mpi.rank a value column, the rank count in metadata") {
  const auto path = temp_profile("layout");
  job().write_profile(path);
  const json::object doc = read_json(path);
  const json::array& nodes = doc.at("nodes").as_array();
  CHECK(nodes.size() == 4);  // main.cpp(12): main, solve under it, io, setup
  CHECK(doc.at("data").as_array().size() == nodes.size() * 4);
  const json::array& columns = doc.at("columns").as_array();
  REQUIRE(columns.size() >= 6);
  CHECK(columns[2] == "mpi.rank");
  CHECK(doc.at("column_metadata").as_array()[2].at("is_value") == true);
  CHECK(doc.at("mpi.world.size") == 4);
  CHECK(doc.at("proftrace.report") == "rank_averages");
  std::set<std::int64_t> ranks;
  for (const json::value& r : doc.at("data").as_array()) ranks.insert(r.as_array()[2].to_number<std::int64_t>());
  CHECK(ranks == std::set<std::int64_t>{0, 1, 2, 3});
  std::filesystem::remove(path);
}

TEST_CASE("read_rank_profile gives back the report: the same table, in every order, and the same CSV") {
  const auto path = temp_profile("round-trip");
  const proftrace::rank_averages original = job();
  original.write_profile(path);
  const auto back = pd::read_rank_profile(path);
  REQUIRE(back.has_value());
  CHECK(back->ranks == 4);
  for (const char* sort_by : {"", "self_cpu_time_total", "imbalance_percent", "flops"})
    CHECK(back->table({.sort_by = sort_by}) == original.table({.sort_by = sort_by}));
  CHECK(back->csv() == original.csv());
  std::filesystem::remove(path);
}

TEST_CASE("a rank profile whose rows are all one rank's, and a .cali.json that is no rank profile") {
  const auto path = temp_profile("one-rank");
  std::string partial = pd::encode_rank_partial({}, 0);
  pd::combine_rank_partials(partial, pd::encode_rank_partial({row("only", 2, 10, 10)}, 1));
  const proftrace::rank_averages original = pd::decode_rank_report(partial);
  original.write_profile(path);
  CHECK(read_json(path).at("mpi.rank") == 1);
  const auto back = pd::read_rank_profile(path);
  REQUIRE(back.has_value());
  CHECK(back->csv() == original.csv());
  CHECK(back->rows.at(0).min_rank == 0);
  {
    std::ofstream other(path);
    other << R"({"data": [], "columns": [], "column_metadata": [], "nodes": []})";
  }
  CHECK_FALSE(pd::read_rank_profile(path).has_value());
  {
    std::ofstream broken(path);
    broken << R"({"proftrace.report": "rank_averages", "data": []})";
  }
  CHECK_THROWS_AS(pd::read_rank_profile(path), std::runtime_error);
  std::filesystem::remove(path);
}

TEST_CASE("without per-rank values: one row per node, the figures as columns, no mpi.rank, the same table back") {
  const auto path = temp_profile("stats-only");
  proftrace::rank_averages original = job(false);
  original.per_rank_note = "left out: the job's 4 ranks are more than PROFTRACE_RANK_VALUES_MAX=2";
  original.write_profile(path);
  const json::object doc = read_json(path);
  const json::array& nodes = doc.at("nodes").as_array();
  CHECK(doc.at("data").as_array().size() == nodes.size());
  const json::array& columns = doc.at("columns").as_array();
  for (const char* name : {"count", "sum#time.duration", "inclusive#sum#time.duration", "min#inclusive#sum#time.duration",
                           "avg#inclusive#sum#time.duration", "max#inclusive#sum#time.duration", "proftrace.min_rank",
                           "proftrace.max_rank", "proftrace.ranks_with_calls"})
    CHECK(std::find(columns.begin(), columns.end(), json::value(name)) != columns.end());
  CHECK(std::find(columns.begin(), columns.end(), json::value("mpi.rank")) == columns.end());
  CHECK_FALSE(doc.contains("mpi.rank"));
  CHECK(doc.at("mpi.world.size") == 4);
  CHECK(doc.at("proftrace.per_rank_note") == original.per_rank_note.c_str());
  const auto back = pd::read_rank_profile(path);
  REQUIRE(back.has_value());
  CHECK(back->per_rank_note == original.per_rank_note);
  for (const char* sort_by : {"", "self_cpu_time_total", "imbalance_percent", "flops"})
    CHECK(back->table({.sort_by = sort_by}) == original.table({.sort_by = sort_by}));
  CHECK(back->csv() == original.csv());
  for (const proftrace::rank_average& r : back->rows) CHECK(r.per_rank.empty());
  // The figures are the with-values report's.
  proftrace::rank_averages with_values = job();
  for (proftrace::rank_average& r : with_values.rows) r.per_rank.clear();
  with_values.per_rank_note = original.per_rank_note;
  CHECK(back->table() == with_values.table());
  std::filesystem::remove(path);
}
