// Reports from a session: torch's table line by line, sort keys, row limits,
// top-level filtering, stack grouping, CSV, total_average, events() and
// export_stacks.
#include <doctest/doctest.h>

#include <proftrace/proftrace.h>
#include <proftrace/proftrace.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <sstream>

#include "test_support.hpp"

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

proftrace::event_averages hand_built() {
  proftrace::event_averages a;
  const auto row = [&](std::string key, std::int64_t count, std::int64_t total_ns, std::int64_t self_ns, bool top) {
    proftrace::event_average r;
    r.key = std::move(key);
    r.count = count;
    r.cpu_time_total_ns = total_ns;
    r.self_cpu_time_total_ns = self_ns;
    r.top_level = top;
    a.rows.push_back(r);
  };
  row("matmul", 4, 2'000'000, 1'500'000, false);
  row("ProfilerStep*", 2, 3'000'000, 500'000, true);
  row("a_very_long_scope_name_that_goes_past_the_name_column_width_x", 1, 1'234, 1'234, false);
  return a;
}

}  // namespace

TEST_CASE("table: torch's layout, units, percentages and truncation, line by line") {
  // Expected lines computed with torch's _build_table formatting rules:
  // every column right-aligned ("{: >55}"), Name included.
  const std::vector<std::string> expected = {
      "-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  ",
      "                                                   Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  ",
      "-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  ",
      "                                                 matmul        74.95%       1.500ms        99.94%       2.000ms     500.000us             4  ",
      "                                          ProfilerStep*        24.98%     500.000us       149.91%       3.000ms       1.500ms             2  ",
      "a_very_long_scope_name_that_goes_past_the_name_colum...         0.06%       1.234us         0.06%       1.234us       1.234us             1  ",
      "-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  ",
      "Self CPU time total: 2.001ms",
  };
  const auto got = lines_of(hand_built().table({.sort_by = "self_cpu_time_total"}));
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) CHECK(got[i] == expected[i]);
}

TEST_CASE("table: names are counted and cut in characters, as torch's len() counts them, never inside one") {
  // 51 ASCII bytes, then two-byte and three-byte characters: torch cuts the
  // name after 52 characters at the default width of 55; a byte count would
  // cut inside the "é" and misalign the columns of every non-ASCII row.
  proftrace::event_averages a;
  const auto row = [&](std::string key) {
    proftrace::event_average r;
    r.key = std::move(key);
    r.count = 1;
    r.cpu_time_total_ns = r.self_cpu_time_total_ns = 1'000;
    a.rows.push_back(r);
  };
  const std::string ascii51(51, 'a');
  row(ascii51 + "\u00e9\u00e9\u00e9 \u65e5\u672c\u8a9e");     // 58 characters
  row("r\u00e9sidu");                                   // 6 characters, 7 bytes
  row("\u8a08\u7b97");                                      // 2 characters, 6 bytes
  const auto got = lines_of(a.table());
  REQUIRE(got.size() == 8);
  const auto has_line_starting = [&](const std::string& start) {
    return std::any_of(got.begin(), got.end(), [&](const std::string& l) { return l.rfind(start, 0) == 0; });
  };
  CHECK(has_line_starting(ascii51 + "\u00e9...  "));
  CHECK(has_line_starting(std::string(55 - 6, ' ') + "r\u00e9sidu  "));
  CHECK(has_line_starting(std::string(55 - 2, ' ') + "\u8a08\u7b97  "));
  // Every row's columns line up with the separator's, counted in characters.
  const auto characters = [](const std::string& line) {
    return std::count_if(line.begin(), line.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
  };
  for (std::size_t i = 1; i < 7; ++i) CHECK(characters(got[i]) == characters(got[0]));
}

TEST_CASE("table: sort keys, row limit, header, top-level rows") {
  const auto a = hand_built();
  // The name column is right-aligned in 55 characters.
  const auto named = [](const std::string& row, const std::string& name) {
    return row.starts_with(std::string(55 - name.size(), ' ') + name + "  ");
  };
  auto rows = lines_of(a.table({.sort_by = "count", .row_limit = 2}));
  REQUIRE(rows.size() == 7);
  CHECK(named(rows[3], "matmul"));
  CHECK(named(rows[4], "ProfilerStep*"));
  rows = lines_of(a.table({.sort_by = "cpu_time_total", .row_limit = 1, .header = "TITLE"}));
  // torch's line_length: the columns and the spaces between them, without
  // the two spaces after the last column.
  CHECK(rows[0] == std::string(rows[2].size() - 2, '='));
  CHECK(rows[1] == "TITLE");
  CHECK(named(rows[5], "ProfilerStep*"));
  rows = lines_of(a.table({.sort_by = "cpu_time"}));  // average: 1.5ms, 500us, 1.234us
  CHECK(named(rows[3], "ProfilerStep*"));
  // torch heads a top-level-only table with a line of '=' and its note.
  rows = lines_of(a.table({.top_level_events_only = true}));
  REQUIRE(rows.size() == 8);
  CHECK(rows[0] == std::string(rows[2].size() - 2, '='));
  CHECK(rows[1] == "This report only display top-level ops statistics");
  CHECK(named(rows[5], "ProfilerStep*"));
  CHECK_THROWS_WITH_AS(a.table({.sort_by = "cuda_time_totl"}),
                       doctest::Contains("valid keys: cpu_time, cuda_time, cpu_time_total, cuda_time_total, "
                                         "self_cpu_time_total, self_cuda_time_total, cpu_memory_usage, cuda_memory_usage, "
                                         "self_cpu_memory_usage, self_cuda_memory_usage, count, flops"),
                       std::invalid_argument);
  const auto total = a.total_average();
  CHECK(total.key == "Total");
  CHECK(total.count == 7);
  CHECK(total.self_cpu_time_total_ns == 2'001'234);
  CHECK(a.self_cpu_time_total() == doctest::Approx(2001.234));
}

TEST_CASE("csv: a header and one line per key") {
  const auto lines = lines_of(hand_built().csv());
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == "NAME,SELF CPU %,SELF CPU,CPU TOTAL %,CPU TOTAL,CPU TIME AVG,# OF CALLS");
  CHECK(lines[1] == "\"matmul\",74.95%,1.500ms,99.94%,2.000ms,500.000us,4");
  CHECK(lines[2] == "\"ProfilerStep*\",24.98%,500.000us,149.91%,3.000ms,1.500ms,2");
}

namespace {
// Long enough that every scope has a positive whole number of microseconds.
void spin_us(int us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < until) {
  }
}
void leaf() {
  PROF_SCOPE("leaf");
  spin_us(50);
}
void branch_a() {
  PROF_SCOPE("branch a");
  spin_us(20);
  leaf();
}
void branch_b() {
  PROF_SCOPE("branch;b");
  spin_us(20);
  leaf();
  leaf();
}
}  // namespace

TEST_CASE("a live session: self time, stacks grouping, events() and export_stacks") {
  test_support::temp_dir out("reports");
  proftrace::profile p({.with_stack = true, .retain_events = true});
  p.start();
  {
    PROF_SCOPE("root");
    spin_us(20);
    branch_a();
    branch_b();
  }
  p.stop();

  const auto by_name = p.key_averages();
  std::map<std::string, proftrace::event_average> rows;
  for (auto& r : by_name.rows) rows[r.key] = r;
  REQUIRE(rows.count("leaf"));
  CHECK(rows["leaf"].count == 3);
  CHECK(rows["leaf"].stack.empty());
  CHECK(rows["root"].top_level);
  CHECK_FALSE(rows["leaf"].top_level);
  // Self time is total minus the children's totals.
  const auto& root = rows["root"];
  CHECK(root.self_cpu_time_total_ns ==
        root.cpu_time_total_ns - rows["branch a"].cpu_time_total_ns - rows["branch;b"].cpu_time_total_ns);

  // Grouped by the innermost enclosing frame, "leaf" splits by caller.
  const auto by_stack = p.key_averages(false, 1);
  int leaf_rows = 0;
  for (auto& r : by_stack.rows)
    if (r.key == "leaf") {
      ++leaf_rows;
      REQUIRE(r.stack.size() == 1);
      CHECK((r.stack[0].ends_with("): branch a") || r.stack[0].ends_with("): branch;b")));
    }
  CHECK(leaf_rows == 2);
  CHECK(by_stack.table().find("Source Location") != std::string::npos);

  const auto events = p.events();
  CHECK(events.size() == 6);
  for (auto& e : events)
    if (e.name == "leaf") CHECK(e.depth == 2);

  p.export_stacks(out.path / "stacks.txt");
  const auto stacks = lines_of(test_support::read_text(out.path / "stacks.txt"));
  for (auto& line : stacks) {
    const auto space = line.rfind(' ');
    REQUIRE(space != std::string::npos);
    CHECK(line.substr(0, space).find(' ') == std::string::npos);  // spaces inside frames became '_'
    CHECK(std::stoll(line.substr(space + 1)) > 0);
  }
  // "branch;b" as a frame: its ';' and ' ' became '_', and leaf sits under it.
  // A scope is one frame, by its name, whether it is a caller or the last
  // frame (its own time): as `proftrace stacks` writes the trace.
  std::set<std::string> frames;
  bool leaf_under_b = false;
  for (auto& line : stacks) {
    if (line.starts_with("root;branch_b;leaf ")) leaf_under_b = true;
    std::string path = line.substr(0, line.rfind(' '));
    for (std::size_t at = 0; at <= path.size();) {
      const std::size_t end = std::min(path.find(';', at), path.size());
      frames.insert(path.substr(at, end - at));
      at = end + 1;
    }
  }
  CHECK(leaf_under_b);
  CHECK(frames == std::set<std::string>{"root", "branch_a", "branch_b", "leaf"});
  CHECK_THROWS_AS(p.export_stacks(out.path / "x.txt", "wall_time"), std::invalid_argument);
  CHECK_THROWS_AS(p.export_stacks("/etc/passwd/stacks.txt"), std::runtime_error);

  proftrace::profile plain;
  plain.start();
  leaf();
  plain.stop();
  CHECK_THROWS_WITH_AS(plain.export_stacks(out.path / "y.txt"), doctest::Contains("with_stack"), std::logic_error);
  CHECK_THROWS_WITH_AS(plain.events(), doctest::Contains("retain_events"), std::logic_error);
}

TEST_CASE("a frame whose site has no source line is its name alone, in the table, the trace and export_stacks") {
  test_support::temp_dir out("reports-lineless");
  proftrace::profile p({.with_stack = true});
  p.start();
  {
    PROF_SCOPE("outer");
    proftrace_push("init(): a C push");  // C pushes have no line: the frame is the name, "()" and all
    {
      PROF_SCOPE("leaf");
      spin_us(20);  // a line of export_stacks needs some self time
    }
    proftrace_pop();
  }
  p.stop();
  const auto by_stack = p.key_averages(false, 5);
  const proftrace::event_average* leaf = nullptr;
  for (auto& r : by_stack.rows)
    if (r.key == "leaf") leaf = &r;
  REQUIRE(leaf);
  REQUIRE(leaf->stack.size() == 2);
  CHECK(leaf->stack[0] == "init(): a C push");
  CHECK(leaf->stack[1].find("reports_test.cpp(") != std::string::npos);
  CHECK(leaf->stack[1].ends_with("): outer"));
  CHECK(by_stack.table().find("(0)") == std::string::npos);
  p.export_stacks(out.path / "stacks.txt");
  const auto stacks = lines_of(test_support::read_text(out.path / "stacks.txt"));
  CHECK(std::any_of(stacks.begin(), stacks.end(),
                    [](const std::string& l) { return l.starts_with("outer;init():_a_C_push;leaf "); }));
  p.export_chrome_trace(out.path / "t.json");
  const auto leaves = test_support::events_named(test_support::read_trace(out.path / "t.json"), "leaf");
  REQUIRE(leaves.size() == 1);
  const std::string call_stack(leaves[0].at("args").at("Call stack").as_string());
  CHECK(call_stack.find(";init(): a C push;") != std::string::npos);
}

TEST_CASE("collapsed stacks: outermost first, the op last, separators cleaned, same stacks summed") {
  proftrace::event_averages a;
  proftrace::event_average r;
  r.key = "aten::mm";
  r.stack = {"model.py(12): forward", "train.py(3): step"};  // innermost first
  r.self_cpu_time_total_ns = 2'500'000;
  a.rows.push_back(r);
  r.self_cpu_time_total_ns = 1'000'000;  // same stack again (different shapes, say)
  a.rows.push_back(r);
  r.key = "tiny";
  r.stack = {};
  r.self_cpu_time_total_ns = 999;  // under a microsecond: no line
  a.rows.push_back(r);
  CHECK(a.collapsed_stacks() == "train.py(3):_step;model.py(12):_forward;aten::mm 3500\n");
  CHECK(a.collapsed_stacks("self_cuda_time_total").empty());
  r.key = "launcher";
  r.self_cuda_time_total_ns = 4'000;
  a.rows.push_back(r);
  CHECK(a.collapsed_stacks("self_cuda_time_total") == "launcher 4\n");
  CHECK_THROWS_AS(a.collapsed_stacks("nope"), std::invalid_argument);
  // A worker's step span ("thread step") is a step frame, ProfilerStep*, as a caller and as the last frame.
  proftrace::event_averages steps;
  r.self_cuda_time_total_ns = 0;
  r.self_cpu_time_total_ns = 7'000;
  r.key = "thread step";
  r.stack = {};
  steps.rows.push_back(r);
  r.key = "work";
  r.stack = {"thread step"};
  steps.rows.push_back(r);
  CHECK(steps.collapsed_stacks() == "ProfilerStep* 7\nProfilerStep*;work 7\n");
  // Rows of one stack (one per input shape under record_shapes) are summed
  // before the cut to whole us: 1000 rows of 900 ns are 900 us, not 0.
  proftrace::event_averages shapes;
  r.key = "attention";
  r.stack = {"decode"};
  r.self_cpu_time_total_ns = 900;
  for (int i = 0; i < 1000; ++i) {
    r.input_shapes = "[[1, " + std::to_string(i) + ", 64]]";
    shapes.rows.push_back(r);
  }
  CHECK(shapes.collapsed_stacks() == "decode;attention 900\n");
}

TEST_CASE("table: device, memory and FLOP columns appear when rows carry them") {
  proftrace::event_averages a;
  proftrace::event_average r;
  r.key = "aten::mm";
  r.count = 2;
  r.cpu_time_total_ns = 4'000'000;
  r.self_cpu_time_total_ns = 3'000'000;
  r.cuda_time_total_ns = 1'000'000;
  r.self_cuda_time_total_ns = 1'000'000;
  r.cpu_memory_usage = 3 * 1024 * 1024;
  r.self_cpu_memory_usage = 512;
  r.flops = 4'000'000'000;  // 4 GFLOPs
  a.rows.push_back(r);
  proftrace::event_average s;
  s.key = "aten::add";
  s.count = 1;
  s.cpu_time_total_ns = s.self_cpu_time_total_ns = 1'000'000;
  s.cpu_memory_usage = s.self_cpu_memory_usage = -2048;  // a free
  a.rows.push_back(s);
  const auto lines = lines_of(a.table({.sort_by = "flops"}));
  REQUIRE(lines.size() == 8);
  // Name, 5 CPU columns, 4 CUDA columns, 2 memory columns, calls, FLOPs.
  const std::string header = lines[1];
  const auto at = [&](const char* h) { return header.find(h); };
  CHECK(at("Self CUDA") < at("Self CUDA %"));
  CHECK(at("CUDA time avg") < at("CPU Mem"));
  CHECK(at("Self CPU Mem") < at("# of Calls"));
  CHECK(at("# of Calls") < at("Total GFLOPs"));
  CHECK(header.find("CUDA Mem ") == std::string::npos);  // no device memory in these rows
  // Cells are right-aligned in 12 columns, two spaces apart.
  const auto cells = [](std::initializer_list<const char*> values) {
    std::string out;
    for (const char* v : values) out += std::string(12 - std::string_view(v).size(), ' ') + v + "  ";
    return out;
  };
  CHECK(lines[3].ends_with(cells({"1.000ms", "100.00%", "1.000ms", "500.000us", "3.00 Mb", "512 b", "2", "4.000"})));
  CHECK(lines[4].ends_with(cells({"0.000us", "0.00%", "0.000us", "0.000us", "-2.00 Kb", "-2.00 Kb", "1", "--"})));
  CHECK(lines[7] == "Self CUDA time total: 1.000ms");
  const auto total = a.total_average();
  CHECK(total.flops == 4'000'000'000);
  CHECK(total.cpu_memory_usage == 3 * 1024 * 1024 - 2048);
}

TEST_CASE("table: torch 2.15's exact layout with input shapes and --top-level-only") {
  // Expected text from torch's _build_table: every column but the source
  // location right-aligned ("{: >W}"), Name and Input Shapes included;
  // str([]) for a key without shapes; the widths from every row (also the
  // ones the row limit or top_level_events_only leave out); a top-level
  // table headed by "=" * line_length and torch's note.
  proftrace::event_averages a;
  a.grouped_by_input_shape = true;
  const auto row = [&](std::string key, std::string shapes, std::int64_t count, std::int64_t total_us,
                       std::int64_t self_us, bool top) {
    proftrace::event_average r;
    r.key = std::move(key);
    r.input_shapes = std::move(shapes);
    r.count = count;
    r.cpu_time_total_ns = total_us * 1000;
    r.self_cpu_time_total_ns = self_us * 1000;
    r.top_level = top;
    a.rows.push_back(r);
  };
  row("aten::linear", "[[4, 8], [2, 8]]", 2, 30, 10, true);
  row("aten::add", "", 1, 20, 20, false);
  row("some_long_key_1234", "", 1, 5, 5, false);
  const auto rj = [](const std::string& s, std::size_t w) { return std::string(w > s.size() ? w - s.size() : 0, ' ') + s + "  "; };
  // Name: 18 + 4 = 22; Input Shapes: len("[[4, 8], [2, 8]]") + 4 = 20.
  const auto line = [&](const std::vector<std::string>& c) {
    std::string out = rj(c[0], 22);
    for (std::size_t i = 1; i + 1 < c.size(); ++i) out += rj(c[i], 12);
    return out + rj(c.back(), 20);
  };
  const std::string sep = std::string(22, '-') + "  " + [] {
    std::string s;
    for (int i = 0; i < 6; ++i) s += std::string(12, '-') + "  ";
    return s;
  }() + std::string(20, '-') + "  ";
  const std::string head =
      line({"Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls", "Input Shapes"});
  const std::string linear = line({"aten::linear", "28.57%", "10.000us", "85.71%", "30.000us", "15.000us", "2", "[[4, 8], [2, 8]]"});
  const std::string add = line({"aten::add", "57.14%", "20.000us", "57.14%", "20.000us", "20.000us", "1", "[]"});

  auto got = lines_of(a.table({.sort_by = "self_cpu_time_total", .row_limit = 2, .top_level_events_only = true}));
  std::vector<std::string> expected = {std::string(128, '='),
                                       "This report only display top-level ops statistics",
                                       sep,
                                       head,
                                       sep,
                                       linear,
                                       sep,
                                       "Self CPU time total: 35.000us"};
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) CHECK(got[i] == expected[i]);

  got = lines_of(a.table({.sort_by = "self_cpu_time_total", .row_limit = 2}));
  expected = {sep, head, sep, add, linear, sep, "Self CPU time total: 35.000us"};
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) CHECK(got[i] == expected[i]);
}

// PROF_STEP annotates the steps, so profile::step()'s annotations are not
// written; a second start() re-opens one before the first PROF_STEP says
// so: it must not become a second "ProfilerStep*" frame in any stack.
TEST_CASE("stacks under PROF_STEP and profile::step(): one ProfilerStep* frame, also after a second start()") {
  test_support::temp_dir out("reports_steps");
  proftrace::profile p({.schedule = proftrace::schedule({.wait = 0, .warmup = 1, .active = 2}),
                        .with_stack = true,
                        .acc_events = true});
  std::string traces;  // the first run stops in a warmup: its trace is empty, as torch's
  for (int run = 0; run < 2; ++run) {
    p.start();
    for (int i = 0; i < 4; ++i) {
      PROF_STEP();
      PROF_SCOPE("work");
      {
        PROF_SCOPE("inner");
        spin_us(200);
      }
      p.step();
    }
    p.stop();
    p.export_chrome_trace(out.path / ("run" + std::to_string(run) + ".json"));
    traces += test_support::read_text(out.path / ("run" + std::to_string(run) + ".json"));
  }
  CHECK(traces.find("): work;ProfilerStep*\"") != std::string::npos);
  CHECK(traces.find("ProfilerStep*;ProfilerStep*") == std::string::npos);
  p.export_stacks(out.path / "stacks.txt");
  const auto stacks = lines_of(test_support::read_text(out.path / "stacks.txt"));
  CHECK_FALSE(stacks.empty());
  for (const auto& line : stacks) {
    INFO(line);
    CHECK((line.starts_with("ProfilerStep*;work") || line.starts_with("ProfilerStep* ")));  // the step's own time too
    CHECK(line.find("ProfilerStep*;ProfilerStep*") == std::string::npos);
  }
  for (const auto& r : p.key_averages(false, 5).rows) {
    INFO(r.key);
    CHECK(std::count(r.stack.begin(), r.stack.end(), "ProfilerStep*") <= 1);
  }
}

// torch lists keys by their first event's start; ties in a sort keep that
// order, as `proftrace summary` does with the same trace.
TEST_CASE("rows in the order of each key's first start, whichever closes first") {
  test_support::temp_dir out("reports_order");
  proftrace::profile p;
  p.start();
  for (int i = 0; i < 3; ++i) {
    PROF_SCOPE("parent");
    { PROF_SCOPE("child"); }
  }
  p.stop();
  const auto averages = p.key_averages();
  REQUIRE(averages.rows.size() == 2);
  CHECK(averages.rows[0].key == "parent");
  CHECK(averages.rows[1].key == "child");
  const auto table = lines_of(averages.table({.sort_by = "count", .row_limit = 1}));
  REQUIRE(table.size() > 3);
  CHECK(table[3].find("parent") != std::string::npos);
}
