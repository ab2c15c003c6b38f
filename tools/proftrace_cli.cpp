// proftrace — summarise, validate and compare trace files from the command
// line. Exit codes: 0 ok, 1 invalid trace or validation problems, 2 usage
// error, 3 diff found a significant regression (see tools/README.md). Each
// command is a file of tools/commands/ and a row of the table below.
#include <iostream>
#include <string>
#include <vector>

#include "commands/command.hpp"

namespace cli = proftrace::tools::cli;

namespace {

const cli::command* const commands[] = {&cli::summary_command, &cli::csv_command,   &cli::stacks_command,
                                        &cli::validate_command, &cli::diff_command, &cli::merge_command,
                                        &cli::convert_command};

void print_tool_help() {
  std::cout << "usage: proftrace <command> [options]\n"
               "\n"
               "Reads trace files in PyTorch Kineto's JSON layout (.json, .json.gz, .json.zst),\n"
               "written by proftrace or by torch.profiler, once and in bounded memory, and\n"
               "Perfetto's protobuf traces (.pftrace, .pftrace.gz, .pftrace.zst; also by content).\n"
               "convert and merge also write OTF2 archives (.otf2) for Vampir and Scalasca.\n"
               "\n"
               "commands:\n";
  for (const cli::command* c : commands) std::cout << c->overview;
  std::cout << "\n"
               "Run 'proftrace <command> --help' for a command's options.\n"
               "exit codes: 0 ok, 1 invalid trace or validation problems, 2 usage error,\n"
               "            3 diff found a significant regression\n";
}

int run(const std::string& command, const std::vector<std::string>& args) {
  if (command == "-h" || command == "--help" || command == "help") {
    print_tool_help();
    return cli::exit_ok;
  }
  for (const cli::command* c : commands)
    if (command == c->name) return c->run(args);
  throw cli::usage_error{"unknown command '" + command + "'"};
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  std::string command = args.empty() ? std::string() : args[0];
  try {
    if (args.empty()) throw cli::usage_error{"no command given"};
    const int rc = run(command, std::vector<std::string>(args.begin() + 1, args.end()));
    return rc;
  } catch (const cli::usage_error& e) {
    bool known = false;
    for (const cli::command* c : commands) known = known || command == c->name;
    if (!known) command.clear();
    std::cerr << "proftrace" << (command.empty() ? "" : " " + command) << ": " << e.message << " (see 'proftrace "
              << (command.empty() ? "" : command + " ") << "--help')\n";
    return cli::exit_usage;
  } catch (const std::exception& e) {
    std::cerr << "proftrace: error: " << e.what() << "\n";
    return cli::exit_invalid;
  }
}
