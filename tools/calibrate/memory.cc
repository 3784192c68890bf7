#include "tools/calibrate/memory.h"

#include <cuda_runtime.h>

#include <string>
#include <utility>
#include <vector>

#include "tools/calibrate/kernels.h"
#include "tools/calibrate/timing.h"

namespace parasim::calibrate {

void MeasureMemory(const Options& o, Measurements* m) {
  cudaStream_t stream;
  Check(cudaStreamCreate(&stream), "cudaStreamCreate");
  for (double gib : o.quick ? std::vector<double>{0.25, 1} : std::vector<double>{0.25, 1, 2}) {
    const size_t n = static_cast<size_t>(gib * (1 << 30) / sizeof(float));
    float *a, *b, *c;
    Check(cudaMalloc(&a, n * sizeof(float)), "cudaMalloc");
    Check(cudaMalloc(&b, n * sizeof(float)), "cudaMalloc");
    Check(cudaMalloc(&c, n * sizeof(float)), "cudaMalloc");
    cudaMemset(a, 0, n * sizeof(float));
    cudaMemset(b, 0, n * sizeof(float));
    cudaMemset(c, 0, n * sizeof(float));
    auto [tc, sc] = Time(stream, 10, [&] { CalibCopy(b, a, n, stream); });
    m->memory.push_back({"copy", Bytes(2.0 * n * sizeof(float)), Duration::Seconds(tc), sc});
    auto [tt, st] = Time(stream, 10, [&] { CalibTriad(a, b, c, 3.0f, n, stream); });
    m->memory.push_back({"triad", Bytes(3.0 * n * sizeof(float)), Duration::Seconds(tt), st});
    // The same buffers as bf16: 2n values.
    const size_t h = 2 * n;
    auto [tg, sg] = Time(stream, 10, [&] { CalibGelu(a, b, h, stream); });
    m->memory.push_back({"elementwise", Bytes(4.0 * h), Duration::Seconds(tg), sg});
    // Rows as the step has them: scores (seq 2048) for softmax, hidden 8192 for LayerNorm.
    for (auto [kernel, cols] : {std::pair{"softmax", 2048}, {"layernorm", 8192}}) {
      const size_t rows = h / cols;
      float* gamma = nullptr;
      Check(cudaMalloc(&gamma, 2 * cols * sizeof(float)), "cudaMalloc");
      cudaMemset(gamma, 0, 2 * cols * sizeof(float));
      auto [tk, sk] = Time(stream, 10, [&] {
        if (kernel == std::string("softmax")) {
          CalibSoftmax(a, rows, cols, stream);
        } else {
          CalibLayerNorm(a, b, gamma, gamma + cols, rows, cols, stream);
        }
      });
      m->memory.push_back({kernel, Bytes(4.0 * rows * cols), Duration::Seconds(tk), sk});
      cudaFree(gamma);
    }
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
  }
  Check(cudaStreamSynchronize(stream), "memory kernels");
  auto [tl, sl] = Time(stream, 200, [&] { CalibEmpty(stream); });
  (void)sl;
  m->launch = Duration::Seconds(tl);
  cudaStreamDestroy(stream);
}

}  // namespace parasim::calibrate
