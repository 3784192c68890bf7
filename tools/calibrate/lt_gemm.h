// The cuBLASLt GEMM the calibration program times (its GEMM, contention and sustained parts):
// a handle with its workspace, and one GEMM C = A B of one shape and dtype with random inputs
// and the algorithm cuBLASLt's heuristic picks.
//
//   LtContext ctx;
//   LtGemm g(ctx, stream, Dtype::kBf16, 8192, 8192, 8192);
//   if (g.status() == CUBLAS_STATUS_SUCCESS) Time(stream, 20, [&] { g.Run(); });
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "hardware/spec.h"

namespace parasim::calibrate {

// A cuBLASLt handle and its 64 MiB workspace, released at the end of the scope.
struct LtContext {
  LtContext();
  LtContext(const LtContext&) = delete;
  LtContext& operator=(const LtContext&) = delete;
  ~LtContext();
  cublasLtHandle_t lt;
  size_t workspace_bytes = 64 << 20;
  void* workspace = nullptr;
};

// One cuBLASLt GEMM C = A B (fp32 accumulation) of one shape, its inputs random.
class LtGemm {
 public:
  LtGemm(const LtContext& ctx, cudaStream_t stream, Dtype dtype, int64_t M, int64_t N, int64_t K);
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;
  ~LtGemm();
  // The first call's status: CUBLAS_STATUS_NOT_SUPPORTED when no algorithm takes the shape.
  cublasStatus_t status() const { return status_; }
  cublasStatus_t Run() const;

 private:
  cublasLtHandle_t lt_;
  cudaStream_t stream_;
  void* workspace_;
  size_t workspace_bytes_;
  void *A_ = nullptr, *B_ = nullptr, *C_ = nullptr;
  cublasLtMatmulDesc_t op_;
  cublasLtMatrixLayout_t la_, lb_, lc_;
  cublasLtMatmulHeuristicResult_t heur_{};
  cublasStatus_t status_ = CUBLAS_STATUS_NOT_SUPPORTED;
};

}  // namespace parasim::calibrate
