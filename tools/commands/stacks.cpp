// proftrace stacks: see its help text below and tools/README.md.
#include <iostream>
#include <string>
#include <vector>

#include "command.hpp"

namespace proftrace::tools::cli {

namespace {

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

}  // namespace

const command stacks_command{"stacks", "  stacks TRACE     collapsed stacks for flamegraph.pl and speedscope\n", stacks_help, cmd_stacks};

}  // namespace proftrace::tools::cli
