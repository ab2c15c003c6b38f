// Writes a trace that a session streamed in Perfetto's format (not
// converted from JSON) to argv[1], with every kind of record the writer
// has: nested scopes (parents announced early), shapes, FLOPs, instants,
// counters, memory, an async range across threads, steps, a thread's name.
// tests/check_perfetto_proto.py parses it with Perfetto's own classes; the
// same session exported as JSON to argv[2], when given, is what its slices
// must equal.
#include <proftrace/proftrace.hpp>

#include <cstdio>
#include <thread>

namespace {
void work(int steps) {
  for (int i = 0; i < steps; ++i) {
    PROF_STEP();
    PROF_SCOPE("outer");
    {
      PROF_SCOPE_SHAPES("matmul", {2, 3}, {3, 4});
      PROF_MATMUL(2, 3, 4);
    }
    PROF_INSTANT("tick");
    PROF_COUNTER("queue", static_cast<double>(i));
    PROF_ALLOC(reinterpret_cast<void*>(0x1000 + i), 64);
    PROF_FREE(reinterpret_cast<void*>(0x1000 + i));
  }
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: write_streamed_pftrace OUT.pftrace [OUT.json]\n");
    return 2;
  }
  proftrace::profile p({.record_shapes = true,
                        .profile_memory = true,
                        .with_flops = true,
                        .stream_format = proftrace::trace_format::pftrace});
  p.start();
  proftrace::async_range range = PROF_ASYNC_RANGE("transfer");
  std::thread t([&] {
    PROF_THREAD_NAME("worker");
    work(5);
    range.end();
  });
  work(5);
  t.join();
  p.stop();
  p.export_chrome_trace(argv[1]);
  if (argc == 3) p.export_chrome_trace(argv[2]);
  return 0;
}
