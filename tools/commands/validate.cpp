// proftrace validate: see its help text below and tools/README.md.
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"

namespace proftrace::tools::cli {

namespace {

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

}  // namespace

const command validate_command{"validate", "  validate TRACE   check the layout HTA, TensorBoard and Perfetto rely on\n"
    "  validate --repair TRACE [-o OUT]   make a cut-off trace valid again\n", validate_help, cmd_validate};

}  // namespace proftrace::tools::cli
