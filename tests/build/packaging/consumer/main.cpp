// The consumer: a user's program as the README writes it. It instruments a
// loop under a schedule, exports a trace, and ends with the table, the line
// users copy from torch. It checks that the trace holds its scopes, or, in a
// zero-cost build, that nothing was recorded and the table is the one-line
// note. Exit code 0 on success.
#include <proftrace/proftrace.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer TRACE.json\n");
    return 2;
  }
  proftrace::profile p({.schedule = proftrace::schedule({.skip_first = 1, .wait = 1, .warmup = 1, .active = 5})});
  p.start();
  double sum = 0;
  for (int step = 0; step < 5; ++step) {  // ends during the active steps: a partial trace
    PROF_STEP();
    for (int i = 0; i < 100; ++i) {
      PROF_SCOPE("consumer.iteration");
      sum += i * 0.5;
    }
  }
  p.stop();
  std::filesystem::remove(argv[1]);
  p.export_chrome_trace(argv[1]);
  std::ifstream in(argv[1]);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const bool has_scope = text.find("\"consumer.iteration\"") != std::string::npos;
  std::printf("sum %.1f, PROFTRACE_ENABLED=%d, trace %zu bytes, scope %s\n", sum, PROFTRACE_ENABLED, text.size(),
              has_scope ? "present" : "absent");
  const std::string table = p.key_averages().table();
  std::cout << table;
  const bool noted = table.find(PROFTRACE_ENABLED ? "Note: partial trace" : "Note: proftrace was compiled out") !=
                     std::string::npos;
  return has_scope == (PROFTRACE_ENABLED != 0) && p.has_trace() == (PROFTRACE_ENABLED != 0) && noted ? 0 : 1;
}
