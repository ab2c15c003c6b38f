// libFuzzer target: arbitrary bytes as a trace file (.json, or .json.gz /
// .json.zst when they start with the gzip / zstd magic), through what the
// command line runs on a trace: validate, the summary's aggregation (with
// shapes and stacks, and the table), summary DIR and merge (the input
// twice, as two ranks' traces: a merged trace must read back whole), and validate
// --repair, whose output must then read back as complete JSON holding
// exactly the events it kept.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "trace_input.hpp"
#include "trace_reader.hpp"

namespace pt = proftrace::tools;

namespace {

const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::error_code ec;
    auto base = std::filesystem::path("/dev/shm");
    if (!std::filesystem::is_directory(base, ec)) base = std::filesystem::temp_directory_path();
    auto d = base / ("proftrace-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(scratch_dir(), ignored);
    });
    return d;
  }();
  return dir;
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "trace_reader_fuzzer: %s\n", what.c_str());
  std::abort();
}

// Inputs that decompress to more than this are skipped: the reader streams,
// so size only costs time, and a few KiB of zstd can expand to gigabytes.
constexpr std::size_t max_decoded = std::size_t{1} << 20;

bool small_enough(const std::filesystem::path& file) {
  pt::trace_input in(file);
  std::vector<char> buf(in.buffer_size(1 << 16));
  std::size_t total = 0;
  while (std::size_t got = in.read(buf.data(), buf.size()))
    if ((total += got) > max_decoded) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const bool gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  const bool zstd = size >= 4 && data[0] == 0x28 && data[1] == 0xb5 && data[2] == 0x2f && data[3] == 0xfd;
  const std::string suffix = gzip ? ".json.gz" : zstd ? ".json.zst" : ".json";
  const auto input = scratch_dir() / ("input" + suffix);
  {
    std::ofstream out(input, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  if (!small_enough(input)) return -1;  // not added to the corpus

  (void)pt::probe_trace(input);  // never throws: a directory's file is a trace or is skipped
  pt::read_result validated;
  (void)pt::validate(input, [](const pt::problem&) {}, &validated);
  for (bool by_shape : {false, true}) {
    std::vector<std::string> warnings;
    try {
      const auto averages = pt::summarize(input, by_shape, warnings);
      (void)averages.table();
    } catch (const pt::trace_error&) {
    }
  }
  try {
    std::vector<std::string> warnings;
    (void)pt::summarize_stacks(input, warnings).collapsed_stacks();
  } catch (const pt::trace_error&) {
  }

  try {
    const auto merged = scratch_dir() / "merged.json";
    const auto m = pt::merge_traces({input, input}, merged);
    pt::read_options all;
    all.on_event = [](const pt::trace_event&) { return true; };
    pt::read_result reread;
    try {
      reread = pt::read_trace(merged, all);
    } catch (const pt::trace_error& e) {
      fail(std::string("the merged trace does not read: ") + e.what());
    }
    if (reread.truncated || reread.events < m.events) fail("the merged trace lost events");
  } catch (const pt::trace_error&) {
  }

  try {  // summary DIR: the input as two ranks' traces
    const auto ranks = scratch_dir() / "ranks";
    std::filesystem::create_directories(ranks);
    for (const char* name : {"a", "b"})
      std::filesystem::copy_file(input, ranks / (name + suffix), std::filesystem::copy_options::overwrite_existing);
    std::vector<std::string> warnings;
    const auto r = pt::summarize_ranks(ranks, false, warnings);
    for (std::size_t cycle = 0; cycle < r.cycles.size(); ++cycle) (void)pt::cross_rank_table(r, cycle);
  } catch (const pt::trace_error&) {
  }

  pt::repair_plan plan;
  try {
    plan = pt::plan_repair(input);
  } catch (const pt::trace_error&) {
    return 0;  // nothing to recover: the error is the answer
  }
  const auto output = scratch_dir() / ("repaired" + suffix);
  pt::write_repaired(input, plan, output);
  // Counted as every command counts (read_result::events: the elements of
  // the trace's JSON form, a .pftrace's metadata events included).
  pt::read_result reread;
  try {
    reread = pt::read_trace(output, {});
  } catch (const pt::trace_error& e) {
    fail(std::string("the repaired trace does not read: ") + e.what());
  }
  if (reread.truncated) fail("the repaired trace is still cut off");
  // A whole input is copied as it is, traceEvents or not (validate judges it).
  if (!plan.complete && (!reread.has_trace_events || !reread.trace_events_is_array))
    fail("the repaired trace has no traceEvents array");
  if (reread.events != plan.events_kept)
    fail("repair kept " + std::to_string(plan.events_kept) + " events, the repaired trace holds " +
         std::to_string(reread.events));
  return 0;
}
