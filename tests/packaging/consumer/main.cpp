// The consumer: instruments a loop, exports a trace, and checks that what
// it wrote holds its scopes (or, in a zero-cost build, that it recorded
// nothing). Exit code 0 on success.
#include <proftrace/proftrace.hpp>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer TRACE.json\n");
    return 2;
  }
  proftrace::profile p;
  p.start();
  double sum = 0;
  for (int i = 0; i < 100; ++i) {
    PROF_SCOPE("consumer.iteration");
    sum += i * 0.5;
  }
  p.stop();
  p.export_chrome_trace(argv[1]);
  std::ifstream in(argv[1]);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const bool has_scope = text.find("\"consumer.iteration\"") != std::string::npos;
  std::printf("sum %.1f, PROFTRACE_ENABLED=%d, trace %zu bytes, scope %s\n", sum, PROFTRACE_ENABLED, text.size(),
              has_scope ? "present" : "absent");
  return has_scope == (PROFTRACE_ENABLED != 0) ? 0 : 1;
}
