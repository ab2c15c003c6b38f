// Records one session and exports its trace twice, to argv[1] (Kineto JSON)
// and argv[2] (an OTF2 archive), for check_otf2.py to compare: two threads
// of nested scopes, three ProfilerSteps, a counter, FLOPs and memory.
#include <proftrace/proftrace.hpp>

#include <cstdio>
#include <string>
#include <thread>

namespace {
void work(int i) {
  PROF_SCOPE("outer");
  {
    PROF_SCOPE("matmul");
    PROF_MATMUL(2, 3, 4);
  }
  PROF_COUNTER("queue", static_cast<double>(i));
  PROF_ALLOC(reinterpret_cast<void*>(0x1000 + i), 64);
  PROF_FREE(reinterpret_cast<void*>(0x1000 + i));
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: write_otf2_session OUT.json OUT.otf2\n");
    return 2;
  }
  const std::string json = argv[1], otf2 = argv[2];
  proftrace::profile p({.schedule = proftrace::schedule({.wait = 0, .warmup = 0, .active = 3, .repeat = 1}),
                        .on_trace_ready =
                            [&](proftrace::session& s) {
                              s.export_chrome_trace(json);
                              s.export_chrome_trace(otf2);
                            },
                        .profile_memory = true,
                        .with_flops = true});
  p.start();
  for (int step = 0; step < 3; ++step) {
    std::thread t([step] {
      PROF_THREAD_NAME("worker");
      work(step);
    });
    work(step);
    t.join();
    p.step();
  }
  p.stop();
  return 0;
}
