#include "tools/calibrate/sustained.h"

#include <cuda_runtime.h>

#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include "tools/calibrate/lt_gemm.h"
#include "tools/calibrate/median.h"
#include "tools/calibrate/timing.h"

namespace parasim::calibrate {

void MeasureSustained(const Options& o, Measurements* m) {
  LtContext ctx;
  cudaStream_t stream;
  Check(cudaStreamCreate(&stream), "cudaStreamCreate");
  SustainedPoint p;
  p.m = p.n = p.k = 8192;
  p.seconds = o.quick ? 5 : 30;
  {
    LtGemm g(ctx, stream, Dtype::kBf16, p.m, p.n, p.k);
    if (g.status() == CUBLAS_STATUS_SUCCESS) {
      Check(cudaDeviceSynchronize(), "idle before the sustained run");
      // Let the GPU drop to idle clocks first, as it is between jobs.
      std::this_thread::sleep_for(std::chrono::seconds(2));
      std::vector<std::pair<double, double>> batches;  // (seconds since start, GEMM time)
      const auto start = std::chrono::steady_clock::now();
      double elapsed = 0;
      while (elapsed < p.seconds) {
        auto [t, spread] = Time(stream, 10, [&] { g.Run(); });
        (void)spread;
        elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        batches.push_back({elapsed, t});
      }
      std::vector<double> first, last;
      for (const auto& [at, t] : batches) {
        if (at <= 1.0) first.push_back(t);
        if (at >= 0.75 * p.seconds) last.push_back(t);
      }
      p.first = Duration::Seconds(Median(first));
      p.last = Duration::Seconds(Median(last));
      m->sustained.push_back(p);
    }
  }
  cudaStreamDestroy(stream);
}

}  // namespace parasim::calibrate
