// A session for check_caliper.py: nested scopes on three threads (a worker
// under "main" on two, a root on the third), metadata from the command
// line, exported as a Caliper profile and as Kineto JSON, and the table
// grouped by stack as the profile's readers should see it.
//
//   caliper_session OUT_DIR VERSION SIZE
//   -> OUT_DIR/run.cali.json, OUT_DIR/run.json,
//      OUT_DIR/table.tsv: call path (';'-joined, outermost first), count, CPU total (ns)
#include <proftrace/proftrace.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

namespace {

volatile double sink = 0;

void spin(int n) {
  for (int i = 0; i < n; ++i) sink = sink + std::sqrt(static_cast<double>(i));
}

void solve(int size) {
  PROF_SCOPE("solve");
  for (int i = 0; i < 3; ++i) {
    PROF_SCOPE("smooth");
    spin(size * 200);
  }
  PROF_SCOPE("residual");
  spin(size * 100);
}

void worker(int size) {
  PROF_SCOPE("worker");
  for (int k = 0; k < 2; ++k) solve(size);
}

// A frame is "file(line): name" or the name alone.
std::string frame_name(const std::string& frame) {
  const auto at = frame.find("): ");
  return at == std::string::npos ? frame : frame.substr(at + 3);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: caliper_session OUT_DIR VERSION SIZE\n";
    return 2;
  }
  const std::filesystem::path out = argv[1];
  const int size = std::stoi(argv[3]);
  proftrace::profile p({.with_stack = true});
  p.start();
  p.add_metadata("version", argv[2]);
  p.add_metadata_json("problem_size", std::to_string(size));
  {
    PROF_SCOPE("main");
    // The same path on two threads (summed in one row), and a worker at a root of its own.
    std::thread same([size] {
      PROF_SCOPE("main");
      worker(size);
    });
    std::thread root(worker, size);
    worker(size);
    same.join();
    root.join();
  }
  p.stop();
  p.export_profile(out / "run.cali.json");
  p.export_chrome_trace(out / "run.json");
  std::ofstream table(out / "table.tsv");
  for (const proftrace::event_average& row : p.key_averages(false, 64)) {
    std::string path;
    for (auto frame = row.stack.rbegin(); frame != row.stack.rend(); ++frame) path += frame_name(*frame) + ";";
    table << path << row.key << '\t' << row.count << '\t' << row.cpu_time_total_ns << '\n';
  }
  return table ? 0 : 1;
}
