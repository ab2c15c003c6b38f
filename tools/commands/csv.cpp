// proftrace csv: see its help text below and tools/README.md.
#include <iostream>
#include <string>
#include <vector>

#include "command.hpp"

namespace proftrace::tools::cli {

namespace {

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

}  // namespace

const command csv_command{"csv", "  csv TRACE        the same rows as CSV\n", csv_help, cmd_csv};

}  // namespace proftrace::tools::cli
