// proftrace summary: see its help text below and tools/README.md.
#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "command.hpp"
#include "job_report.hpp"

namespace proftrace::tools::cli {

namespace {

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
    "\n"
    "With a job's report across MPI ranks (the .cali.json that\n"
    "rank_averages::write_profile writes): the table rank_averages::table() prints,\n"
    "per key calls, total and self time summed over the ranks, the min, mean and\n"
    "max of one rank's total time with the ranks of the min and max, and the load\n"
    "imbalance; --sort-by also takes max_ns, imbalance and imbalance_percent. Other\n"
    ".cali.json files (a trace converted to a Caliper profile) are refused.\n"
    "\n"
    "exit codes: 0 ok, 1 unreadable or invalid trace, 2 usage error\n";

// A job's report across ranks (rank_averages::write_profile's .cali.json):
// its table, true; false for any other path.
bool print_rank_profile(const parsed_args& a) {
  const auto job = pt::read_job_report(a.positional[0]);
  if (!job) return false;  // a trace, or a converted trace's profile: read (or refused) as before
  parsed_args without_sort = a;
  without_sort.sort_by.reset();
  proftrace::table_options opts = table_options_of(without_sort);
  opts.sort_by = a.sort_by.value_or(opts.sort_by);
  if (opts.sort_by == "none") opts.sort_by.clear();
  try {
    std::cout << job->table(opts);
  } catch (const std::invalid_argument& e) {
    const std::string why = e.what();
    const auto valid = why.find("(valid keys: ");
    throw usage_error{"unknown --sort-by key '" + opts.sort_by + "' for a job's report" +
                      (valid == std::string::npos ? std::string() : " " + why.substr(valid))};
  }
  return true;
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

int cmd_summary(const std::vector<std::string>& args) {
  const auto a = parse(args, {"--sort-by", "--row-limit", "--group-by-shape", "--top-level-only", "--flops",
                              "--max-name-column-width", "--max-shapes-column-width", "--max-src-column-width", "--header"});
  if (a.help) {
    std::cout << summary_help;
    return exit_ok;
  }
  if (a.positional.size() != 1) throw usage_error{"summary takes one TRACE"};
  if (print_rank_profile(a)) return exit_ok;
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

}  // namespace

const command summary_command{"summary", "  summary TRACE    key_averages().table() of the trace's host events\n"
    "  summary JOB.cali.json\n"
    "                   the table of a job's report across MPI ranks (rank_averages)\n"
    "  summary DIR      each rank's table, then the spread of each key across ranks\n", summary_help, cmd_summary};

}  // namespace proftrace::tools::cli
