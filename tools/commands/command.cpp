#include "command.hpp"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace proftrace::tools::cli {

parsed_args parse(const std::vector<std::string>& args, const std::vector<std::string>& allowed, bool separates) {
  parsed_args out;
  const auto known = [&](const std::string& o) {
    for (auto& a : allowed)
      if (a == o) return true;
    return false;
  };
  bool only_positional = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (only_positional || a.size() < 2 || a[0] != '-' || a == "-") {
      out.positional.push_back(a);
      continue;
    }
    if (a == "--" && separates) {
      if (out.separator) throw usage_error{"'--' given twice (diff A... -- B...)"};
      out.separator = out.positional.size();
      continue;
    }
    if (a == "--") {
      only_positional = true;
      continue;
    }
    if (a == "-h" || a == "--help") {
      out.help = true;
      continue;
    }
    std::optional<std::string> inline_value;
    if (auto eq = a.find('='); eq != std::string::npos) {
      inline_value = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    if (!known(a)) throw usage_error{"unknown option '" + a + "'"};
    if (a == "--group-by-shape" || a == "--top-level-only" || a == "--flops" || a == "--repair" || a == "--numbers") {
      if (inline_value) throw usage_error{"option '" + a + "' takes no value"};
      (a == "--group-by-shape" ? out.group_by_shape
       : a == "--flops"        ? out.flops
       : a == "--repair"       ? out.repair
       : a == "--numbers"      ? out.numbers
                               : out.top_level_only) = true;
      continue;
    }
    std::string value;
    if (inline_value) value = *inline_value;
    else if (i + 1 < args.size()) value = args[++i];
    else throw usage_error{"option '" + a + "' needs a value"};
    if (a == "--sort-by") out.sort_by = value;
    else if (a == "--row-limit") out.row_limit = value;
    else if (a == "--threshold") out.threshold = value;
    else if (a == "--min-us") out.min_us = value;
    else if (a == "--alpha") out.alpha = value;
    else if (a == "--metric") out.metric = value;
    else if (a == "--max-name-column-width") out.name_width = value;
    else if (a == "--max-shapes-column-width") out.shapes_width = value;
    else if (a == "--max-src-column-width") out.src_width = value;
    else if (a == "--header") out.header = value;
    else if (a == "-o" || a == "--output") out.output = value;
  }
  return out;
}

int parse_int(const std::string& option, const std::string& s, long lowest) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0 || v < lowest || v > 1000000000)
    throw usage_error{"option '" + option + "' needs an integer >= " + std::to_string(lowest) + ", not '" + s + "'"};
  return static_cast<int>(v);
}

int parse_width(const std::string& option, const std::optional<std::string>& s, int default_width) {
  return s ? parse_int(option, *s, 4) : default_width;
}

double parse_pct(const std::string& option, const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v) || v < 0)
    throw usage_error{"option '" + option + "' needs a non-negative number, not '" + s + "'"};
  return v;
}

// Whether `path` names a directory (through symbolic links). A path whose
// status cannot be read for another reason than not existing (a symbolic
// link loop, no permission) is a clear error, not a raw filesystem one; a
// missing path is left to the reader, which names it.
bool is_directory(const std::string& path) {
  std::error_code ec;
  const bool dir = std::filesystem::is_directory(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
    throw pt::trace_error(path + ": cannot be read: " +
                          (ec == std::errc::too_many_symbolic_link_levels ? "a symbolic link loop (" + ec.message() + ")"
                                                                          : ec.message()));
  return dir;
}

bool show_progress(const std::string& path) {
  std::error_code ec;
  return ::isatty(2) && std::filesystem::file_size(path, ec) > (std::uintmax_t{64} << 20);
}

void print_warnings(const std::vector<std::string>& warnings) {
  for (auto& w : warnings) std::cerr << "proftrace: warning: " << w << "\n";
}

void print_skipped(const std::vector<pt::skipped_file>& skipped) {
  for (const auto& s : skipped) std::cerr << "proftrace: skipped " << s.file.filename().string() << ": " << s.reason << "\n";
}

// summary's options for table(), the same names as table_options'; the
// sort key is checked before any trace is read.
proftrace::table_options table_options_of(const parsed_args& a) {
  proftrace::table_options opts;
  opts.sort_by = a.sort_by.value_or("self_cpu_time_total");
  if (opts.sort_by == "none") opts.sort_by.clear();
  if (a.row_limit) opts.row_limit = parse_int("--row-limit", *a.row_limit);
  opts.top_level_events_only = a.top_level_only;
  opts.max_name_column_width = parse_width("--max-name-column-width", a.name_width, opts.max_name_column_width);
  opts.max_shapes_column_width = parse_width("--max-shapes-column-width", a.shapes_width, opts.max_shapes_column_width);
  opts.max_src_column_width = parse_width("--max-src-column-width", a.src_width, opts.max_src_column_width);
  opts.header = a.header.value_or("");
  try {
    (void)proftrace::event_averages{}.table(opts);
  } catch (const std::invalid_argument& e) {
    std::string why = e.what();
    const auto valid = why.find("(valid keys: ");
    throw usage_error{"unknown --sort-by key '" + opts.sort_by + "' " +
                      (valid == std::string::npos ? std::string() : why.substr(valid, why.size() - valid - 1) + ", none)")};
  }
  return opts;
}

}  // namespace proftrace::tools::cli
