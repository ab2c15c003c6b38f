// The splitter of Kineto JSON on its own: reads a trace through
// kineto_json_reader (the converter's and merge's reader) and prints how
// many events and top-level members it handed over, for timing the
// splitting apart from any parsing of the events (bench/README.md).
//
//   proftrace_split_trace /tmp/big10m.pt.trace.json [--check-structure]
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string_view>

#include <proftrace_trace_io/kineto_json_reader.hpp>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: proftrace_split_trace TRACE.json [--check-structure]\n");
    return 2;
  }
  namespace pd = proftrace::detail;
  std::uint64_t events = 0, bytes = 0, members = 0;
  pd::kineto_json_reader reader({.on_event = [&](std::uint64_t, std::string_view e) { ++events, bytes += e.size(); },
                                 .on_member = [&](std::string_view, std::string_view) { ++members; }},
                                {.check_structure = argc > 2 && std::strcmp(argv[2], "--check-structure") == 0});
  try {
    pd::kineto_json_text text(argv[1]);
    if (!reader.read(text.stream())) throw std::runtime_error("the stream failed");
    const bool cut = reader.finish();
    std::printf("%llu events (%llu bytes), %llu members%s\n", static_cast<unsigned long long>(events),
                static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(members), cut ? ", cut" : "");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "proftrace_split_trace: %s: %s\n", argv[1], e.what());
    return 1;
  }
  return 0;
}
