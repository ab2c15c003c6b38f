// A CUDA program profiled with proftrace: allocations, copies and kernels on
// two streams inside nested scopes. On a GPU its trace shows every kernel
// under the scope that launched it, with flows, device properties and the
// table's CUDA columns; without a driver it warns once and records the CPU
// side.
//
//   proftrace_cuda_streams [--out DIR]
#include <cuda_runtime.h>

#include <proftrace/proftrace.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

namespace {

__global__ void axpy(float a, const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}

__global__ void scale(float* y, float s, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] *= s;
}

bool check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "proftrace_cuda_streams: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

// One step: returns false when the GPU part could not run.
bool step(int n, cudaStream_t s1, cudaStream_t s2) {
  PROF_FUNCTION();
  std::vector<float> host(static_cast<std::size_t>(n), 1.0f);
  float *x = nullptr, *y = nullptr;
  {
    PROF_SCOPE("allocate");
    if (!check(cudaMalloc(&x, n * sizeof(float)), "cudaMalloc") || !check(cudaMalloc(&y, n * sizeof(float)), "cudaMalloc"))
      return false;
  }
  {
    PROF_SCOPE("copy_in");
    cudaMemcpyAsync(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice, s1);
    cudaMemsetAsync(y, 0, n * sizeof(float), s2);
  }
  {
    PROF_SCOPE("compute");
    const int threads = 256, blocks = (n + threads - 1) / threads;
    for (int k = 0; k < 3; ++k) {
      PROF_OP("axpy");
      axpy<<<blocks, threads, 0, s1>>>(2.0f, x, y, n);
    }
    {
      PROF_OP("scale");
      cudaStreamSynchronize(s1);
      scale<<<blocks, threads, 0, s2>>>(y, 0.5f, n);
    }
  }
  {
    PROF_SCOPE("copy_out");
    cudaMemcpyAsync(host.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost, s2);
    cudaStreamSynchronize(s2);
  }
  cudaFree(x);
  cudaFree(y);
  return check(cudaGetLastError(), "kernels");
}

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path out = "proftrace-cuda-out";
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) out = argv[++i];
  std::filesystem::create_directories(out);

  // CUDA named, as torch's examples do: where it cannot be had, one warning
  // says why (default activities would leave it out silently).
  proftrace::profile p({.activities = {proftrace::activity::cpu, proftrace::activity::cuda}});
  p.start();
  bool gpu = false;
  cudaStream_t s1 = nullptr, s2 = nullptr;
  if (check(cudaStreamCreate(&s1), "cudaStreamCreate") && check(cudaStreamCreate(&s2), "cudaStreamCreate")) {
    gpu = true;
    for (int it = 0; it < 3; ++it) gpu = step(1 << 20, s1, s2) && gpu;
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
  } else {
    PROF_SCOPE("cpu_only");  // no device: the CPU side is still profiled
  }
  p.stop();
  const auto trace = out / "cuda_streams.pt.trace.json";
  p.export_chrome_trace(trace);
  std::cout << "trace: " << trace.string() << (gpu ? "" : " (no CUDA device: CPU profile only)") << "\n";
  std::cout << p.key_averages().table({.sort_by = gpu ? "self_cuda_time_total" : "self_cpu_time_total"});
  return 0;
}
