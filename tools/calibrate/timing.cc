#include "tools/calibrate/timing.h"

#include <fmt/core.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tools/calibrate/median.h"

namespace parasim::calibrate {

[[noreturn]] void Fail(int code, const std::string& msg) {
  fmt::print(stderr, "parasim-calibrate: {}\n", msg);
  std::exit(code);
}

void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) Fail(1, fmt::format("{}: {}", what, cudaGetErrorString(e)));
}

std::pair<double, double> Time(cudaStream_t stream, int runs, const std::function<void()>& fn) {
  cudaEvent_t a, b;
  Check(cudaEventCreate(&a), "cudaEventCreate");
  Check(cudaEventCreate(&b), "cudaEventCreate");
  for (int i = 0; i < kWarmup; ++i) fn();
  Check(cudaStreamSynchronize(stream), "warm-up");
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    cudaEventRecord(a, stream);
    fn();
    cudaEventRecord(b, stream);
    Check(cudaEventSynchronize(b), "timed run");
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms * 1e-3);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return MedianSpread(std::move(t));
}

}  // namespace parasim::calibrate
