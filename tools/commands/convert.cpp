// proftrace convert: see its help text below and tools/README.md.
#include <iostream>
#include <string>
#include <vector>

#include "command.hpp"

namespace proftrace::tools::cli {

namespace {

const char* const convert_help =
    "usage: proftrace convert IN OUT\n"
    "\n"
    "IN .json, .json.gz or .json.zst (Kineto or Chrome trace JSON, ours or torch's)\n"
    "-> OUT .pftrace, .pftrace.gz or .pftrace.zst (Perfetto's protobuf trace); IN\n"
    ".pftrace[.gz|.zst] -> OUT .json, .json.gz or .json.zst (Kineto layout). The same\n"
    "format on both sides copies the content, compressed by OUT's suffix.\n"
    "OUT .otf2 (from JSON or Perfetto): an OTF2 archive for Vampir, Scalasca and\n"
    "otf2-print: OUT is its anchor file, OUT's .def and event folder beside it\n"
    "(threads as locations, processes as location groups, scopes as Enter/Leave,\n"
    "counters, FLOPs and memory totals as metrics, mpi_calls' messages as MPI\n"
    "send/receive); written only: proftrace reads no .otf2. Needs a build with\n"
    "libotf2 (PROFTRACE_WITH_OTF2).\n"
    "OUT .cali.json: a calling-context profile in Caliper's JSON-split layout for\n"
    "Hatchet and Thicket (from either format; calls, exclusive and inclusive\n"
    "seconds, FLOPs, bytes, memory and counters per call path and rank, threads\n"
    "summed). It is written only: a .cali.json IN is refused.\n"
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

const command convert_command{"convert", "  convert IN OUT   Kineto JSON <-> Perfetto .pftrace, or to .otf2 or .cali.json, by suffix\n", convert_help, cmd_convert};

}  // namespace proftrace::tools::cli
