#include "tools/calibrate/attention.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <vector>

#include "tools/calibrate/kernels.h"
#include "tools/calibrate/timing.h"

namespace parasim::calibrate {
namespace {

std::vector<std::array<int64_t, 3>> AttentionShapes(const Options& o) {
  std::vector<std::array<int64_t, 3>> shapes = o.attention;
  for (int64_t seq :
       o.quick ? std::vector<int64_t>{2048} : std::vector<int64_t>{1024, 2048, 4096}) {
    for (int64_t d : {64, 128}) shapes.push_back({4096 * 8 / seq * 4, seq, d});  // 32 heads at 4k
  }
  return shapes;
}

// The tensors of one shape: Q, K, V, O, dO, dQ, dK, dV (batch x seq x head_dim) and the scores P
// and dP (batch x seq x seq), bf16.
struct AttentionTensors {
  std::vector<void*> t = std::vector<void*>(8, nullptr);  // Q K V O dO dQ dK dV
  void* P = nullptr;
  void* dP = nullptr;
};

// False when they do not fit; what was allocated is freed by FreeTensors either way.
bool AllocateTensors(size_t qkv, size_t scores, AttentionTensors* x) {
  bool ok = cudaMalloc(&x->P, scores) == cudaSuccess && cudaMalloc(&x->dP, scores) == cudaSuccess;
  for (void*& p : x->t) ok = ok && cudaMalloc(&p, qkv) == cudaSuccess;
  return ok;
}

void FreeTensors(AttentionTensors* x) {
  for (void* p : x->t) cudaFree(p);
  cudaFree(x->P);
  cudaFree(x->dP);
}

// Materialised ("standard") attention for `B` heads of S x D: forward QK^T, softmax, AV;
// backward dV = P^T dO, dP = dO V^T, softmax backward, dQ = dS K, dK = dS^T Q. Row-major
// tensors, cuBLAS (column-major) sees their transposes.
AttentionPoint TimeAttention(cublasHandle_t h, cudaStream_t stream, const Options& o, int64_t B,
                             int64_t S, int64_t D, size_t qkv, size_t scores,
                             const AttentionTensors& x) {
  const std::vector<void*>& t = x.t;
  void *P = x.P, *dP = x.dP;
  for (size_t i = 0; i < t.size(); ++i) CalibFill(t[i], qkv / 2, 0, 10 + i, nullptr);
  cudaMemset(P, 0, scores);
  cudaMemset(dP, 0, scores);
  void *Q = t[0], *K = t[1], *V = t[2], *O = t[3], *dO = t[4], *dQ = t[5], *dK = t[6], *dV = t[7];
  const float one = 1, zero = 0;
  const long long sq = S * D, ss = S * S;
  auto gemm = [&](cublasOperation_t ta, cublasOperation_t tb, int64_t mm, int64_t nn, int64_t kk,
                  const void* A, int64_t lda, long long sa, const void* Bm, int64_t ldb,
                  long long sb, void* C, int64_t ldc, long long sc) {
    cublasGemmStridedBatchedEx(h, ta, tb, mm, nn, kk, &one, A, CUDA_R_16BF, lda, sa, Bm,
                               CUDA_R_16BF, ldb, sb, &zero, C, CUDA_R_16BF, ldc, sc, B,
                               CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  const auto N = CUBLAS_OP_N, T = CUBLAS_OP_T;
  const int runs = o.quick ? 5 : 10;
  auto [tf, sf] = Time(stream, runs, [&] {
    gemm(T, N, S, S, D, K, D, sq, Q, D, sq, P, S, ss);  // S^T = K Q^T
    CalibSoftmax(P, static_cast<size_t>(B) * S, static_cast<int>(S), stream);
    gemm(N, N, D, S, S, V, D, sq, P, S, ss, O, D, sq);  // O^T = V^T P^T
  });
  auto [tb, sb] = Time(stream, runs, [&] {
    gemm(N, T, D, S, S, dO, D, sq, P, S, ss, dV, D, sq);  // dV^T = dO^T P
    gemm(T, N, S, S, D, V, D, sq, dO, D, sq, dP, S, ss);  // dP^T = V dO^T
    CalibSoftmaxBackward(P, dP, static_cast<size_t>(B) * S, static_cast<int>(S), stream);
    gemm(N, N, D, S, S, K, D, sq, dP, S, ss, dQ, D, sq);  // dQ^T = K^T dS^T
    gemm(N, T, D, S, S, Q, D, sq, dP, S, ss, dK, D, sq);  // dK^T = Q^T dS
  });
  AttentionPoint a;
  a.kind = "standard";
  a.batch = B;
  a.seq = S;
  a.head_dim = D;
  a.forward = Duration::Seconds(tf);
  a.backward = Duration::Seconds(tb);
  a.spread = std::max(sf, sb);
  return a;
}

}  // namespace

void MeasureAttention(const Options& o, Measurements* m) {
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) Fail(1, "cublasCreate failed");
  cudaStream_t stream;
  Check(cudaStreamCreate(&stream), "cudaStreamCreate");
  cublasSetStream(h, stream);
  for (const auto& [B, S, D] : AttentionShapes(o)) {
    if (S > kCalibMaxRow) {
      fmt::print(stderr, "attention {}x{}x{} skipped: rows longer than {}\n", B, S, D,
                 kCalibMaxRow);
      continue;
    }
    const size_t qkv = static_cast<size_t>(B) * S * D * 2,
                 scores = static_cast<size_t>(B) * S * S * 2;
    AttentionTensors x;
    if (!AllocateTensors(qkv, scores, &x)) {
      fmt::print(stderr, "attention {}x{}x{} skipped: out of GPU memory\n", B, S, D);
      cudaGetLastError();
    } else {
      m->attention.push_back(TimeAttention(h, stream, o, B, S, D, qkv, scores, x));
    }
    FreeTensors(&x);
  }
  cublasDestroy(h);
  cudaStreamDestroy(stream);
}

}  // namespace parasim::calibrate
