// The `proftrace` command line's commands: one file per command under
// tools/commands/, each defining one `command` that the table in
// tools/proftrace_cli.cpp names, and what they share (option parsing,
// warnings, exit codes).
//
//   const command convert_command{"convert", "  convert IN OUT   ...\n", convert_help, cmd_convert};
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <proftrace/key_averages.hpp>

#include "trace_reader.hpp"

namespace proftrace::tools::cli {

namespace pt = proftrace::tools;

constexpr int exit_ok = 0;
constexpr int exit_invalid = 1;
constexpr int exit_usage = 2;
constexpr int exit_regression = 3;

struct usage_error {
  std::string message;
};

struct command {
  const char* name;
  const char* overview;  // its lines in `proftrace --help`
  const char* help;      // `proftrace <name> --help`
  int (*run)(const std::vector<std::string>& args);
};
extern const command summary_command, csv_command, stacks_command, validate_command, diff_command, merge_command,
    convert_command;

struct parsed_args {
  std::vector<std::string> positional;
  std::optional<std::string> sort_by, row_limit, threshold, min_us, alpha;
  // diff: where "--" split the positional arguments (A's traces before it).
  std::optional<std::size_t> separator;
  std::optional<std::string> name_width, shapes_width, src_width, header;  // table_options' widths and header
  bool group_by_shape = false;
  bool top_level_only = false;
  bool flops = false;
  bool repair = false;
  bool numbers = false;
  std::optional<std::string> metric, output;
  bool help = false;
};

// Options take "--opt VALUE" or "--opt=VALUE"; `allowed` lists the ones
// this command knows. "--" ends the options, or (`separates`, diff) splits
// the positional arguments in two, options still allowed after it.
parsed_args parse(const std::vector<std::string>& args, const std::vector<std::string>& allowed, bool separates = false);
int parse_int(const std::string& option, const std::string& s, long lowest = -1);
// A column width of the table: room for one character and "..." at least.
int parse_width(const std::string& option, const std::optional<std::string>& s, int default_width);
double parse_pct(const std::string& option, const std::string& s);
bool is_directory(const std::string& path);
bool show_progress(const std::string& path);
void print_warnings(const std::vector<std::string>& warnings);
void print_skipped(const std::vector<pt::skipped_file>& skipped);
proftrace::table_options table_options_of(const parsed_args& a);

}  // namespace proftrace::tools::cli
