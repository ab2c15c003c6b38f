// The Caliper profile (.cali.json, lib/formats/caliper/): a Kineto trace's
// "X" events as a call tree in the JSON-split layout Hatchet and Thicket
// read: the tree, calls, exclusive and inclusive seconds, a call cut at its
// caller's end, threads summed, ranks of a merged trace one row each, the
// other metrics, run metadata, the format table's row, and the errors.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

#include <proftrace/proftrace.hpp>
#include <proftrace/trace_handler.hpp>

#include "formats/caliper/kineto_to_caliper.hpp"
#include "formats/trace_formats.hpp"
#include "test_support.hpp"

namespace d = proftrace::detail;
namespace json = boost::json;

namespace {

std::string x(std::string_view name, int pid, int tid, double ts, double dur, std::string_view args = "{}") {
  std::ostringstream o;
  o << std::setprecision(15) << R"({"ph": "X", "cat": "user_annotation", "name": ")" << name << R"(", "pid": )" << pid << ", \"tid\": " << tid
    << ", \"ts\": " << ts << ", \"dur\": " << dur << ", \"args\": " << args << "}";
  return o.str();
}

std::string trace(const std::vector<std::string>& events, std::string_view members = "") {
  std::string t = "{\"schemaVersion\": 1, \"baseTimeNanoseconds\": 1700000000000000000";
  t += members;
  t += ", \"traceEvents\": [\n";
  for (std::size_t i = 0; i < events.size(); ++i) t += (i ? ",\n" : "") + events[i];
  return t + "\n]}\n";
}

// The profile: its rows by (call path, rank), each column by name.
struct profile {
  json::object whole;
  std::map<std::pair<std::string, std::int64_t>, std::map<std::string, double>> rows;
  std::vector<std::string> paths;  // in node order

  double at(const std::string& path, const std::string& column, std::int64_t rank = 0) const {
    const auto row = rows.find({path, rank});
    REQUIRE_MESSAGE(row != rows.end(), path);
    const auto v = row->second.find(column);
    return v == row->second.end() ? -1 : v->second;
  }
};

profile read_profile(const std::filesystem::path& p) {
  std::ifstream in(p);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  profile out{json::parse(text).as_object(), {}, {}};
  const json::array& nodes = out.whole.at("nodes").as_array();
  for (const json::value& n : nodes) {
    const json::object& o = n.as_object();
    CHECK(o.at("column").as_string() == "path");
    const std::string label(o.at("label").as_string());
    out.paths.push_back(o.contains("parent") ? out.paths.at(static_cast<std::size_t>(o.at("parent").as_int64())) + "/" + label : label);
  }
  const json::array& columns = out.whole.at("columns").as_array();
  const bool by_rank = columns.size() > 2 && columns[2] == "mpi.rank";  // only for several ranks
  for (const json::value& r : out.whole.at("data").as_array()) {
    const json::array& row = r.as_array();
    const auto node = static_cast<std::size_t>(row.at(1).as_int64());
    auto& cells = out.rows[{out.paths.at(node), by_rank ? row.at(2).as_int64() : 0}];
    for (std::size_t c = by_rank ? 3 : 2; c < row.size(); ++c)
      cells[std::string(columns.at(c).as_string())] = row.at(c).to_number<double>();
  }
  return out;
}

// `text` written as a trace in `dir` and converted.
profile convert(const test_support::temp_dir& dir, const std::string& text) {
  std::ofstream(dir.path / "t.json") << text;
  d::kineto_to_caliper(dir.path / "t.json", dir.path / "t.cali.json");
  return read_profile(dir.path / "t.cali.json");
}

constexpr double us = 1e-6;

}  // namespace

TEST_CASE("calls become a call tree: calls, inclusive and exclusive seconds per path, threads summed") {
  const test_support::temp_dir dir("caliper");
  const profile p = convert(dir, trace({
      x("main", 1, 1, 0, 100), x("solve", 1, 1, 10, 40), x("inner", 1, 1, 20, 10), x("solve", 1, 1, 60, 30),
      x("main", 1, 2, 0, 40), x("solve", 1, 2, 5, 10),
  }));
  CHECK(p.paths == std::vector<std::string>{"main", "main/solve", "main/solve/inner"});
  CHECK(p.whole.at("columns").as_array().at(0).as_string() == "Node order");
  CHECK(p.at("main", "count") == 2);
  CHECK(p.at("main", "inclusive#sum#time.duration") == doctest::Approx(140 * us));
  CHECK(p.at("main", "sum#time.duration") == doctest::Approx(60 * us));
  CHECK(p.at("main/solve", "count") == 3);
  CHECK(p.at("main/solve", "inclusive#sum#time.duration") == doctest::Approx(80 * us));
  CHECK(p.at("main/solve", "sum#time.duration") == doctest::Approx(70 * us));
  CHECK(p.at("main/solve/inner", "inclusive#sum#time.duration") == doctest::Approx(10 * us));
  CHECK(p.whole.at("columns").as_array().size() == 5);  // one rank: no mpi.rank column (Thicket groups such runs)
}

TEST_CASE("a call that outlives its caller is cut at the caller's end; one ending as the next begins is its sibling") {
  const test_support::temp_dir dir("caliper");
  const profile p = convert(dir, trace({x("a", 1, 1, 0, 10), x("b", 1, 1, 5, 15), x("c", 1, 1, 10, 5),
                                        x("z", 1, 1, 20, 0), x("y", 1, 1, 20, 4)}));
  CHECK(p.paths == std::vector<std::string>{"a", "a/b", "c", "y", "y/z"});
  CHECK(p.at("a/b", "inclusive#sum#time.duration") == doctest::Approx(5 * us));
  CHECK(p.at("a", "sum#time.duration") == doctest::Approx(5 * us));
  CHECK(p.at("y/z", "count") == 1);  // zero length, at its caller's start: inside it
}

TEST_CASE("a merged trace's ranks are one row per node and rank, rank by rank in node order; metadata from the trace") {
  const test_support::temp_dir dir("caliper");
  const std::string names = R"j({"ph": "M", "name": "process_name", "pid": 1000, "tid": 0, "args": {"name": "rank 1 (node2)"}},
{"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "rank 0 (node1) steps 2-4"}})j";
  const profile p = convert(dir, trace({names, x("main", 0, 1, 0, 10), x("only0", 0, 1, 1, 2), x("main", 1000, 7, 0, 30)},
                                       R"(, "proftraceMerged": {"ranks": 2, "traces": 2})"));
  CHECK(p.at("main", "inclusive#sum#time.duration", 0) == doctest::Approx(10 * us));
  CHECK(p.at("main", "inclusive#sum#time.duration", 1) == doctest::Approx(30 * us));
  CHECK(p.at("main/only0", "count", 1) == 0);  // a row of zeros for a node the rank never entered
  // mpi.rank a value column (Hatchet reads a non-value one as a node index).
  CHECK(p.whole.at("columns").as_array().at(2) == "mpi.rank");
  CHECK(p.whole.at("column_metadata").as_array().at(2).as_object().at("is_value").as_bool());
  const json::array& data = p.whole.at("data").as_array();
  REQUIRE(data.size() == 4);
  for (std::size_t i = 0; i < data.size(); ++i) {
    CHECK(data[i].as_array()[0].as_int64() == static_cast<std::int64_t>(i % 2));  // Node order
    CHECK(data[i].as_array()[2].as_int64() == static_cast<std::int64_t>(i / 2));  // mpi.rank
  }
  CHECK(p.whole.at("mpi.world.size").as_int64() == 2);
  CHECK(p.whole.at("hostname").as_string() == "node1,node2");
  CHECK(p.whole.at("cluster").as_string() == "node");
  CHECK(p.whole.at("launchdate").as_int64() == 1700000000);
}

TEST_CASE("a trace of one rank: its rank, the user's metadata as it is, the run's own keys") {
  const test_support::temp_dir dir("caliper");
  const profile p = convert(dir, trace({x("ProfilerStep#3", 1, 1, 0, 10), x("ProfilerStep#4", 1, 1, 10, 10)},
                                       R"(, "distributedInfo": {"rank": 3, "world_size": 4, "host": "quartz12"},
  "version": "v2", "size": 64, "tags": {"a": 1},
  "proftraceRun": {"user": "ada", "hostname": "h", "executable": "app", "cmdline": "app -n 4"})"));
  CHECK(p.paths == std::vector<std::string>{"ProfilerStep*"});  // every step one node, as in the table
  CHECK(p.at("ProfilerStep*", "count") == 2);
  CHECK(p.whole.at("mpi.rank").as_int64() == 3);  // one rank: metadata, not a column
  CHECK(p.whole.at("version").as_string() == "v2");
  CHECK(p.whole.at("size").as_int64() == 64);
  CHECK(p.whole.at("tags").as_string() == R"({"a":1})");
  CHECK(p.whole.at("user").as_string() == "ada");
  CHECK(p.whole.at("cmdline").as_string() == "app -n 4");
  CHECK(p.whole.at("hostname").as_string() == "quartz12");
  CHECK(p.whole.at("cluster").as_string() == "quartz");
  CHECK(p.whole.at("mpi.world.size").as_int64() == 4);
  CHECK(p.whole.contains("proftrace.version"));
  CHECK_FALSE(p.whole.contains("distributedInfo"));
  CHECK_FALSE(p.whole.contains("schemaVersion"));
}

TEST_CASE("FLOPs, bytes, counters and memory are further columns; ids are not") {
  const test_support::temp_dir dir("caliper");
  const std::string memory =
      R"({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 5, )"
      R"("args": {"Device Type": 0, "Device Id": -1, "Addr": 1234, "Bytes": 4096, "Total Allocated": 4096}})";
  const profile p = convert(dir, trace({x("mm", 1, 1, 0, 10, R"({"External id": 7, "flops": 1000, "cycles": 50})"),
                                        x("mm", 1, 1, 20, 10, R"({"External id": 8, "flops": 500, "truncated": true})"),
                                        x("send", 1, 1, 40, 1, R"({"bytes": 64, "peer": 1})"), memory}));
  CHECK(p.at("mm", "sum#flops") == 1500);
  CHECK(p.at("mm", "sum#cycles") == 50);
  CHECK(p.at("send", "sum#bytes") == 64);
  CHECK(p.at("mm", "sum#memory.cpu_bytes") == 4096);
  CHECK(p.at("send", "sum#flops") == 0);
  for (const char* id : {"sum#External id", "sum#peer", "sum#truncated", "sum#Addr"}) CHECK(p.at("mm", id) == -1);
}

TEST_CASE("the format table: .cali.json is the Caliper row, written only, converted from Kineto JSON") {
  CHECK(d::trace_name_of("run.cali.json").format->format == proftrace::trace_format::caliper);
  CHECK(d::trace_name_of("run.json").format->format == proftrace::trace_format::json);
  CHECK(d::row_of(proftrace::trace_format::caliper).export_only);
  CHECK(d::stream_format_for(proftrace::trace_format::caliper) == proftrace::trace_format::json);
  const test_support::temp_dir dir("caliper");
  std::ofstream(dir.path / "in.json") << trace({x("main", 1, 1, 0, 10)});
  d::convert_trace(d::row_of(proftrace::trace_format::json), d::row_of(proftrace::trace_format::caliper), dir.path / "in.json",
                   dir.path / "out.cali.json");
  CHECK(read_profile(dir.path / "out.cali.json").paths == std::vector<std::string>{"main"});
}

TEST_CASE("a session's handler and exports write the profile by suffix; the handler never gzips it") {
  const test_support::temp_dir dir("caliper");
  proftrace::profile p({.on_trace_ready = proftrace::tensorboard_trace_handler(dir.path / "log", "w", true,
                                                                               proftrace::trace_format::caliper),
                        .stream_format = proftrace::trace_format::pftrace});
  p.start();
  {
    PROF_SCOPE("outer");
    PROF_SCOPE("inner");
  }
  p.stop();
  std::vector<std::filesystem::path> written;
  for (const auto& f : std::filesystem::directory_iterator(dir.path / "log")) written.push_back(f.path());
  REQUIRE(written.size() == 1);
  CHECK(written[0].filename().string().ends_with(".pt.trace.cali.json"));
  CHECK(read_profile(written[0]).paths == std::vector<std::string>{"outer", "outer/inner"});
  p.export_profile(dir.path / "again.cali.json");  // from the .pftrace stream, through JSON
  CHECK(read_profile(dir.path / "again.cali.json").paths == std::vector<std::string>{"outer", "outer/inner"});
}

TEST_CASE("errors name the file: an output that cannot be written, an input that is not a trace") {
  const test_support::temp_dir dir("caliper");
  std::ofstream(dir.path / "in.json") << trace({x("main", 1, 1, 0, 10)});
  const std::string unwritable = "cannot write trace '" + (dir.path / "no" / "such" / "out.cali.json").string();
  CHECK_THROWS_WITH_AS(d::kineto_to_caliper(dir.path / "in.json", dir.path / "no" / "such" / "out.cali.json"),
                       doctest::Contains(unwritable.c_str()), std::runtime_error);
  std::ofstream(dir.path / "bad.json") << "[1, 2]";
  const std::string bad = (dir.path / "bad.json").string() + ": ";
  CHECK_THROWS_WITH_AS(d::kineto_to_caliper(dir.path / "bad.json", dir.path / "out.cali.json"),
                       doctest::Contains(bad.c_str()), std::runtime_error);
  CHECK_FALSE(std::filesystem::exists(dir.path / "out.cali.json"));
}

TEST_CASE("more events than the sort holds in memory: spilled, merged, counted once each") {
  const test_support::temp_dir dir("caliper");
  std::ofstream out(dir.path / "big.json");
  out << "{\"traceEvents\": [\n";
  constexpr int n = 300'000;  // past the sort's 2^18 keys in memory
  for (int i = 0; i < n; ++i) out << (i ? ",\n" : "") << x(i % 3 ? "leaf" : "top", 1, 1 + i % 2, i * 10.0, i % 3 ? 1 : 5);
  out << "\n]}\n";
  out.close();
  const auto r = d::kineto_to_caliper(dir.path / "big.json", dir.path / "big.cali.json");
  CHECK(r.calls == n);
  const profile p = read_profile(dir.path / "big.cali.json");
  CHECK(p.at("top", "count") + p.at("leaf", "count") == n);
}
