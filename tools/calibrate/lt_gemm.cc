#include "tools/calibrate/lt_gemm.h"

#include <fmt/core.h>

#include "tools/calibrate/kernels.h"
#include "tools/calibrate/timing.h"

namespace parasim::calibrate {

LtContext::LtContext() {
  if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) Fail(1, "cublasLtCreate failed");
  Check(cudaMalloc(&workspace, workspace_bytes), "cudaMalloc workspace");
}

LtContext::~LtContext() {
  cudaFree(workspace);
  cublasLtDestroy(lt);
}

LtGemm::LtGemm(const LtContext& ctx, cudaStream_t stream, Dtype dtype, int64_t M, int64_t N,
               int64_t K)
    : lt_(ctx.lt),
      stream_(stream),
      workspace_(ctx.workspace),
      workspace_bytes_(ctx.workspace_bytes) {
  const bool fp8 = dtype == Dtype::kFp8;
  const cudaDataType_t in = fp8 ? CUDA_R_8F_E4M3 : dtype == Dtype::kFp16 ? CUDA_R_16F : CUDA_R_16BF;
  const cudaDataType_t out = fp8 ? CUDA_R_16BF : in;
  const size_t in_bytes = fp8 ? 1 : 2;
  if (cudaMalloc(&A_, M * K * in_bytes) != cudaSuccess ||
      cudaMalloc(&B_, K * N * in_bytes) != cudaSuccess ||
      cudaMalloc(&C_, M * N * 2) != cudaSuccess) {
    Fail(1, fmt::format("out of GPU memory for a {}x{}x{} GEMM", M, N, K));
  }
  const int element = fp8 ? 2 : dtype == Dtype::kFp16 ? 1 : 0;
  CalibFill(A_, M * K, element, 1, nullptr);
  CalibFill(B_, K * N, element, 2, nullptr);
  Check(cudaDeviceSynchronize(), "filling GEMM inputs");
  cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  if (fp8) {
    // fp8 kernels take A transposed ("TN"): A is stored K x M. No scale pointers: per-tensor
    // scales default to 1, and on an H100 with cuBLAS 13 setting A/B scale pointers made every
    // fp8 matmul return NOT_SUPPORTED (seen here, 2026-11-22); a scale is a scalar multiply in
    // the epilogue and does not change the GEMM's time.
    const cublasOperation_t t = CUBLAS_OP_T;
    cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t));
    cublasLtMatrixLayoutCreate(&la_, in, K, M, K);
  } else {
    // Column-major: C (M x N) = A (M x K) * B (K x N).
    cublasLtMatrixLayoutCreate(&la_, in, M, K, M);
  }
  cublasLtMatrixLayoutCreate(&lb_, in, K, N, K);
  cublasLtMatrixLayoutCreate(&lc_, out, M, N, M);
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &workspace_bytes_, sizeof(workspace_bytes_));
  int found = 0;
  cublasLtMatmulAlgoGetHeuristic(lt_, op_, la_, lb_, lc_, lc_, pref, 1, &heur_, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  // A call the library refuses returns at once: timing it would record a launch, not a GEMM.
  status_ = found > 0 ? Run() : CUBLAS_STATUS_NOT_SUPPORTED;
}

LtGemm::~LtGemm() {
  cublasLtMatrixLayoutDestroy(la_);
  cublasLtMatrixLayoutDestroy(lb_);
  cublasLtMatrixLayoutDestroy(lc_);
  cublasLtMatmulDescDestroy(op_);
  cudaFree(A_);
  cudaFree(B_);
  cudaFree(C_);
}

cublasStatus_t LtGemm::Run() const {
  const float alpha = 1, beta = 0;
  return cublasLtMatmul(lt_, op_, &alpha, A_, la_, B_, lb_, &beta, C_, lc_, C_, lc_, &heur_.algo,
                        workspace_, workspace_bytes_, stream_);
}

}  // namespace parasim::calibrate
