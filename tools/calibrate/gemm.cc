#include "tools/calibrate/gemm.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/core.h>

#include <array>
#include <cstdio>
#include <vector>

#include "tools/calibrate/lt_gemm.h"
#include "tools/calibrate/timing.h"

namespace parasim::calibrate {
namespace {

// Times C = A B with cuBLASLt for one shape; false when no algorithm takes it.
bool TimeGemm(const LtContext& ctx, cudaStream_t stream, Dtype dtype, int64_t M, int64_t N,
              int64_t K, int runs, Measurements* m) {
  LtGemm g(ctx, stream, dtype, M, N, K);
  if (g.status() != CUBLAS_STATUS_SUCCESS) {
    fmt::print(stderr, "{} GEMM {}x{}x{} skipped: {}\n", DtypeName(dtype), M, N, K,
               cublasGetStatusString(g.status()));
    return false;
  }
  auto [t, spread] = Time(stream, runs, [&] { g.Run(); });
  m->gemm.push_back({dtype, M, N, K, Duration::Seconds(t), spread});
  return true;
}

}  // namespace

void MeasureGemms(const Options& o, int device, Measurements* m) {
  LtContext ctx;
  cudaStream_t stream;
  Check(cudaStreamCreate(&stream), "cudaStreamCreate");
  std::vector<std::array<int64_t, 3>> grid;
  const std::vector<int64_t> dims = o.quick
                                        ? std::vector<int64_t>{1024, 4096, 8192}
                                        : std::vector<int64_t>{512, 1024, 2048, 4096, 8192, 16384};
  for (int64_t a : dims) {
    for (int64_t b : dims) grid.push_back({a, b, 4096});
    grid.push_back({4096, 4096, a});
  }
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  const bool has_fp8 = major * 10 + minor >= 89;  // Ada (8.9) and Hopper (9.0) have fp8 cores
  const int runs = o.quick ? 5 : 20;
  int refused = 0;
  for (Dtype dt : {Dtype::kBf16, Dtype::kFp16, Dtype::kFp8}) {
    if (dt == Dtype::kFp8 && !has_fp8) {
      fmt::print(stderr, "fp8 GEMMs skipped: compute capability {}.{} has no fp8 tensor cores\n",
                 major, minor);
      continue;
    }
    std::vector<std::array<int64_t, 3>> shapes = grid;
    if (dt != Dtype::kFp16 && (dt != Dtype::kFp8 || o.fp8_shapes)) {
      shapes.insert(shapes.begin(), o.shapes.begin(), o.shapes.end());
    }
    for (const auto& [M, N, K] : shapes) {
      // fp8 kernels need every dimension a multiple of 16.
      if (dt == Dtype::kFp8 && (M % 16 || N % 16 || K % 16)) {
        ++refused;
        continue;
      }
      if (!TimeGemm(ctx, stream, dt, M, N, K, runs, m)) ++refused;
    }
  }
  if (refused > 0) {
    fmt::print(stderr, "{} GEMM shape(s) had no cuBLASLt algorithm (fp8 needs multiples of 16)\n",
               refused);
  }
  cudaStreamDestroy(stream);
}

}  // namespace parasim::calibrate
