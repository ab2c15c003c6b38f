// proftrace — summarise, validate and compare trace files from the command
// line. Exit codes: 0 ok, 1 invalid trace or validation problems, 2 usage
// error, 3 diff found a significant regression (see tools/README.md).
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "trace_diff.hpp"
#include "trace_reader.hpp"

namespace {

namespace pt = proftrace::tools;

constexpr int exit_ok = 0;
constexpr int exit_invalid = 1;
constexpr int exit_usage = 2;
constexpr int exit_regression = 3;
// diff's default noise floor, in microseconds of a key's total self time.
constexpr double default_min_us = 10.0;

struct usage_error {
  std::string message;
};

const char* const tool_help =
    "usage: proftrace <command> [options]\n"
    "\n"
    "Reads trace files in PyTorch Kineto's JSON layout (.json, .json.gz, .json.zst),\n"
    "written by proftrace or by torch.profiler, once and in bounded memory, and\n"
    "Perfetto's protobuf traces (.pftrace, .pftrace.gz, .pftrace.zst; also by content).\n"
    "\n"
    "commands:\n"
    "  summary TRACE    key_averages().table() of the trace's host events\n"
    "  summary DIR      each rank's table, then the spread of each key across ranks\n"
    "  csv TRACE        the same rows as CSV\n"
    "  stacks TRACE     collapsed stacks for flamegraph.pl and speedscope\n"
    "  validate TRACE   check the layout HTA, TensorBoard and Perfetto rely on\n"
    "  validate --repair TRACE [-o OUT]   make a cut-off trace valid again\n"
    "  diff A B         per-key test of per-call self times, A vs B (a CI gate)\n"
    "  merge DIR -o M   several ranks' traces on one timeline, clocks aligned\n"
    "  convert IN OUT   Kineto JSON <-> Perfetto .pftrace, formats by suffix\n"
    "\n"
    "Run 'proftrace <command> --help' for a command's options.\n"
    "exit codes: 0 ok, 1 invalid trace or validation problems, 2 usage error,\n"
    "            3 diff found a significant regression\n";

const char* const summary_help =
    "usage: proftrace summary TRACE|DIR [--sort-by KEY] [--row-limit N] [--group-by-shape] [--top-level-only] [--flops]\n"
    "                         [--max-name-column-width N] [--max-shapes-column-width N]\n"
    "                         [--max-src-column-width N] [--header TEXT]\n"
    "\n"
    "With a directory: every trace in it (its *.json, *.json.gz, *.json.zst and\n"
    "*.pftrace[.gz|.zst] files, decided by content: the others, such as a memory\n"
    "timeline's .json, and merged traces are skipped and named on stderr),\n"
    "grouped by schedule cycle (the traces' first ProfilerStep#N): per cycle, one\n"
    "table per rank in rank order (distributedInfo), then a view across the\n"
    "ranks: per key, how many ranks have it, the min, median and max of self CPU\n"
    "time and the slowest rank. Cycles are compared each on its own.\n"
    "\n"
    "Prints torch's key_averages().table() for the complete (\"X\") host events of\n"
    "TRACE (cat cpu_op, user_annotation, cuda_runtime, cuda_driver, openmp,\n"
    "proftrace; device events are left out). ProfilerStep#N rows are grouped as ProfilerStep*; self time is\n"
    "the total minus the direct children's on the same thread, Python frames\n"
    "(cat python_function, with_stack) counting as children though they get no\n"
    "rows, as in torch. Events are sorted per thread first, so the numbers do not\n"
    "depend on the order of events in the file. \"[memory]\" events (profile_memory)\n"
    "count for every host event whose interval holds their time, on any thread\n"
    "of the same process (pid: a merged trace's ranks are apart) (CPU Mem, Self\n"
    "CPU Mem); those outside every host event of their process are the \"[memory]\"\n"
    "row. A trace cut off inside traceEvents is summarised as\n"
    "far as it goes, with a warning.\n"
    "\n"
    "options:\n"
    "  --sort-by KEY       self_cpu_time_total (default), any other key of torch's\n"
    "                      table (cpu_time_total, cpu_time, count, cpu_memory_usage,\n"
    "                      self_cpu_memory_usage, flops, ...), or none (each key's\n"
    "                      first event in time); a key without data warns\n"
    "  --row-limit N       at most N rows (default 100; -1: all)\n"
    "  --group-by-shape    one row per (name, \"Input Dims\")\n"
    "  --top-level-only    only keys whose first event had no enclosing event (a\n"
    "                      Python frame encloses too, as in torch)\n"
    "  --flops             also print achieved GFLOP/s per key (traces with \"flops\" args)\n"
    "  --max-name-column-width N    the table's options, as table() takes them:\n"
    "  --max-shapes-column-width N  the widest Name (default 55), Input Shapes (80)\n"
    "  --max-src-column-width N     and Source Location (75) columns, N >= 4;\n"
    "  --header TEXT                a line above the table, under a line of '='\n"
    "  -h, --help          this text\n"
    "exit codes: 0 ok, 1 unreadable or invalid trace, 2 usage error\n";

const char* const merge_help =
    "usage: proftrace merge DIR_OR_TRACES... -o MERGED\n"
    "\n"
    "Writes one trace (.json[.gz|.zst] or .pftrace[.gz|.zst] by MERGED's suffix;\n"
    "never one of the traces given) holding\n"
    "the events of every trace given (a directory: its traces, decided by\n"
    "content as for 'summary DIR'; the other files are skipped and named on\n"
    "stderr; a Perfetto trace is converted to Kineto JSON first, in a scratch\n"
    "directory beside MERGED): each rank its own process, named \"rank N (host)\" and sorted by\n"
    "rank (distributedInfo), a rank's schedule cycles one after another on its\n"
    "process (named \"rank N (host) steps 10-14, 20-24\"), times moved onto rank\n"
    "0's clock by each trace's clockAlignment offset (interpolated to its\n"
    "clockAlignmentAtStop where the offset was measured at stop too: the drift;\n"
    "outside the measured window the nearer measurement's offset, never an\n"
    "extrapolation; metadata (\"M\") events keep their ts), flow ids kept apart\n"
    "per rank. Streaming: memory stays small whatever the number and size of traces;\n"
    "one event at a time, an event over 16 MiB of JSON text is refused (exit 1).\n"
    "MERGED is written aside and renamed: a failed merge leaves it as it was.\n"
    "\n"
    "options:\n"
    "  -o, --output MERGED  the merged trace (required)\n"
    "  -h, --help           this text\n"
    "exit codes: 0 ok, 1 unreadable or invalid trace, 2 usage error\n";

const char* const csv_help =
    "usage: proftrace csv TRACE [--numbers] [--group-by-shape]\n"
    "\n"
    "Prints the summary's rows as CSV (torch_geometric's save_profile_data columns:\n"
    "NAME, SELF CPU %, SELF CPU, CPU TOTAL %, CPU TOTAL, CPU TIME AVG, # OF CALLS,\n"
    "then INPUT SHAPES with --group-by-shape), one line per key, keys in the order\n"
    "of their first event's start (as key_averages() lists them; summary sorts).\n"
    "The quantities the table shows are columns too, in its order and format:\n"
    "CPU MEM, SELF CPU MEM (profile_memory), CUDA MEM, SELF CUDA MEM before # OF\n"
    "CALLS, TOTAL FLOPS (in the table's unit) last.\n"
    "\n"
    "With --numbers, plain numbers for spreadsheets and pandas, one quantity per\n"
    "column: name, [input_shapes], count, cpu_total_us, self_cpu_us, cpu_avg_us,\n"
    "then, when the trace has them, cpu_memory_bytes, self_cpu_memory_bytes (a\n"
    "trace recorded with profile_memory), cuda_memory_bytes, self_cuda_memory_bytes\n"
    "(from its \"[memory]\" events) and\n"
    "flops (its \"flops\" args). Microseconds with 3 decimals; bytes, FLOPs integers.\n"
    "\n"
    "options:\n"
    "  --numbers           plain numbers with units in the column names\n"
    "  --group-by-shape    one row per (name, \"Input Dims\")\n"
    "  -h, --help          this text\n"
    "exit codes: 0 ok, 1 unreadable or invalid trace, 2 usage error\n";

const char* const stacks_help =
    "usage: proftrace stacks TRACE [--metric M]\n"
    "\n"
    "Prints one line per distinct stack of host events with a positive metric:\n"
    "the enclosing events' names outermost first, joined by ';', the event's own\n"
    "name last, a space, and the integer microseconds of the metric (the collapsed\n"
    "format of flamegraph.pl and speedscope). Names are kept as they are, as in\n"
    "the table, but for what the format cannot hold: ';' becomes ':' and a line\n"
    "break a space. ProfilerStep#N frames are merged as ProfilerStep*.\n"
    "\n"
    "options:\n"
    "  --metric M          self_cpu_time_total (default) or self_cuda_time_total\n"
    "                      (no device time is read yet: prints nothing)\n"
    "  -h, --help          this text\n"
    "exit codes: 0 ok, 1 unreadable or invalid trace, 2 usage error\n";

const char* const validate_help =
    "usage: proftrace validate TRACE\n"
    "       proftrace validate --repair TRACE [-o OUT]\n"
    "\n"
    "Checks what HTA, TensorBoard and Perfetto rely on: a top-level object with a\n"
    "\"traceEvents\" array; every event an object with string \"ph\" and \"name\";\n"
    "every complete (\"X\") event with a string \"cat\" and numeric \"ts\" and \"dur\";\n"
    "\"ts\" and \"dur\" numbers and not negative wherever present. Prints every\n"
    "problem as 'TRACE: event N: ...' (or 'TRACE: ...' for the file as a whole).\n"
    "A well-formed trace that says it is incomplete (proftrace could not write its\n"
    "trace file whole: a full disk, a file-size limit) is a problem too: 'TRACE:\n"
    "incomplete trace: N events the session recorded are not in it (...)'.\n"
    "\n"
    "With --repair, a trace cut off anywhere (a crash, SIGKILL, a full disk; plain,\n"
    "a gzip stream without its end, a zstd frame cut short) is made valid: every\n"
    "complete event of traceEvents is kept, with the complete top-level members\n"
    "before it (and after it, when the cut is later), and what is open is closed.\n"
    "Prints 'TRACE: repaired: kept N events (cut inside event N at byte B); wrote\n"
    "OUT' (events numbered from 0, bytes of uncompressed text). A trace that is\n"
    "not cut is left alone (copied only to an explicit -o). A Perfetto trace\n"
    "(.pftrace, such as a .pftrace spool a kill cut short) keeps every whole\n"
    "packet before the cut.\n"
    "\n"
    "options:\n"
    "  --repair            write a repaired copy of a cut-off trace\n"
    "  -o, --output OUT    where (default: NAME.repaired.json[.gz|.zst] next to\n"
    "                      TRACE; compressed by OUT's suffix; OUT may be TRACE)\n"
    "  -h, --help          this text\n"
    "exit codes: 0 valid, or repaired; 1 problems found (an incomplete trace\n"
    "            included), or nothing to repair (not a trace, or whole JSON with\n"
    "            problems); 2 usage error\n";

const char* const diff_help =
    "usage: proftrace diff A B [--threshold PCT] [--min-us US] [--alpha P] [--group-by-shape] [--row-limit N]\n"
    "       proftrace diff A1 A2 ... -- B1 B2 ... [options]\n"
    "       proftrace diff DIR_A DIR_B [options]\n"
    "\n"
    "Per key (name, or name and input shapes): the distribution of per-call self\n"
    "CPU times in A against B. Each side may be several traces (pooled) or a\n"
    "directory of traces; traces that carry two or more ranks (distributedInfo)\n"
    "are also compared rank by rank. A table per comparison: calls A/B, median\n"
    "per-call self time A/B and its change, the Hodges-Lehmann shift B-A per call\n"
    "with its 95% interval, the change of total self time, the Mann-Whitney U\n"
    "test's two-sided p (Bonferroni-corrected over every key compared) and a\n"
    "verdict: same, slower, faster (p < alpha), new, gone, REGRESSION.\n"
    "Each side keeps at most 20000 calls per key (a deterministic uniform sample).\n"
    "\n"
    "options:\n"
    "  --threshold PCT     exit 3 when some key is a regression: significant\n"
    "                      (corrected p < --alpha), its median per-call self time\n"
    "                      grew by more than PCT percent, and so did the low end of\n"
    "                      the shift's interval, and its total self time grew by\n"
    "                      more than --min-us; a key new in B counts when its\n"
    "                      self time exceeds --min-us. Without it: a report, exit 0\n"
    "  --min-us US         the smallest growth of a key's total self time that counts\n"
    "                      (default 10; 0: no floor)\n"
    "  --alpha P           significance level after the correction (default 0.01)\n"
    "  --group-by-shape    keys include \"Input Dims\"\n"
    "  --row-limit N       at most N rows per table (default -1: all)\n"
    "  -h, --help          this text\n"
    "exit codes: 0 ok, 1 unreadable or invalid trace, 2 usage error (a missing\n"
    "            path, an empty side), 3 significant regression\n";

const char* const convert_help =
    "usage: proftrace convert IN OUT\n"
    "\n"
    "IN .json, .json.gz or .json.zst (Kineto or Chrome trace JSON, ours or torch's)\n"
    "-> OUT .pftrace, .pftrace.gz or .pftrace.zst (Perfetto's protobuf trace); IN\n"
    ".pftrace[.gz|.zst] -> OUT .json, .json.gz or .json.zst (Kineto layout). The same\n"
    "format on both sides copies the content, compressed by OUT's suffix.\n"
    "JSON -> Perfetto: \"X\" events become slices on their thread's track (a string\n"
    "pid or tid, such as \"stream 7\", a named track), args debug annotations\n"
    "(arrays and objects as JSON), \"i\" instants, \"C\" counters, \"b\"/\"e\" slices\n"
    "on a track per (name, id), \"s\"/\"f\" flows those of the slice starting at\n"
    "their ts; thread and process names from \"M\" events. It holds the whole\n"
    "trace in memory (a thread's events are sorted before they are written).\n"
    "Perfetto -> JSON streams: slices as \"X\", instants \"i\", counters \"C\".\n"
    "A cut input is converted as far as it goes, with a warning. OUT is written\n"
    "aside and renamed.\n"
    "\n"
    "options:\n"
    "  -h, --help          this text\n"
    "exit codes: 0 ok, 1 unreadable or invalid input or unknown format, 2 usage error\n";

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
parsed_args parse(const std::vector<std::string>& args, const std::vector<std::string>& allowed, bool separates = false) {
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

int parse_int(const std::string& option, const std::string& s, long lowest = -1) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0 || v < lowest || v > 1000000000)
    throw usage_error{"option '" + option + "' needs an integer >= " + std::to_string(lowest) + ", not '" + s + "'"};
  return static_cast<int>(v);
}

// A column width of the table: room for one character and "..." at least.
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

// A directory of its own beside `near` (a file about to be written), gone
// with its contents when the object is.
struct scratch_dir {
  std::filesystem::path path;
  explicit scratch_dir(const std::filesystem::path& near) {
    const auto parent = near.parent_path().empty() ? std::filesystem::path(".") : near.parent_path();
    path = parent / (".proftrace-merge-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

void print_skipped(const std::vector<pt::skipped_file>& skipped) {
  for (const auto& s : skipped) std::cerr << "proftrace: skipped " << s.file.filename().string() << ": " << s.reason << "\n";
}

// Achieved GFLOP/s per key: its FLOPs over its total CPU time.
void print_flop_rates(const proftrace::event_averages& avg, bool with_flops_header) {
  std::vector<const proftrace::event_average*> rows;
  for (auto& r : avg.rows)
    if (r.flops > 0 && r.cpu_time_total_ns > 0) rows.push_back(&r);
  if (rows.empty()) {
    if (with_flops_header)
      std::cout << "\nNo FLOP counts in this trace: it was recorded with with_flops (its header says so), but its "
                   "producer does not store FLOPs per event (no event has a \"flops\" arg; torch writes only the "
                   "header).\n";
    else
      std::cout << "\nNo FLOP counts in this trace (record it with with_flops).\n";
    return;
  }
  std::sort(rows.begin(), rows.end(), [](auto* x, auto* y) { return x->flops > y->flops; });
  // A space before each column: a figure wider than its column still parts from the one before.
  std::cout << "\n" << std::left << std::setw(40) << "Name" << std::right << ' ' << std::setw(15) << "Total GFLOPs"
            << ' ' << std::setw(15) << "CPU total (ms)" << ' ' << std::setw(11) << "GFLOP/s" << "\n";
  for (auto* r : rows) {
    const double gflops = static_cast<double>(r->flops) / 1e9;
    const double seconds = static_cast<double>(r->cpu_time_total_ns) / 1e9;
    std::cout << std::left << std::setw(40) << r->key.substr(0, 39) << std::right << std::fixed << std::setprecision(3)
              << ' ' << std::setw(15) << gflops << ' ' << std::setw(15) << seconds * 1e3 << ' ' << std::setw(11)
              << gflops / seconds << "\n";
  }
}

// A sort key whose data the trace lacks would silently keep the order of
// each key's first event in time: say which data is missing.
void warn_empty_sort_key(const std::string& key, const proftrace::event_averages& avg, const pt::trace_info& info,
                         const std::string& file, std::vector<std::string>& warnings) {
  if (key.empty() || avg.rows.empty()) return;
  bool any = false;
  std::string missing;
  for (const auto& r : avg.rows) {
    if (key == "cpu_memory_usage" || key == "self_cpu_memory_usage")
      any = any || r.cpu_memory_usage != 0 || r.self_cpu_memory_usage != 0;
    else if (key == "cuda_memory_usage" || key == "self_cuda_memory_usage")
      any = any || r.cuda_memory_usage != 0 || r.self_cuda_memory_usage != 0;
    else if (key == "flops") any = any || r.flops != 0;
    else if (key == "cuda_time" || key == "cuda_time_total" || key == "self_cuda_time_total")
      any = any || r.cuda_time_total_ns != 0 || r.self_cuda_time_total_ns != 0;
    else return;  // CPU times and counts are always there
  }
  if (any) return;
  if (key.find("cpu_memory") != std::string::npos)
    missing = info.memory_events ? "its \"[memory]\" events allocate no host memory inside any event"
                                 : "it has no \"[memory]\" events (record it with profile_memory)";
  else if (key.find("cuda_memory") != std::string::npos)
    missing = info.memory_events ? "its \"[memory]\" events allocate no CUDA memory inside any event"
                                 : "it has no \"[memory]\" events (record it with profile_memory)";
  else if (key == "flops")
    missing = info.with_flops ? "no event has a \"flops\" arg (its producer does not store FLOPs per event)"
                              : "no event has a \"flops\" arg (record it with with_flops)";
  else
    missing = "device (CUDA) time is not read from traces yet";
  warnings.push_back(file + ": --sort-by " + key + " sorts nothing: " + missing +
                     "; rows keep their order in time");
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

int cmd_summary(const std::vector<std::string>& args) {
  const auto a = parse(args, {"--sort-by", "--row-limit", "--group-by-shape", "--top-level-only", "--flops",
                              "--max-name-column-width", "--max-shapes-column-width", "--max-src-column-width", "--header"});
  if (a.help) {
    std::cout << summary_help;
    return exit_ok;
  }
  if (a.positional.size() != 1) throw usage_error{"summary takes one TRACE"};
  const proftrace::table_options opts = table_options_of(a);
  std::vector<std::string> warnings;
  if (is_directory(a.positional[0])) {
    // Cycle by cycle: every rank's table, then the view across ranks.
    const auto ranks = pt::summarize_ranks(a.positional[0], a.group_by_shape, warnings);
    print_skipped(ranks.skipped);
    for (std::size_t c = 0; c < ranks.cycles.size(); ++c) {
      const auto& cycle = ranks.cycles[c];
      std::size_t traces = 0;
      for (const auto& r : ranks.traces) {
        if (r.cycle != c) continue;
        ++traces;
        std::cout << "== " << (r.rank >= 0 ? "rank " + std::to_string(r.rank) : std::string("no rank"))
                  << (r.host.empty() ? "" : " (" + r.host + ")")
                  << (r.first_step >= 0 ? ", " + r.steps() : std::string()) << ": "
                  << r.file.filename().string() << "\n"
                  << r.averages.table(opts) << "\n";
        pt::trace_info info;
        info.memory_events = r.averages.profile_memory;
        warn_empty_sort_key(opts.sort_by, r.averages, info, r.file.string(), warnings);
        if (a.flops) print_flop_rates(r.averages, false);
      }
      if (traces < 2 || cycle.entities < 2) continue;  // one rank (its traces repeated): nothing to compare
      std::cout << "== across " << cycle.entities << (cycle.all_ranked ? " ranks" : " traces")
                << (cycle.label.empty() ? "" : ", " + cycle.label) << ": self CPU time per key, largest spread first\n"
                << pt::cross_rank_table(ranks, c, opts.row_limit);
      if (c + 1 < ranks.cycles.size()) std::cout << "\n";
    }
    if (ranks.cycles.size() > 1)
      std::cout << "\n" << ranks.cycles.size()
                << " schedule cycles: each compared across ranks on its own (cycles are not added together)\n";
    print_warnings(warnings);
    return exit_ok;
  }
  pt::trace_info info;
  const auto avg = pt::summarize(a.positional[0], a.group_by_shape, warnings, show_progress(a.positional[0]), &info);
  warn_empty_sort_key(opts.sort_by, avg, info, a.positional[0], warnings);
  std::cout << avg.table(opts);
  if (a.flops) print_flop_rates(avg, info.with_flops);
  print_warnings(warnings);
  return exit_ok;
}

int cmd_csv(const std::vector<std::string>& args) {
  const auto a = parse(args, {"--group-by-shape", "--numbers"});
  if (a.help) {
    std::cout << csv_help;
    return exit_ok;
  }
  if (a.positional.size() != 1) throw usage_error{"csv takes one TRACE"};
  std::vector<std::string> warnings;
  const auto avg = pt::summarize(a.positional[0], a.group_by_shape, warnings, show_progress(a.positional[0]));
  std::cout << (a.numbers ? pt::numeric_csv(avg) : avg.csv());
  print_warnings(warnings);
  return exit_ok;
}

int cmd_stacks(const std::vector<std::string>& args) {
  const auto a = parse(args, {"--metric"});
  if (a.help) {
    std::cout << stacks_help;
    return exit_ok;
  }
  if (a.positional.size() != 1) throw usage_error{"stacks takes one TRACE"};
  const std::string metric = a.metric.value_or("self_cpu_time_total");
  if (metric != "self_cpu_time_total" && metric != "self_cuda_time_total")
    throw usage_error{"unknown --metric '" + metric + "' (self_cpu_time_total, self_cuda_time_total)"};
  std::vector<std::string> warnings;
  std::cout << pt::summarize_stacks(a.positional[0], warnings, show_progress(a.positional[0])).collapsed_stacks(metric, proftrace::frame_names::as_is);
  print_warnings(warnings);
  return exit_ok;
}

// Prints validate's problems for `path`; returns their number.
std::uint64_t print_problems(const std::string& path, pt::read_result& r) {
  return pt::validate(
      path,
      [&](const pt::problem& p) {
        std::cout << path << ": ";
        if (p.index >= 0) std::cout << "event " << p.index << ": ";
        std::cout << p.message << "\n";
      },
      &r);
}

int repair(const std::string& path, const std::optional<std::string>& output) {
  // A repair keeps the input's own format: OUT must name it (compressed as OUT's suffix says).
  if (output && pt::is_perfetto_trace(path) != pt::named_perfetto_trace(*output))
    throw pt::trace_error(*output + ": a repair keeps " + path + "'s format (" +
                          pt::format_suffix_of(path) +
                          ", with any compression suffix); 'proftrace convert' changes it");
  const auto plan = pt::plan_repair(path);
  if (plan.complete) {
    pt::read_result r;
    const auto n = print_problems(path, r);
    if (n != 0) {
      std::cout << path << ": " << n << (n == 1 ? " problem" : " problems") << " in " << r.events
                << " events; the file is not cut off, and --repair mends only a cut\n";
      return exit_invalid;
    }
    std::cout << path << ": valid (" << r.events << " events): nothing to repair";
    if (output) {
      pt::write_repaired(path, plan, *output);
      std::cout << "; copied to " << *output;
    }
    std::cout << "\n";
    return exit_ok;
  }
  const std::filesystem::path out = output ? std::filesystem::path(*output) : pt::default_repair_output(path);
  pt::write_repaired(path, plan, out);
  std::cout << path << ": repaired: kept " << plan.events_kept << (plan.events_kept == 1 ? " event (" : " events (")
            << plan.cut << "); wrote " << out.string() << "\n";
  return exit_ok;
}

int cmd_validate(const std::vector<std::string>& args) {
  const auto a = parse(args, {"--repair", "-o", "--output"});
  if (a.help) {
    std::cout << validate_help;
    return exit_ok;
  }
  if (a.positional.size() != 1) throw usage_error{"validate takes one TRACE"};
  if (a.output && !a.repair) throw usage_error{"-o is for --repair"};
  const std::string& path = a.positional[0];
  if (a.repair) return repair(path, a.output);
  pt::read_result r;
  const auto n = print_problems(path, r);
  if (n == 0) {
    std::cout << path << ": valid (" << r.events << " events)\n";
    return exit_ok;
  }
  std::cout << path << ": " << n << (n == 1 ? " problem" : " problems") << " in " << r.events << " events\n";
  return exit_invalid;
}

int cmd_merge(const std::vector<std::string>& args) {
  const auto a = parse(args, {"-o", "--output"});
  if (a.help) {
    std::cout << merge_help;
    return exit_ok;
  }
  if (!a.output) throw usage_error{"merge needs -o MERGED"};
  if (a.positional.empty()) throw usage_error{"merge takes a directory or trace files"};
  const std::filesystem::path output = *a.output;
  const bool to_perfetto = pt::named_perfetto_trace(output);  // merged as JSON, then converted
  // As every command writes: into a directory that exists (the scratch one beside MERGED must not create it).
  if (const auto dir = output.parent_path(); !dir.empty() && !is_directory(dir.string()))
    throw pt::trace_error(output.string() + ": cannot write: " + std::strerror(ENOENT));
  if (!to_perfetto && !pt::named_json(output))
    throw pt::trace_error(output.string() + ": unknown output format (" + std::string(pt::trace_suffixes) + ")");
  std::vector<std::filesystem::path> files;
  std::vector<pt::skipped_file> skipped;
  // merge copies each event's JSON text: a Perfetto trace is converted to
  // Kineto JSON first (its rank and clock alignment come along), in a
  // scratch directory removed when the merge is done.
  std::optional<scratch_dir> scratch;
  const auto add = [&](const std::filesystem::path& f) {
    if (!pt::is_perfetto_trace(f)) return files.push_back(f);
    if (!scratch) scratch.emplace(*a.output);
    const auto json = scratch->path / std::to_string(files.size()) / (f.filename().string() + ".json");
    std::filesystem::create_directories(json.parent_path());
    const auto report = pt::convert_trace(f, json);
    print_warnings(report.warnings);
    files.push_back(json);
  };
  for (const auto& p : a.positional) {
    std::error_code same_ec;
    if (!is_directory(p) && std::filesystem::equivalent(p, output, same_ec))
      throw pt::trace_error(output.string() + ": MERGED is one of the traces to merge: it would be overwritten");
    if (is_directory(p)) {
      // Decided by content: the directory's other files are skipped, named on stderr.
      for (auto& f : pt::list_traces(p, skipped, {*a.output})) add(f);
      continue;
    }
    // A file named on the command line must be a trace.
    if (!pt::is_perfetto_trace(p)) {
      const auto probe = pt::probe_trace(p);
      if (!probe.is_trace) throw pt::trace_error(p + ": " + probe.reason);
    }
    add(p);
  }
  print_skipped(skipped);
  if (files.empty()) throw pt::trace_error("no trace to merge");
  if (to_perfetto && !scratch) scratch.emplace(output);
  const std::filesystem::path merged = to_perfetto ? scratch->path / "merged.json.zst" : output;
  const auto r = pt::merge_traces(files, merged);
  if (to_perfetto) print_warnings(pt::convert_trace(merged, output).warnings);  // whole or not at all
  std::cout << *a.output << ": " << r.traces << " traces, " << r.events << " events, " << r.ranks
            << (r.ranks == 1 ? " rank" : " ranks");
  if (r.unaligned) std::cout << "; " << r.unaligned << " without a measured clock offset (their Unix time taken as is)";
  if (r.drift_corrected)
    std::cout << "; " << r.drift_corrected << " corrected for their clocks' drift between start and stop";
  std::cout << "\n";
  return exit_ok;
}

// A side's traces: files as given, a directory's traces (see list_traces).
// A missing path, or a directory without a trace, is a usage error.
std::vector<std::filesystem::path> side_traces(const std::vector<std::string>& paths, const std::string& side) {
  std::vector<std::filesystem::path> out;
  for (const auto& p : paths) {
    std::error_code ec;
    if (!std::filesystem::exists(p, ec))
      throw usage_error{"side " + side + ": '" + p + "' " + (ec ? "cannot be read: " + ec.message() : "does not exist")};
    if (!is_directory(p)) {
      out.emplace_back(p);
      continue;
    }
    std::vector<pt::skipped_file> skipped;
    const auto files = pt::list_traces(p, skipped);
    print_skipped(skipped);
    if (files.empty()) throw usage_error{"side " + side + ": no trace in the directory '" + p + "'"};
    out.insert(out.end(), files.begin(), files.end());
  }
  return out;
}

// The paths of side A and side B: "A B", or "A1 A2 ... -- B1 B2 ...".
std::pair<std::vector<std::string>, std::vector<std::string>> diff_sides(const parsed_args& a) {
  const auto& p = a.positional;
  if (!a.separator) {
    if (p.size() != 2) throw usage_error{"diff takes A B, or A1 A2 ... -- B1 B2 ... (traces or directories)"};
    return {{p[0]}, {p[1]}};
  }
  const auto cut = p.begin() + static_cast<std::ptrdiff_t>(*a.separator);
  if (cut == p.begin()) throw usage_error{"nothing before '--': side A has no trace"};
  if (cut == p.end()) throw usage_error{"nothing after '--': side B has no trace"};
  return {{p.begin(), cut}, {cut, p.end()}};
}

pt::diff_criteria diff_criteria_of(const parsed_args& a) {
  pt::diff_criteria c;
  c.gate = a.threshold.has_value();
  if (a.threshold) c.threshold_pct = parse_pct("--threshold", *a.threshold);
  // The noise floor: 10 us of total self time (see tools/README.md).
  c.min_us = a.min_us ? parse_pct("--min-us", *a.min_us) : default_min_us;
  if (a.alpha) {
    c.alpha = parse_pct("--alpha", *a.alpha);
    if (!(c.alpha > 0 && c.alpha < 1)) throw usage_error{"option '--alpha' needs a number in (0, 1), not '" + *a.alpha + "'"};
  }
  return c;
}

std::string regression_text(const pt::stat_row& r) {
  char buf[512];
  const auto t = [](double ns) { return pt::format_time_signed(ns / 1e3); };
  if (!r.in_a) {
    std::snprintf(buf, sizeof buf, "new in B, total self time %s", t(static_cast<double>(r.self_b_ns)).c_str());
    return buf;
  }
  std::snprintf(buf, sizeof buf, "median per-call self time %+.2f%% (%s -> %s), shift %s [%s, %s] per call, total %s, p = %.2g",
                r.median_change_pct(), t(r.median_a_ns).c_str(), t(r.median_b_ns).c_str(), t(r.shift.estimate).c_str(),
                t(r.shift.low).c_str(), t(r.shift.high).c_str(), t(static_cast<double>(r.self_change_ns())).c_str(),
                r.p_corrected);
  return buf;
}

int report_regressions(const std::vector<pt::diff_section>& sections, const pt::diff_criteria& c) {
  std::size_t n = 0;
  for (const auto& s : sections)
    for (const auto& r : s.rows)
      if (r.regression) {
        ++n;
        std::cout << "regression: " << r.key << (s.label.empty() ? "" : " (" + s.label + ")") << ": "
                  << regression_text(r) << "\n";
      }
  char floor[160];
  std::snprintf(floor, sizeof floor, "%g%% of the median per call and %g us in all, at p < %g", c.threshold_pct,
                c.min_us, c.alpha);
  if (n == 0) {
    std::cout << "no key's self time grew significantly by more than " << floor << "\n";
    return exit_ok;
  }
  std::cerr << "proftrace: " << n << (n == 1 ? " key" : " keys") << (sections.size() > 1 ? " (by rank and across ranks)" : "")
            << " grew significantly by more than " << floor << "\n";
  return exit_regression;
}

int cmd_diff(const std::vector<std::string>& args) {
  const auto a = parse(args, {"--threshold", "--min-us", "--alpha", "--group-by-shape", "--row-limit"}, true);
  if (a.help) {
    std::cout << diff_help;
    return exit_ok;
  }
  const auto [side_a, side_b] = diff_sides(a);
  const auto criteria = diff_criteria_of(a);
  const int row_limit = a.row_limit ? parse_int("--row-limit", *a.row_limit) : -1;
  const auto files_a = side_traces(side_a, "A"), files_b = side_traces(side_b, "B");
  std::vector<std::string> warnings;
  const auto sections = pt::diff_traces(files_a, files_b, a.group_by_shape, criteria, warnings);
  print_warnings(warnings);
  const auto names = [](const std::vector<std::filesystem::path>& files) {
    std::string s;
    for (const auto& f : files) s += (s.empty() ? "" : ", ") + f.string();
    return s;
  };
  std::cout << "A: " << names(files_a) << "\nB: " << names(files_b) << "\n";
  for (const auto& s : sections) {
    if (!s.label.empty()) std::cout << "\n" << s.label << ":\n";
    std::cout << pt::stat_diff_table(s.rows, row_limit);
  }
  if (!criteria.gate) return exit_ok;
  return report_regressions(sections, criteria);
}

int cmd_convert(const std::vector<std::string>& args) {
  const auto a = parse(args, {});
  if (a.help) {
    std::cout << convert_help;
    return exit_ok;
  }
  if (a.positional.size() != 2) throw usage_error{"convert takes IN and OUT"};
  const auto report = pt::convert_trace(a.positional[0], a.positional[1]);
  print_warnings(report.warnings);
  std::cout << a.positional[1] << ": " << report.summary << "\n";
  return exit_ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string command = args.empty() ? std::string() : args[0];
  try {
    if (args.empty()) throw usage_error{"no command given"};
    if (command == "-h" || command == "--help" || command == "help") {
      std::cout << tool_help;
      return exit_ok;
    }
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (command == "summary") return cmd_summary(rest);
    if (command == "csv") return cmd_csv(rest);
    if (command == "stacks") return cmd_stacks(rest);
    if (command == "validate") return cmd_validate(rest);
    if (command == "diff") return cmd_diff(rest);
    if (command == "merge") return cmd_merge(rest);
    if (command == "convert") return cmd_convert(rest);
    command.clear();
    throw usage_error{"unknown command '" + args[0] + "'"};
  } catch (const usage_error& e) {
    std::cerr << "proftrace" << (command.empty() ? "" : " " + command) << ": " << e.message << " (see 'proftrace "
              << (command.empty() ? "" : command + " ") << "--help')\n";
    return exit_usage;
  } catch (const pt::trace_error& e) {
    std::cerr << "proftrace: error: " << e.what() << "\n";
    return exit_invalid;
  } catch (const std::exception& e) {
    std::cerr << "proftrace: error: " << e.what() << "\n";
    return exit_invalid;
  }
}
