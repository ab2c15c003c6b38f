// Writes a trace that a session streamed in Perfetto's format (not
// converted from JSON) to argv[1], with every kind of record the writer
// has: nested scopes (parents announced early), shapes, FLOPs, instants,
// counters, memory, an async range across threads, steps, a thread's name,
// call stacks.
// tests/formats/check_perfetto_proto.py parses it with Perfetto's own classes and
// compares its slices with the scopes this prints, as the session's
// aggregator saw them (events(): taken from the records, not from the file):
// one line per scope, "scope NAME START_UNIX_NS DURATION_NS".
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
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_streamed_pftrace OUT.pftrace\n");
    return 2;
  }
  proftrace::profile p({.record_shapes = true,
                        .profile_memory = true,
                        .with_stack = true,  // call stacks: string args repeated, interned once
                        .with_flops = true,
                        .retain_events = true,
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
  for (const proftrace::function_event& e : p.events())
    std::printf("scope %s %lld %lld\n", e.name.c_str(), static_cast<long long>(e.start_unix_ns),
                static_cast<long long>(e.duration_ns));
  return 0;
}
