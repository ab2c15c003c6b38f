// bench/e2e.cpp — end-to-end overhead: the workloads of e2e_workload.cpp
// (one scope per tile, tiles of about 100 ns and 1 us of work) run plain,
// compiled out, compiled in with the session's recording off, and
// recording, batch against batch in rotating order inside one benchmark
// iteration, so all four see the same machine. Counters: the plain
// variant's time per tile, and each variant's overhead over plain in percent.
#include <benchmark/benchmark.h>

#include <proftrace/macros.hpp>
#include <proftrace/profile.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#define PROFTRACE_E2E_DECLARE(ns)                                                \
  namespace ns {                                                                 \
  void blocked_matmul(const float* a, const float* b, float* c, int n, int tile); \
  float stencil_sweep(const float* in, float* out, int n, int tile);             \
  }
PROFTRACE_E2E_DECLARE(plain)
PROFTRACE_E2E_DECLARE(compiled_out)
PROFTRACE_E2E_DECLARE(instrumented)

namespace {

namespace d = proftrace::detail;

enum variant { v_plain, v_compiled_out, v_runtime_off, v_recording, n_variants };
constexpr const char* variant_names[n_variants] = {"plain", "compiled_out", "runtime_off", "recording"};

struct workload {
  const char* scope;  // the tile scope's name
  std::int64_t tiles;  // scopes per call
  // Runs one call of the workload in the given compiled variant (0 plain,
  // 1 compiled out, 2 instrumented).
  void (*run)(int compiled, std::vector<float>& x, std::vector<float>& y, std::vector<float>& z);
};

template <int N, int Tile>
void matmul(int compiled, std::vector<float>& a, std::vector<float>& b, std::vector<float>& c) {
  auto* f = compiled == 0 ? plain::blocked_matmul : compiled == 1 ? compiled_out::blocked_matmul : instrumented::blocked_matmul;
  f(a.data(), b.data(), c.data(), N, Tile);
  benchmark::DoNotOptimize(c.data());
  benchmark::ClobberMemory();
}

template <int N, int Tile>
void stencil(int compiled, std::vector<float>& in, std::vector<float>& out, std::vector<float>&) {
  auto* f = compiled == 0 ? plain::stencil_sweep : compiled == 1 ? compiled_out::stencil_sweep : instrumented::stencil_sweep;
  benchmark::DoNotOptimize(f(in.data(), out.data(), N, Tile));
  in.swap(out);
}

template <int N, int Tile>
constexpr workload matmul_workload{"matmul.tile", std::int64_t{N / Tile} * (N / Tile) * (N / Tile), matmul<N, Tile>};
template <int N, int Tile>
constexpr workload stencil_workload{"stencil.tile", std::int64_t{N - 2} * ((N - 2) / Tile), stencil<N, Tile>};

void run_e2e(benchmark::State& state, const workload& w, std::size_t elements) {
  std::vector<float> x(elements, 1.0f), y(elements, 0.5f), z(elements, 0.0f);
  proftrace::profile p;
  p.start();
  const std::uint32_t recording_state = d::session_state.load();
  w.run(2, x, y, z);  // warm: caches, the thread's ring
  p.flush();
  double total[n_variants] = {};
  std::int64_t recorded_calls = 1;
  unsigned rotation = 0;
  for (auto _ : state) {
    double took[n_variants];
    for (unsigned k = 0; k < n_variants; ++k) {
      const auto v = static_cast<variant>((rotation + k) % n_variants);
      if (v == v_runtime_off) d::session_state.store(d::state_session);
      const auto t0 = std::chrono::steady_clock::now();
      w.run(v == v_plain ? 0 : v == v_compiled_out ? 1 : 2, x, y, z);
      took[v] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (v == v_runtime_off) d::session_state.store(recording_state);
      if (v == v_recording) {
        ++recorded_calls;
        p.flush();  // untimed: the ring starts each recorded call empty
      }
    }
    rotation = (rotation + 1) % n_variants;
    for (unsigned v = 0; v < n_variants; ++v) total[v] += took[v];
    state.SetIterationTime(took[v_recording]);
  }
  p.stop();

  const auto avg = p.key_averages();
  std::int64_t counted = 0;
  for (const auto& row : avg.rows)
    if (row.key == w.scope) counted += row.count;
  if (avg.losses.total() != 0) state.SkipWithError(("lost " + std::to_string(avg.losses.total()) + " events").c_str());
  else if (counted != recorded_calls * w.tiles)
    state.SkipWithError(("counted " + std::to_string(counted) + " tiles, expected " +
                         std::to_string(recorded_calls * w.tiles)).c_str());
  const double tiles = static_cast<double>(state.iterations()) * static_cast<double>(w.tiles);
  state.counters["plain_per_tile"] = total[v_plain] / tiles;
  for (unsigned v = 1; v < n_variants; ++v)
    state.counters[std::string("overhead_") + variant_names[v] + "_pct"] =
        total[v_plain] > 0 ? 100.0 * (total[v] / total[v_plain] - 1.0) : 0.0;
  state.counters["scopes_per_call"] = static_cast<double>(w.tiles);
}

// Tiles of 6x6x6 (about 100 ns of work on the bench machine) and 16x16x16
// (about 1 us); the plain_per_tile counter says what they took.
void BM_e2e_matmul_100ns(benchmark::State& s) { run_e2e(s, matmul_workload<96, 6>, 96 * 96); }
void BM_e2e_matmul_1us(benchmark::State& s) { run_e2e(s, matmul_workload<256, 16>, 256 * 256); }
// Row segments of 128 points (about 100 ns) and 1024 points (about 1 us).
void BM_e2e_stencil_100ns(benchmark::State& s) { run_e2e(s, stencil_workload<258, 128>, 258 * 258); }
void BM_e2e_stencil_1us(benchmark::State& s) { run_e2e(s, stencil_workload<1026, 1024>, 1026 * 1026); }

}  // namespace

BENCHMARK(BM_e2e_matmul_100ns)->UseManualTime();
BENCHMARK(BM_e2e_matmul_1us)->UseManualTime();
BENCHMARK(BM_e2e_stencil_100ns)->UseManualTime();
BENCHMARK(BM_e2e_stencil_1us)->UseManualTime();

BENCHMARK_MAIN();
