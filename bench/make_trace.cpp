// Writes a synthetic Kineto-layout trace of N events, for timing
// `proftrace summary` on traces far larger than torch can summarise.
//
//   make_trace 10000000 big.pt.trace.json
//
// Eight threads, each a sequence of steps: ProfilerStep#k > forward >
// {aten::linear > aten::matmul (cpu_op with Input Dims), aten::relu}, plus a
// kernel on a stream with its launch and ac2g flow every step. Events are
// written thread by thread in start order, as PyTorch's profiler does.
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

void us3(std::string& out, long long ns) {
  char buf[32];
  auto* p = std::to_chars(buf, buf + 24, ns / 1000).ptr;
  const int frac = static_cast<int>(ns % 1000);
  *p++ = '.';
  *p++ = static_cast<char>('0' + frac / 100);
  *p++ = static_cast<char>('0' + frac / 10 % 10);
  *p++ = static_cast<char>('0' + frac % 10);
  out.append(buf, p);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_trace EVENTS OUT.json\n");
    return 2;
  }
  const long long target = std::atoll(argv[1]);
  std::FILE* f = std::fopen(argv[2], "wb");
  if (!f) {
    std::perror(argv[2]);
    return 1;
  }
  std::string out =
      "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [],\n  \"record_shapes\": 1,\n"
      "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": 1700000000000000000,\n  \"traceEvents\": [\n";
  long long written = 0, ext = 1;
  bool first = true;
  const auto event = [&](const std::string& body) {
    if (!first) out += ",\n";
    first = false;
    out += body;
    ++written;
    if (out.size() > (1 << 20)) {
      std::fwrite(out.data(), 1, out.size(), f);
      out.clear();
    }
  };
  const auto complete = [&](const char* cat, const char* name, int tid, long long ts, long long dur, const char* extra) {
    std::string e = "{\"ph\": \"X\", \"cat\": \"";
    e += cat;
    e += "\", \"name\": \"";
    e += name;
    e += "\", \"pid\": 1000, \"tid\": " + std::to_string(tid) + ", \"ts\": ";
    us3(e, ts);
    e += ", \"dur\": ";
    us3(e, dur);
    e += ", \"args\": {\"External id\": " + std::to_string(ext++);
    e += extra;
    e += "}}";
    event(e);
  };
  constexpr int threads = 8;
  const long long per_thread = target / threads;
  // `written` grows inside event(): while loops, which clang's loop
  // analysis does not expect to see modify their condition in the body.
  int t = 0;
  while (t < threads && written < target) {
    const int tid = 1000 + t;
    long long ts = 1000;
    long long step = 0;
    while (written < (t + 1) * per_thread) {
      // 10 events per step
      const std::string step_name = "ProfilerStep#" + std::to_string(step);
      complete("user_annotation", step_name.c_str(), tid, ts, 100000, "");
      complete("user_annotation", "forward", tid, ts + 1000, 90000, "");
      complete("cpu_op", "aten::linear", tid, ts + 2000, 40000, ", \"Input Dims\": [[64, 128], [256, 128], [256]]");
      complete("cpu_op", "aten::matmul", tid, ts + 3000, 30000, ", \"Input Dims\": [[64, 128], [128, 256]]");
      complete("cuda_runtime", "cudaLaunchKernel", tid, ts + 4000, 5000, ", \"cbid\": 211, \"correlation\": 7");
      complete("cpu_op", "aten::relu", tid, ts + 50000, 20000, ", \"Input Dims\": [[64, 256]]");
      complete("kernel", "gemm_kernel", 7, ts + 10000, 8000, ", \"device\": 0, \"stream\": 7, \"correlation\": 7");
      event("{\"ph\": \"s\", \"id\": 7, \"pid\": 1000, \"tid\": " + std::to_string(tid) +
            ", \"ts\": 1.000, \"cat\": \"ac2g\", \"name\": \"ac2g\"}");
      event("{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": 1000, \"tid\": " +
            std::to_string(tid) + ", \"ts\": 2.000, \"args\": {\"Bytes\": 1024}}");
      complete("user_annotation", "optimizer", tid, ts + 92000, 5000, "");
      ts += 110000;
      ++step;
    }
    ++t;
  }
  out += "\n  ],\n  \"traceName\": \"synthetic\"\n}\n";
  std::fwrite(out.data(), 1, out.size(), f);
  if (std::fclose(f) != 0) {
    std::perror(argv[2]);
    return 1;
  }
  std::printf("%lld events written to %s\n", written, argv[2]);
  return 0;
}
