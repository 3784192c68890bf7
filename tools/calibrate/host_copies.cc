#include "tools/calibrate/host_copies.h"

#include <cuda_runtime.h>
#include <fmt/core.h>

#include <cstdio>
#include <cstring>
#include <utility>

#include "tools/calibrate/timing.h"

namespace parasim::calibrate {

void MeasureHostCopies(const Options& o, Measurements* m) {
  const size_t max = o.quick ? (size_t{256} << 20) : (size_t{1} << 30);
  void* host = nullptr;
  void* dev = nullptr;
  if (cudaMallocHost(&host, max) != cudaSuccess || cudaMalloc(&dev, max) != cudaSuccess) {
    fmt::print(stderr, "host copies skipped: cannot allocate {} MiB pinned\n", max >> 20);
    cudaGetLastError();
    cudaFreeHost(host);
    return;
  }
  std::memset(host, 0, max);
  cudaStream_t stream;
  Check(cudaStreamCreate(&stream), "cudaStreamCreate");
  for (size_t bytes = size_t{1} << 20; bytes <= max; bytes *= 4) {
    for (auto [dir, kind] :
         {std::pair{"h2d", cudaMemcpyHostToDevice}, {"d2h", cudaMemcpyDeviceToHost}}) {
      void* dst = kind == cudaMemcpyHostToDevice ? dev : host;
      const void* src = kind == cudaMemcpyHostToDevice ? host : dev;
      auto [t, sp] =
          Time(stream, o.quick ? 5 : 10, [&] { cudaMemcpyAsync(dst, src, bytes, kind, stream); });
      m->host_copies.push_back({dir, Bytes(static_cast<double>(bytes)), Duration::Seconds(t), sp});
    }
  }
  cudaFreeHost(host);
  cudaFree(dev);
  cudaStreamDestroy(stream);
}

}  // namespace parasim::calibrate
