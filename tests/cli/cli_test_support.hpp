// What the `proftrace` command-line suites (tests/cli/*_test.cpp) share:
// running the built CLI, files in and out, summaries and problems through the
// tools' library, traces recorded or written for several commands.
// Compiled once (cli_test_support.cpp, the proftrace_cli_test_support library).
#pragma once

#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "test_support.hpp"
#include "trace_reader.hpp"

namespace cli_test_support {

namespace pt = proftrace::tools;
using test_support::temp_dir;

inline const std::string data_dir = PROFTRACE_TEST_DATA;
inline const std::string pytorch_trace = data_dir + "/pytorch_style.pt.trace.json";

// ---- files and the built CLI ----
struct cli_result {
  int rc = -1;
  std::string out, err;
};
std::string slurp(const std::filesystem::path& p);
void write_file(const std::filesystem::path& p, std::string_view text);
// `s` as one single-quoted shell word.
std::string quote(const std::string& s);
// Runs the built `proftrace` with `args`, its output and errors captured.
cli_result run_cli(const std::vector<std::string>& args);
std::size_t lines(const std::string& s);

// The CLI's own result and peak resident memory, under an address-space limit.
struct child_result {
  int rc = -1;
  long max_rss_kb = 0;
  std::string err;
};
child_result run_cli_limited(const std::vector<std::string>& args, rlim_t address_space);

// ---- the tools' library in process ----
std::map<std::string, proftrace::event_average> by_key(const proftrace::event_averages& a);
proftrace::event_averages summarize(const std::filesystem::path& p, bool by_shape = false);
std::vector<pt::problem> problems_of(const std::filesystem::path& p);
bool has_problem(const std::vector<pt::problem>& ps, std::int64_t index, std::string_view text);

// ---- recorded work ----
void spin(std::chrono::microseconds d);
void cli_leaf();
void cli_work(int rows);

// ---- trace bytes ----
std::size_t inside_packet_after(std::string_view pftrace, std::size_t offset);
void write_big_event_trace(const std::filesystem::path& p, std::size_t bytes);

// Parses `proftrace csv --numbers` output: header names, then rows by name.
struct numeric_table {
  std::vector<std::string> columns;
  std::map<std::string, std::vector<std::string>> rows;
  double at(const std::string& row, const std::string& column) const {
    const auto c = std::find(columns.begin(), columns.end(), column);
    REQUIRE_MESSAGE(c != columns.end(), "no column " << column);
    REQUIRE_MESSAGE(rows.count(row) == 1, "no row " << row);
    return std::stod(rows.at(row).at(static_cast<std::size_t>(c - columns.begin())));
  }
};
numeric_table parse_numeric_csv(const std::string& text);

// ---- repair ----
std::uint64_t complete_events_in(const std::string& text, const std::filesystem::path& scratch);
std::vector<std::string> event_lines(const std::filesystem::path& p);
void record_repair_trace(const std::filesystem::path& dir);
void check_repair(const std::filesystem::path& input, const std::string& decoded_text,
                  const std::vector<std::string>& original_events, const std::filesystem::path& scratch);

// ---- a torch-shaped trace with with_stack and profile_memory ----
extern const std::vector<std::string> torch_stack_events;
std::string torch_stack_trace(const std::vector<std::string>& events);
std::vector<std::string> sorted_lines(const std::string& text);

}  // namespace cli_test_support
