// The README's demo: an instrumented, multi-threaded HPC-style workload.
//
//   proftrace_demo --steps 8 --threads 4 --out ./log
//
// Each worker thread runs the same loop: a blocked matrix multiply on its
// rows, a Jacobi stencil sweep on its slab and a residual reduction, with
// PROF_STEP() marking every iteration, and a FLOP estimate on each block
// (PROF_MATMUL). Each block packs its slice of B into a temporary buffer:
// the demo links proftrace::new_hook, so those allocations show in the
// table's memory columns and in the memory timeline. The schedule records
// steps 2..4 and hands the trace to tensorboard_trace_handler(out), then
// writes its memory timeline (demo.memory.html); the summary table of that
// trace is printed at the end.
#include <proftrace/proftrace.hpp>

#include <barrier>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

namespace {

struct options {
  int steps = 8;
  int threads = 4;
  int n = 192;         // matrix order
  int block = 32;      // gemm block size
  int grid = 256;      // stencil grid is grid x grid
  std::string out = "proftrace-demo-out";
};

int parse_int(const char* flag, const char* text) {
  int v = 0;
  auto [end, ec] = std::from_chars(text, text + std::strlen(text), v);
  if (ec != std::errc() || *end != '\0' || v <= 0) {
    std::fprintf(stderr, "proftrace_demo: %s needs a positive integer, got '%s'\n", flag, text);
    std::exit(2);
  }
  return v;
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "proftrace_demo: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--steps") o.steps = parse_int("--steps", value());
    else if (a == "--threads") o.threads = parse_int("--threads", value());
    else if (a == "--size") o.n = parse_int("--size", value());
    else if (a == "--out") o.out = value();
    else if (a == "--help" || a == "-h") {
      std::puts("usage: proftrace_demo [--steps N] [--threads N] [--size N] [--out DIR]");
      std::exit(0);
    } else {
      std::fprintf(stderr, "proftrace_demo: unknown argument '%s' (try --help)\n", a.c_str());
      std::exit(2);
    }
  }
  o.n = (o.n + o.block - 1) / o.block * o.block;
  return o;
}

struct workload {
  int n, block, grid;
  std::vector<double> a, b, c;          // n x n
  std::vector<double> u, u_next;        // grid x grid
};

void gemm_block(workload& w, int bi, int bj, int bk) {
  PROF_SCOPE_SHAPES("gemm_block", {w.block, w.block}, {w.block, w.block});
  PROF_MATMUL(w.block, w.block, w.block);
  PROF_MEMORY_CATEGORY(proftrace::memory_category::temporary);
  const int n = w.n, bs = w.block;
  std::vector<double> packed(static_cast<std::size_t>(bs) * bs);  // B's block, contiguous
  for (int k = 0; k < bs; ++k)
    for (int j = 0; j < bs; ++j) packed[static_cast<std::size_t>(k * bs + j)] = w.b[(bk + k) * n + bj + j];
  for (int i = bi; i < bi + bs; ++i)
    for (int k = 0; k < bs; ++k) {
      const double aik = w.a[i * n + bk + k];
      const double* row = &packed[static_cast<std::size_t>(k * bs)];
      for (int j = 0; j < bs; ++j) w.c[i * n + bj + j] += aik * row[j];
    }
}

void blocked_matmul(workload& w, int row_begin, int row_end) {
  PROF_FUNCTION();
  for (int bi = row_begin; bi < row_end; bi += w.block)
    for (int bj = 0; bj < w.n; bj += w.block)
      for (int bk = 0; bk < w.n; bk += w.block) gemm_block(w, bi, bj, bk);
}

double stencil_sweep(workload& w, int row_begin, int row_end) {
  PROF_SCOPE("jacobi_sweep");
  const int g = w.grid;
  double local = 0;
  for (int i = std::max(row_begin, 1); i < std::min(row_end, g - 1); ++i)
    for (int j = 1; j < g - 1; ++j) {
      const double v = 0.25 * (w.u[(i - 1) * g + j] + w.u[(i + 1) * g + j] + w.u[i * g + j - 1] + w.u[i * g + j + 1]);
      local += std::abs(v - w.u[i * g + j]);
      w.u_next[i * g + j] = v;
    }
  return local;
}

}  // namespace

int main(int argc, char** argv) {
  const options opt = parse(argc, argv);
  workload w{opt.n, opt.block, opt.grid, {}, {}, {}, {}, {}};
  w.a.assign(static_cast<std::size_t>(w.n) * w.n, 1.0 / w.n);
  w.b.assign(w.a.size(), 2.0);
  w.c.assign(w.a.size(), 0.0);
  w.u.assign(static_cast<std::size_t>(w.grid) * w.grid, 0.0);
  for (int j = 0; j < w.grid; ++j) w.u[j] = 100.0;  // a hot edge
  w.u_next = w.u;

  // Record steps 2, 3 and 4 (one cycle), like torch's schedule(wait=1, warmup=1, active=3).
  proftrace::profile_options popts;
  if (opt.steps >= 5) popts.schedule = proftrace::schedule({.wait = 1, .warmup = 1, .active = 3, .repeat = 1});
  popts.on_trace_ready = [trace = proftrace::tensorboard_trace_handler(opt.out, "demo"),
                          timeline = std::filesystem::path(opt.out) / "demo.memory.html"](proftrace::session& p) {
    trace(p);
    p.export_memory_timeline(timeline, "cpu");
  };
  popts.record_shapes = true;
  popts.profile_memory = true;
  popts.with_stack = true;
  popts.with_flops = true;
  proftrace::profile prof(popts);

  std::vector<double> residual(static_cast<std::size_t>(opt.threads), 0.0);
  std::barrier sync(opt.threads);
  const auto worker = [&](int id) {
    const std::string name = "worker " + std::to_string(id);
    PROF_THREAD_NAME(name.c_str());
    const int rows_per = (w.n / w.block + opt.threads - 1) / opt.threads * w.block;
    const int grid_per = (w.grid + opt.threads - 1) / opt.threads;
    for (int s = 0; s < opt.steps; ++s) {
      {
        PROF_STEP();
        blocked_matmul(w, std::min(id * rows_per, w.n), std::min((id + 1) * rows_per, w.n));
        residual[static_cast<std::size_t>(id)] = stencil_sweep(w, id * grid_per, (id + 1) * grid_per);
        {
          PROF_SCOPE("wait_for_neighbours");
          sync.arrive_and_wait();
        }
        if (id == 0) {
          PROF_SCOPE("reduce_residual");
          double r = 0;
          for (double v : residual) r += v;
          PROF_COUNTER("residual", r);
          w.u.swap(w.u_next);
        }
      }
      sync.arrive_and_wait();
    }
  };

  try {
    prof.start();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "proftrace_demo: %s\n", e.what());
    return 1;
  }
  {
    std::vector<std::jthread> pool;
    for (int t = 1; t < opt.threads; ++t) pool.emplace_back(worker, t);
    worker(0);
  }
  try {
    prof.stop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "proftrace_demo: %s\n", e.what());
    return 1;
  }

  if (std::filesystem::is_directory(opt.out)) {
    std::cout << "traces written to " << std::filesystem::absolute(opt.out).string() << ":\n";
    for (const auto& entry : std::filesystem::directory_iterator(opt.out))
      std::cout << "  " << entry.path().filename().string() << "\n";
  }
  std::cout << prof.key_averages().table({.sort_by = "cpu_time_total", .row_limit = 15});
  for (const auto& d : prof.memory_stats()) {
    std::cout << "Peak " << (d.device < 0 ? std::string("host") : "device " + std::to_string(d.device))
              << " memory allocated: " << d.trace.max_allocated << " bytes; per step:";
    for (const auto& s : d.steps) std::cout << " #" << s.step << " " << s.peaks.max_allocated;
    std::cout << "\n";
  }
  return 0;
}
