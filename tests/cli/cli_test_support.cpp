// The definitions of cli_test_support.hpp.
#include "cli_test_support.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filtering_stream.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "protobuf_wire.hpp"

namespace cli_test_support {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::filesystem::path& p, std::string_view text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

cli_result run_cli(const std::vector<std::string>& args) {
  static temp_dir dir("cli-io");
  std::string cmd = quote(PROFTRACE_CLI);
  for (auto& a : args) cmd += " " + quote(a);
  cmd += " >" + quote((dir.path / "out").string()) + " 2>" + quote((dir.path / "err").string());
  const int status = std::system(cmd.c_str());
  cli_result r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.out = slurp(dir.path / "out");
  r.err = slurp(dir.path / "err");
  return r;
}

std::size_t lines(const std::string& s) {
  std::size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

std::map<std::string, proftrace::event_average> by_key(const proftrace::event_averages& a) {
  std::map<std::string, proftrace::event_average> m;
  for (auto& r : a.rows) {
    auto& e = m[r.input_shapes.empty() ? r.key : r.key + " " + r.input_shapes];
    e.key = r.key;
    e.count += r.count;
    e.cpu_time_total_ns += r.cpu_time_total_ns;
    e.self_cpu_time_total_ns += r.self_cpu_time_total_ns;
  }
  return m;
}

proftrace::event_averages summarize(const std::filesystem::path& p, bool by_shape) {
  std::vector<std::string> warnings;
  auto a = pt::summarize(p, by_shape, warnings);
  CHECK(warnings.empty());
  return a;
}

std::vector<pt::problem> problems_of(const std::filesystem::path& p) {
  std::vector<pt::problem> out;
  pt::validate(p, [&](const pt::problem& x) { out.push_back(x); });
  return out;
}

bool has_problem(const std::vector<pt::problem>& ps, std::int64_t index, std::string_view text) {
  for (auto& p : ps)
    if (p.index == index && p.message.find(text) != std::string::npos) return true;
  return false;
}

void spin(std::chrono::microseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

void cli_leaf() {
  PROF_OP("cli_leaf");
  spin(std::chrono::microseconds(5));
}

// An offset inside the body of the first packet of a .pftrace's bytes that
// starts at or after `offset`: a cut there is inside a packet (an offset
// picked blindly can fall between two packets, and then nothing is cut).
std::size_t inside_packet_after(std::string_view pftrace, std::size_t offset) {
  for (const auto& packet : test_wire::decode(pftrace)) {
    const auto body = static_cast<std::size_t>(packet.bytes.data() - pftrace.data());
    if (body >= offset && packet.bytes.size() >= 2) return body + packet.bytes.size() / 2;
  }
  FAIL("no packet after offset " << offset);
  return 0;
}

void cli_work(int rows) {
  PROF_SCOPE("cli_work");
  for (int i = 0; i < 3; ++i) cli_leaf();
  {
    PROF_SCOPE_SHAPES("cli_gemm", {rows, 8}, {8, 2});
    cli_leaf();
  }
  PROF_INSTANT("cli_marker");
}

numeric_table parse_numeric_csv(const std::string& text) {
  numeric_table t;
  std::istringstream in(text);
  std::string line;
  const auto split = [](const std::string& l) {
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (std::size_t i = 0; i < l.size(); ++i) {
      const char c = l[i];
      if (quoted && c == '"' && i + 1 < l.size() && l[i + 1] == '"') cell += '"', ++i;
      else if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) cells.push_back(cell), cell.clear();
      else cell += c;
    }
    cells.push_back(cell);
    return cells;
  };
  std::getline(in, line);
  t.columns = split(line);
  while (std::getline(in, line)) {
    auto cells = split(line);
    CHECK(cells.size() == t.columns.size());
    t.rows[cells[0]] = cells;
  }
  return t;
}

// Complete elements of traceEvents in `text`, counted by the reader's
// Boost.JSON parser (not by the repair's own scanner).
std::uint64_t complete_events_in(const std::string& text, const std::filesystem::path& scratch) {
  write_file(scratch, text);
  std::uint64_t n = 0;
  pt::read_options opts;
  opts.on_event = [&](const pt::trace_event&) { return ++n, true; };
  try {
    (void)pt::read_trace(scratch, opts);
  } catch (const pt::trace_error&) {
  }
  return n;
}

// One line per event: enough to tell events apart and see their order.
std::vector<std::string> event_lines(const std::filesystem::path& p) {
  std::vector<std::string> out;
  pt::read_options opts;
  opts.on_event = [&](const pt::trace_event& e) {
    out.push_back(e.ph + "|" + e.name + "|" + e.pid + "|" + e.tid + "|" + std::to_string(e.ts) + "|" + std::to_string(e.dur));
    return true;
  };
  (void)pt::read_trace(p, opts);
  return out;
}

// A real trace of a few thousand events (over 128 KiB of text, so that its
// zstd export has several blocks), exported as .json, .json.gz and .json.zst.
void record_repair_trace(const std::filesystem::path& dir) {
  proftrace::profile p({.overflow = proftrace::overflow_policy::block});
  p.start();
  for (int i = 0; i < 400; ++i) cli_work(4 + i % 3);
  p.stop();
  for (const char* name : {"full.json", "full.json.gz", "full.json.zst"}) p.export_chrome_trace(dir / name);
}

// Repairs `input` in process and checks the result against the original's
// events: exactly the complete ones before the cut, each unchanged.
void check_repair(const std::filesystem::path& input, const std::string& decoded_text,
                  const std::vector<std::string>& original_events, const std::filesystem::path& scratch) {
  const auto plan = pt::plan_repair(input);
  REQUIRE(plan.bytes <= decoded_text.size());
  const auto expected = complete_events_in(decoded_text.substr(0, plan.bytes), scratch);
  CHECK(plan.events_kept == expected);
  const auto out = input.parent_path() / ("out" + pt::default_repair_output(input).filename().string());
  pt::write_repaired(input, plan, out);
  const auto problems = problems_of(out);
  CHECK(problems.empty());
  for (auto& x : problems) MESSAGE(x.index << ": " << x.message);
  const auto kept = event_lines(out);
  REQUIRE(kept.size() == expected);
  CHECK(std::equal(kept.begin(), kept.end(), original_events.begin()));
}

// Runs the CLI in a child of its own, under an address-space limit (none in
// sanitizer builds, whose shadow memory needs terabytes of it), and reports
// the CLI's own peak resident memory (through rss_probe: a child forked
// from this test would count the test's pages too).
child_result run_cli_limited(const std::vector<std::string>& args, rlim_t address_space) {
  static temp_dir dir("cli-limited");
  const auto err_path = dir.path / "err";
  const auto probe_path = dir.path / "probe";
  std::filesystem::remove(probe_path);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (!PROFTRACE_TEST_SANITIZED) {
      const rlimit limit{address_space, address_space};
      ::setrlimit(RLIMIT_AS, &limit);
    }
    std::FILE* err = std::freopen(err_path.c_str(), "w", stderr);
    std::FILE* out = std::freopen("/dev/null", "w", stdout);
    (void)err;
    (void)out;
    std::vector<char*> argv{const_cast<char*>(PROFTRACE_RSS_PROBE), const_cast<char*>(probe_path.c_str()),
                            const_cast<char*>(PROFTRACE_CLI)};
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(PROFTRACE_RSS_PROBE, argv.data());
    ::_exit(127);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);  // the probe ran the CLI and wrote what it saw
  child_result r;
  int cli_status = 0;
  REQUIRE(std::sscanf(slurp(probe_path).c_str(), "%ld %d", &r.max_rss_kb, &cli_status) == 2);
  r.rc = WIFEXITED(cli_status) ? WEXITSTATUS(cli_status) : 128 + (WIFSIGNALED(cli_status) ? WTERMSIG(cli_status) : 0);
  r.err = slurp(err_path);
  return r;
}

// A trace whose one event carries a `bytes`-long string arg: a gzip bomb
// (the file is a few hundred KB).
void write_big_event_trace(const std::filesystem::path& p, std::size_t bytes) {
  namespace io = boost::iostreams;
  std::ofstream file(p, std::ios::binary | std::ios::trunc);
  io::filtering_ostream out;
  out.push(io::gzip_compressor(io::gzip_params(io::zlib::best_speed)));
  out.push(file);
  out << "{\"traceEvents\": [\n{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"small\", \"pid\": 1, \"tid\": 1, \"ts\": 1, "
         "\"dur\": 1},\n{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"big\", \"pid\": 1, \"tid\": 1, \"ts\": 2, \"dur\": 1, "
         "\"args\": {\"s\": \"";
  const std::string chunk(1 << 20, 'x');
  for (std::size_t left = bytes; left > 0;) {
    const std::size_t n = std::min(left, chunk.size());
    out.write(chunk.data(), static_cast<std::streamsize>(n));
    left -= n;
  }
  out << "\"}}\n]}\n";
}

// A torch-shaped trace recorded with with_stack, profile_memory and
// with_flops (torch 2.15 writes the "with_flops" header but no per-event
// FLOPs), in start order as torch writes it. Times in us:
//   thread 1: ## forward ## [0,100]
//               python nn.Module: Linear_0 [10,70]
//                 aten::linear [20,50] > aten::addmm [25,45]
//               aten::relu [80,90]
//             python train.py(5): main [200,250] > aten::add [210,220]
//   thread 2: aten::copy_ [30,70]
// [memory] (host): +1000 at 26 (thread 1), +200 at 35 (thread 2), -300 at
// 85, +50 at 215, +7 at 300 (outside every event).
// torch's numbers: the Python frames nest (so `## forward ##` has self time
// 100 - 60 - 10 = 30 us) but get no rows; memory counts for every event of
// any thread whose interval holds its time, self memory is that less the
// direct children's (Python frames included).
const std::vector<std::string> torch_stack_events = {
    R"({"ph":"X","cat":"user_annotation","name":"## forward ##","pid":1,"tid":1,"ts":0,"dur":100})",
    R"({"ph":"X","cat":"python_function","name":"nn.Module: Linear_0","pid":1,"tid":1,"ts":10,"dur":60})",
    R"({"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":20,"dur":30,"args":{"Input Dims":[[4, 8], [2, 8]]}})",
    R"({"ph":"X","cat":"cpu_op","name":"aten::addmm","pid":1,"tid":1,"ts":25,"dur":20})",
    R"({"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":26,"args":{"Device Type":0,"Bytes":1000}})",
    R"({"ph":"X","cat":"cpu_op","name":"aten::copy_","pid":1,"tid":2,"ts":30,"dur":40})",
    R"({"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":2,"ts":35,"args":{"Device Type":0,"Bytes":200}})",
    R"({"ph":"X","cat":"cpu_op","name":"aten::relu","pid":1,"tid":1,"ts":80,"dur":10})",
    R"({"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":85,"args":{"Device Type":0,"Bytes":-300}})",
    R"({"ph":"X","cat":"python_function","name":"train.py(5): main","pid":1,"tid":1,"ts":200,"dur":50})",
    R"({"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":210,"dur":10})",
    R"({"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":215,"args":{"Device Type":0,"Bytes":50}})",
    R"({"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":300,"args":{"Device Type":0,"Bytes":7}})",
};

std::string torch_stack_trace(const std::vector<std::string>& events) {
  std::string text = R"({"schemaVersion": 1, "with_stack": 1, "profile_memory": 1, "with_flops": 1, "traceEvents": [)";
  for (std::size_t i = 0; i < events.size(); ++i) text += (i ? ",\n" : "\n") + events[i];
  return text + "\n]}";
}

std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace cli_test_support
