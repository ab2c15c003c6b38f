// The `proftrace` command line: what every command shares: help, progress, order independence, .pftrace input, incomplete traces.
// (Part of the CLI suites; helpers in cli_test_support.hpp.)
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <algorithm>
#include <map>
#include <random>

#include "test_support.hpp"
#include "cli_test_support.hpp"

using namespace cli_test_support;

TEST_CASE("a progress line on stderr only when stderr is a terminal and the file is large") {
  temp_dir dir("cli-progress");
  const auto big = dir.path / "big.pt.trace.json";
  {
    std::ofstream out(big, std::ios::binary);
    out << "{\"traceEvents\": [\n";
    const std::string event =
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": 1.000, \"dur\": 1.000, "
        "\"args\": {\"External id\": 1, \"padding\": \"................................................\"}}";
    const std::size_t n = (std::size_t{66} << 20) / event.size() + 1;  // just over 64 MiB
    for (std::size_t i = 0; i < n; ++i) out << (i ? ",\n" : "") << event;
    out << "\n]}\n";
  }
  REQUIRE(std::filesystem::file_size(big) > (std::uintmax_t{64} << 20));
  // Not a terminal: no progress line.
  auto r = run_cli({"summary", big.string()});
  REQUIRE(r.rc == 0);
  CHECK(r.err.find("proftrace: reading") == std::string::npos);
  // A terminal (script(1) gives the command a pseudo-terminal).
  const std::string cmd = "script -qec " + quote(quote(PROFTRACE_CLI) + " summary " + quote(big.string()) + " >/dev/null") +
                          " /dev/null > " + quote((dir.path / "tty.txt").string()) + " 2>&1";
  if (std::system("command -v script >/dev/null 2>&1") != 0) {
    MESSAGE("script(1) is not installed: the terminal case is not checked");
    return;
  }
  REQUIRE(std::system(cmd.c_str()) == 0);
  const std::string tty = slurp(dir.path / "tty.txt");
  CHECK(tty.find("proftrace: reading") != std::string::npos);
  CHECK(tty.find("100%") != std::string::npos);
}

TEST_CASE("--help on csv and stacks") {
  for (const char* command : {"csv", "stacks"}) {
    const auto r = run_cli({command, "--help"});
    CHECK(r.rc == 0);
    CHECK(r.out.starts_with(std::string("usage: proftrace ") + command + " TRACE"));
    CHECK(r.out.find("exit codes:") != std::string::npos);
  }
  const auto r = run_cli({"--help"});
  CHECK(r.out.find("  csv TRACE") != std::string::npos);
  CHECK(r.out.find("  stacks TRACE") != std::string::npos);
}

TEST_CASE("every command's numbers are independent of the order of events in the file") {
  temp_dir dir("cli-shuffle");
  const auto sorted_path = (dir.path / "sorted.json").string();
  write_file(sorted_path, torch_stack_trace(torch_stack_events));
  const auto baseline = run_cli({"csv", "--numbers", sorted_path});
  REQUIRE(baseline.rc == 0);
  const auto stacks = run_cli({"stacks", sorted_path});
  REQUIRE(stacks.rc == 0);
  // Reversed (end order, as proftrace writes, but also the memory and the
  // threads reversed) and shuffled.
  std::vector<std::vector<std::string>> orders;
  orders.emplace_back(torch_stack_events.rbegin(), torch_stack_events.rend());
  for (unsigned seed = 1; seed <= 5; ++seed) {
    auto v = torch_stack_events;
    std::mt19937 rng(seed);
    std::shuffle(v.begin(), v.end(), rng);
    orders.push_back(v);
  }
  for (std::size_t i = 0; i < orders.size(); ++i) {
    CAPTURE(i);
    const auto path = (dir.path / ("shuffled" + std::to_string(i) + ".json")).string();
    write_file(path, torch_stack_trace(orders[i]));
    const auto r = run_cli({"csv", "--numbers", path});
    REQUIRE(r.rc == 0);
    CHECK(r.out == baseline.out);  // rows too in the same order: each key's first event in time
    CHECK(sorted_lines(run_cli({"stacks", path}).out) == sorted_lines(stacks.out));
    CHECK(run_cli({"summary", path, "--top-level-only", "--sort-by", "cpu_time_total"}).out ==
          run_cli({"summary", sorted_path, "--top-level-only", "--sort-by", "cpu_time_total"}).out);
    CHECK(run_cli({"summary", path, "--sort-by", "none"}).out == run_cli({"summary", sorted_path, "--sort-by", "none"}).out);
  }

  // Beyond the in-memory bound the events are spilled to sorted runs and
  // merged: the same numbers.
  const auto shuffled = (dir.path / "shuffled1.json").string();
  std::vector<std::string> warnings;
  const auto reference = pt::summarize(sorted_path, false, warnings);
  CHECK(warnings.empty());
  for (std::size_t bound : {1, 2, 3, 5}) {
    CAPTURE(bound);
    pt::aggregator agg(false, std::size_t{1} << 18, bound);
    pt::read_options opts;
    opts.on_event = [&](const pt::trace_event& e) { return agg.add(e).empty(); };
    pt::read_trace(shuffled, opts);
    const auto got = agg.finish();
    CHECK(agg.spilled_runs() > 0);
    CHECK(agg.threads_out_of_order() > 0);
    std::map<std::string, proftrace::event_average> want, have;
    for (const auto& row : reference.rows) want[row.key] = row;
    for (const auto& row : got.rows) have[row.key] = row;
    REQUIRE(have.size() == want.size());
    for (const auto& [name, w] : want) {
      const std::string& key = name;  // as above: a structured binding cannot be captured by clang 14
      CAPTURE(key);
      const auto& h = have.at(key);
      CHECK(h.count == w.count);
      CHECK(h.self_cpu_time_total_ns == w.self_cpu_time_total_ns);
      CHECK(h.cpu_time_total_ns == w.cpu_time_total_ns);
      CHECK(h.cpu_memory_usage == w.cpu_memory_usage);
      CHECK(h.self_cpu_memory_usage == w.self_cpu_memory_usage);
      CHECK(h.top_level == w.top_level);
    }
  }
}

TEST_CASE("summary, csv and diff read .pftrace files as their JSON; summary DIR finds them") {
  temp_dir dir("pftrace-summary");
  const auto json = std::filesystem::path(data_dir) / "pytorch_style.pt.trace.json";
  const auto pf = dir.path / "rank0.pftrace.gz";
  REQUIRE(run_cli({"convert", json.string(), pf.string()}).rc == 0);
  const auto from_json = run_cli({"summary", json.string()}), from_pf = run_cli({"summary", pf.string()});
  REQUIRE(from_json.rc == 0);
  REQUIRE(from_pf.rc == 0);
  CHECK(from_pf.out == from_json.out);
  CHECK(run_cli({"csv", pf.string()}).out == run_cli({"csv", json.string()}).out);
  const auto d = run_cli({"diff", json.string(), pf.string(), "--threshold", "0"});
  CHECK(d.rc == 0);
  const auto by_dir = run_cli({"summary", dir.path.string()});
  CHECK(by_dir.rc == 0);
  CHECK(by_dir.out.find("rank0.pftrace.gz") != std::string::npos);
  CHECK(by_dir.out.find("ProfilerStep*") != std::string::npos);
}

TEST_CASE("bad Perfetto inputs and outputs: empty, cut compressed, not Perfetto in a directory, merge over an input, repair across formats") {
  temp_dir dir("cli-bad-pftrace");
  proftrace::profile p;
  p.start();
  for (int i = 0; i < 5000; ++i) cli_work(i % 64);  // compressed, several blocks
  p.stop();
  const auto t = dir.path / "t.pftrace";
  p.export_chrome_trace(t);
  p.export_chrome_trace(dir.path / "t.pftrace.zst");
  p.export_chrome_trace(dir.path / "t.pftrace.gz");
  p.export_chrome_trace(dir.path / "t.json");

  write_file(dir.path / "empty.pftrace", "");
  for (const char* cmd : {"validate", "summary", "csv", "stacks"}) {
    CAPTURE(cmd);
    const auto r = run_cli({cmd, (dir.path / "empty.pftrace").string()});
    CHECK(r.rc == 1);
    CHECK((r.out + r.err).find("empty") != std::string::npos);
  }
  CHECK(run_cli({"convert", (dir.path / "empty.pftrace").string(), (dir.path / "e.json").string()}).rc == 1);
  CHECK_FALSE(std::filesystem::exists(dir.path / "e.json"));

  // A compressed stream cut short is an error, as a cut .json.zst is; --repair keeps its whole packets.
  for (const char* name : {"t.pftrace.zst", "t.pftrace.gz"}) {
    CAPTURE(name);
    const std::string whole = slurp(dir.path / name);
    const auto cut = dir.path / (std::string("cut-") + name);
    write_file(cut, std::string_view(whole).substr(0, whole.size() * 3 / 4));
    const auto v = run_cli({"validate", cut.string()});
    CHECK(v.rc == 1);
    CHECK((v.out + v.err).find("stream cut off") != std::string::npos);
    CHECK(run_cli({"summary", cut.string()}).rc == 1);
    const auto repaired = dir.path / (std::string("repaired-") + name);
    const auto r = run_cli({"validate", "--repair", cut.string(), "-o", repaired.string()});
    CHECK(r.rc == 0);
    const auto kept = run_cli({"validate", repaired.string()});
    CHECK(kept.rc == 0);
    CHECK(kept.out.find("valid (0 events)") == std::string::npos);
  }

  // A directory: a .pftrace that is not Perfetto's is skipped and named, as a .json that is not a trace.
  const auto ranks = dir.path / "ranks";
  std::filesystem::create_directories(ranks);
  std::filesystem::copy_file(dir.path / "t.json", ranks / "r0.json");
  write_file(ranks / "random.pftrace", std::string("\xd5\x11\x02garbage", 10));
  write_file(ranks / "empty.pftrace", "");
  const auto s = run_cli({"summary", ranks.string()});
  CHECK(s.rc == 0);
  CHECK(s.err.find("skipped random.pftrace") != std::string::npos);
  CHECK(s.err.find("skipped empty.pftrace") != std::string::npos);

  // merge never writes over one of its inputs.
  const std::string before = slurp(ranks / "r0.json");
  const auto m = run_cli({"merge", (ranks / "r0.json").string(), "-o", (ranks / "r0.json").string()});
  CHECK(m.rc == 1);
  CHECK(m.err.find("would be overwritten") != std::string::npos);
  CHECK(slurp(ranks / "r0.json") == before);
  // ... nor creates a directory for MERGED, as no other command does.
  CHECK(run_cli({"merge", (ranks / "r0.json").string(), "-o", (dir.path / "missing" / "m.json").string()}).rc == 1);
  CHECK_FALSE(std::filesystem::exists(dir.path / "missing"));

  // A repair keeps the input's format: another format's suffix is refused, not written mislabelled.
  const std::string json = slurp(dir.path / "t.json");
  write_file(dir.path / "cut.json", std::string_view(json).substr(0, json.size() / 2));
  const auto x = run_cli({"validate", "--repair", (dir.path / "cut.json").string(), "-o", (dir.path / "x.pftrace").string()});
  CHECK(x.rc == 1);
  CHECK_FALSE(std::filesystem::exists(dir.path / "x.pftrace"));
  const std::string pf = slurp(t);
  // Inside a packet: a cut at a packet boundary leaves a trace no reader can tell from a whole one.
  write_file(dir.path / "cut.pftrace", std::string_view(pf).substr(0, inside_packet_after(pf, pf.size() / 2)));
  CHECK(run_cli({"validate", "--repair", (dir.path / "cut.pftrace").string(), "-o", (dir.path / "y.json").string()}).rc == 1);
  CHECK_FALSE(std::filesystem::exists(dir.path / "y.json"));

  // Converting a cut trace to its own format copies it, with the warning a conversion gives.
  for (const char* name : {"cut.json", "cut.pftrace"}) {
    const std::string input = name;
    CAPTURE(input);
    const auto c = run_cli({"convert", (dir.path / name).string(), (dir.path / (std::string("copy-") + name + ".gz")).string()});
    CAPTURE(c.err);
    CHECK(c.rc == 0);
    CHECK(c.err.find("truncated") != std::string::npos);
  }
}

namespace {

// A session whose trace file meets a 256 KiB file-size limit (as a full
// disk would stop it) partway through a flush: the first 100 cli_work calls
// (700 events) fit, the next 5,000 do not. The limit is lifted again before
// anything else is written.
// Returns the kept spool; the trace is exported to `exported`.
std::filesystem::path record_onto_size_limit(const temp_dir& dir, proftrace::trace_format format,
                                             const std::filesystem::path& exported) {
  test_support::warning_capture warnings;
  proftrace::profile p({.overflow = proftrace::overflow_policy::block, .stream_format = format, .spool_dir = dir.path});
  {
    const test_support::file_size_limit limit(256 * 1024);
    p.start();
    for (int i = 0; i < 100; ++i) cli_work(4);
    p.flush();
    for (int i = 0; i < 5000; ++i) cli_work(4);
    p.flush();
    p.stop();
  }
  CHECK(warnings.contains("the trace file stops here"));
  p.export_chrome_trace(exported);
  return p.trace_path();
}

// The number before `after` in `text` ("kept 1234 events": 1234), or -1.
long long number_before(const std::string& text, const std::string& after) {
  const auto at = text.find(after);
  if (at == std::string::npos) return -1;
  auto begin = at;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(text[begin - 1]))) --begin;
  return begin == at ? -1 : std::stoll(text.substr(begin, at - begin));
}

}  // namespace

TEST_CASE("an incomplete trace (its file met a size limit) says so in every command, and exports what a repair keeps") {
  temp_dir dir("incomplete-trace");
  struct format_case {
    proftrace::trace_format format;
    const char* exported;
    const char* unit;
  };
  for (const format_case& c : {format_case{proftrace::trace_format::json, "t.json", " events the session recorded"},
                               format_case{proftrace::trace_format::pftrace, "t.pftrace", " packets the session recorded"}}) {
    CAPTURE(c.exported);
    const auto exported = dir.path / c.exported;
    const auto spool = record_onto_size_limit(dir, c.format, exported);
    REQUIRE(std::filesystem::exists(spool));

    // validate: well-formed, but not simply "valid": one problem, exit 1, saying how much is missing.
    const auto v = run_cli({"validate", exported.string()});
    CHECK(v.rc == 1);
    CHECK(v.out.find(": valid") == std::string::npos);
    CHECK(v.out.find("incomplete trace: ") != std::string::npos);
    CHECK(v.out.find("cannot write trace") != std::string::npos);
    const long long missing = number_before(v.out, c.unit);
    CHECK(missing > 0);
    const long long held = number_before(v.out, " events written before the trace file failed");
    CHECK(held > 0);
    // 7 events per cli_work call, and the process's and thread's metadata (5).
    if (c.format == proftrace::trace_format::json) CHECK(held + missing >= 7 * 5100 + 5);

    // summary (and csv, stacks, convert: the same reader) print the table and the note.
    const auto s = run_cli({"summary", exported.string()});
    CHECK(s.rc == 0);
    CHECK(s.out.find("cli_work") != std::string::npos);
    CHECK(s.err.find("incomplete trace: " + std::to_string(missing) + c.unit) != std::string::npos);
    CHECK(run_cli({"csv", exported.string()}).err.find("incomplete trace: ") != std::string::npos);
    const auto converted = dir.path / (std::string("converted-") + (c.format == proftrace::trace_format::json ? "t.pftrace" : "t.json"));
    const auto conv = run_cli({"convert", exported.string(), converted.string()});
    CHECK(conv.rc == 0);
    CHECK(conv.err.find("incomplete trace: ") != std::string::npos);
    CHECK(run_cli({"validate", converted.string()}).out.find("incomplete trace: ") != std::string::npos);

    // The export holds at least every event a repair recovers from the kept spool.
    const auto repaired = dir.path / (std::string("repaired-") + c.exported);
    const auto r = run_cli({"validate", "--repair", spool.string(), "-o", repaired.string()});
    CAPTURE(r.out);
    CAPTURE(r.err);
    REQUIRE(r.rc == 0);
    long long recovered = number_before(r.out, " events (");  // "repaired: kept N events (cut ...)"
    if (recovered < 0) recovered = number_before(r.out, " events)");  // "valid (N events): nothing to repair"
    CHECK(recovered > 0);
    CHECK(held >= recovered);
    std::filesystem::remove(spool);
  }
}
