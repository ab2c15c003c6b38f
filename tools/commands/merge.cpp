// proftrace merge: see its help text below and tools/README.md.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"

namespace proftrace::tools::cli {

namespace {

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

const char* const merge_help =
    "usage: proftrace merge DIR_OR_TRACES... -o MERGED\n"
    "\n"
    "Writes one trace (.json[.gz|.zst], .pftrace[.gz|.zst], .otf2 or .cali.json by\n"
    "MERGED's suffix; an OTF2 archive has one location group per rank, MPI messages\n"
    "between ranks from mpi_calls' peers; a Caliper profile one row per node and rank;\n"
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
    "A MERGED ending in .cali.json is a Caliper profile for Hatchet and Thicket:\n"
    "the merged trace's calls summed per call path, one row per node and rank.\n"
    "\n"
    "options:\n"
    "  -o, --output MERGED  the merged trace (required)\n"
    "  -h, --help           this text\n"
    "exit codes: 0 ok, 1 unreadable or invalid trace, 2 usage error\n";

// Whether MERGED is written as JSON and then converted: a .pftrace, an OTF2
// archive (one location group per rank), a Caliper profile (one row per
// node and rank). Throws for a name no format has, or a directory that
// does not exist (the scratch one beside MERGED must not create it).
bool merged_as_json_then_converted(const std::filesystem::path& output) {
  const bool converted = pt::named_perfetto_trace(output) || pt::named_export_only(output);
  if (const auto dir = output.parent_path(); !dir.empty() && !is_directory(dir.string()))
    throw pt::trace_error(output.string() + ": cannot write: " + std::strerror(ENOENT));
  if (!converted && !pt::named_json(output))
    throw pt::trace_error(output.string() + ": unknown output format (" + std::string(pt::output_trace_suffixes) + ")");
  return converted;
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
  const bool converted = merged_as_json_then_converted(output);
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
  if (converted && !scratch) scratch.emplace(output);
  const std::filesystem::path merged = converted ? scratch->path / "merged.json.zst" : output;
  const auto r = pt::merge_traces(files, merged);
  if (converted) print_warnings(pt::convert_trace(merged, output).warnings);  // whole or not at all
  std::cout << *a.output << ": " << r.traces << " traces, " << r.events << " events, " << r.ranks
            << (r.ranks == 1 ? " rank" : " ranks");
  if (r.unaligned) std::cout << "; " << r.unaligned << " without a measured clock offset (their Unix time taken as is)";
  if (r.drift_corrected)
    std::cout << "; " << r.drift_corrected << " corrected for their clocks' drift between start and stop";
  std::cout << "\n";
  return exit_ok;
}

}  // namespace

const command merge_command{"merge", "  merge DIR -o M   several ranks' traces on one timeline, clocks aligned\n", merge_help, cmd_merge};

}  // namespace proftrace::tools::cli
