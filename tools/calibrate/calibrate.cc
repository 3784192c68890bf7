// parasim-calibrate: measures the GPUs of this node for `parasim fit`.
//
//   parasim-calibrate --out measurements.yaml [--shapes MxNxK,...] [--fp8-shapes]
//                     [--attention BxSxD,...] [--max-bytes 4GiB] [--only PART,...] [--quick]
//
// - GEMMs (cuBLASLt, fp32 accumulation) in bf16 and fp16, and fp8 (E4M3 in, bf16 out, per-tensor
//   scales) where the GPU has it (compute capability 8.9 and up), over a grid of shapes plus the
//   given ones (`parasim calibrate --scenario` passes the step's own; --fp8-shapes times those in
//   fp8 too).
// - HBM: copy and triad; the step's memory-bound kernels: GeLU, row softmax, LayerNorm.
// - Attention as `attention: standard` runs it: QK^T and AV (cuBLAS strided-batched GEMMs) around
//   a softmax, forward, and the four backward GEMMs around the softmax backward.
// - Launch overhead (an empty kernel) and pinned host <-> GPU copies.
// - NCCL all-reduce, all-gather, reduce-scatter, all-to-all (grouped send/recv) and send/recv,
//   1 KiB to --max-bytes (4 GiB by default; fewer if memory is short), on groups of 2, 4, ... and
//   all visible GPUs of the node, in one process. Several nodes: run nccl-tests under mpirun and
//   give its logs to `parasim fit` (docs/CALIBRATION.md).
// - Contention: GEMMs of a TP-8 layer and a copy, alone and beside a stand-in for a NCCL kernel
//   holding 8, 16 or 32 SMs (spinning, or streaming HBM).
// - Sustained clocks: 8192^3 GEMMs back to back, the first second against the last quarter.
// --only runs some of these parts: gemm, memory, attention, host, collectives, contention,
// sustained. Each point: warm-up runs, then timed runs (CUDA events; host clock around NCCL
// groups); the median is written with the spread ((max - min) / median). Exit 2 with a clear
// message when no GPU is usable or an argument is wrong.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/core.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "hardware/measurements.h"
#include "hardware/spec.h"
#include "sim/io.h"
#include "sim/parse_units.h"
#include "tools/calibrate/kernels.h"

namespace parasim {
namespace {

constexpr int kWarmup = 3;

struct Options {
  std::string out = "measurements.yaml";
  std::vector<std::array<int64_t, 3>> shapes;
  std::vector<std::array<int64_t, 3>> attention;  // batch x seq x head_dim
  bool fp8_shapes = false;
  size_t max_bytes = size_t{4} << 30;
  bool quick = false;
  // Parts to run (--only); all when empty.
  std::vector<std::string> only;
  bool Runs(const std::string& part) const {
    return only.empty() || std::find(only.begin(), only.end(), part) != only.end();
  }
};

constexpr const char* kParts[] = {"gemm",        "memory",     "attention", "host",
                                  "collectives", "contention", "sustained"};

[[noreturn]] void Fail(int code, const std::string& msg) {
  fmt::print(stderr, "parasim-calibrate: {}\n", msg);
  std::exit(code);
}

void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) Fail(1, fmt::format("{}: {}", what, cudaGetErrorString(e)));
}

// Median and spread ((max - min) / median) of `runs` timings of `fn` on `stream`.
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
  std::sort(t.begin(), t.end());
  const double med = t[t.size() / 2];
  return {med, med > 0 ? (t.back() - t.front()) / med : 0.0};
}

// The catalog id of the device, from the names the catalog lists for each GPU ("" if none).
std::string CatalogId(const std::string& name) {
  static const StatusOr<HardwareCatalog> cat = LoadHardwareCatalog();
  const GpuSpec* g = cat.ok() ? cat->FindGpuByDevice(name) : nullptr;
  return g ? g->id : "";
}

// A cuBLASLt handle and its 64 MiB workspace, released at the end of the scope.
struct LtContext {
  LtContext() {
    if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) Fail(1, "cublasLtCreate failed");
    Check(cudaMalloc(&workspace, workspace_bytes), "cudaMalloc workspace");
  }
  LtContext(const LtContext&) = delete;
  LtContext& operator=(const LtContext&) = delete;
  ~LtContext() {
    cudaFree(workspace);
    cublasLtDestroy(lt);
  }
  cublasLtHandle_t lt;
  size_t workspace_bytes = 64 << 20;
  void* workspace = nullptr;
};

// One cuBLASLt GEMM C = A B (fp32 accumulation) of one shape, its inputs random.
class LtGemm {
 public:
  LtGemm(const LtContext& ctx, cudaStream_t stream, Dtype dtype, int64_t M, int64_t N, int64_t K)
      : lt_(ctx.lt),
        stream_(stream),
        workspace_(ctx.workspace),
        workspace_bytes_(ctx.workspace_bytes) {
    const bool fp8 = dtype == Dtype::kFp8;
    const cudaDataType_t in = fp8                     ? CUDA_R_8F_E4M3
                              : dtype == Dtype::kFp16 ? CUDA_R_16F
                                                      : CUDA_R_16BF;
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
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;
  ~LtGemm() {
    cublasLtMatrixLayoutDestroy(la_);
    cublasLtMatrixLayoutDestroy(lb_);
    cublasLtMatrixLayoutDestroy(lc_);
    cublasLtMatmulDescDestroy(op_);
    cudaFree(A_);
    cudaFree(B_);
    cudaFree(C_);
  }
  // The first call's status: CUBLAS_STATUS_NOT_SUPPORTED when no algorithm takes the shape.
  cublasStatus_t status() const { return status_; }
  cublasStatus_t Run() const {
    const float alpha = 1, beta = 0;
    return cublasLtMatmul(lt_, op_, &alpha, A_, la_, B_, lb_, &beta, C_, lc_, C_, lc_, &heur_.algo,
                          workspace_, workspace_bytes_, stream_);
  }

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

void Gemms(const Options& o, int device, Measurements* m) {
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

void Memory(const Options& o, Measurements* m) {
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

// Compute beside communication. NCCL runs a collective as a kernel of one block per channel that
// holds its SM until the collective ends, waiting on the network or streaming data through HBM;
// GEMMs and memory-bound kernels of the step that overlap it get the other SMs. Each victim is
// timed alone, then beside a stand-in holding `blocks` SMs that spins (a collective waiting on
// the network) or streams HBM at full rate (the copies and reductions of NVLink traffic).
void Contention(const Options& o, int device, Measurements* m) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  LtContext ctx;
  cudaStream_t victim, background;
  Check(cudaStreamCreateWithFlags(&victim, cudaStreamNonBlocking), "cudaStreamCreate");
  Check(cudaStreamCreateWithFlags(&background, cudaStreamNonBlocking), "cudaStreamCreate");
  // The stop flag lives in GPU memory (as NCCL's flags do), set by a copy on its own stream:
  // polling mapped host memory across PCIe from many SMs slowed every other kernel 3-30x on an
  // H100 (seen here, 2026-11-22), which no collective does.
  int* stop_dev = nullptr;
  Check(cudaMalloc(&stop_dev, sizeof(int)), "cudaMalloc");
  int* flag_host = nullptr;
  Check(cudaHostAlloc(&flag_host, 2 * sizeof(int), cudaHostAllocDefault), "cudaHostAlloc");
  flag_host[0] = 0;
  flag_host[1] = 1;
  cudaStream_t control;
  Check(cudaStreamCreateWithFlags(&control, cudaStreamNonBlocking), "cudaStreamCreate");
  unsigned long long* passes = nullptr;
  Check(cudaMalloc(&passes, sizeof(*passes)), "cudaMalloc");
  const std::vector<int> counts = o.quick ? std::vector<int>{16} : std::vector<int>{8, 16, 32};
  // 8 MiB per stand-in block: a pass of its slice takes longer than polling the flag.
  const size_t per_block = size_t{2} << 20;  // floats
  const size_t bg_floats = per_block * counts.back();
  float *src = nullptr, *dst = nullptr;
  Check(cudaMalloc(&src, bg_floats * sizeof(float)), "cudaMalloc");
  Check(cudaMalloc(&dst, bg_floats * sizeof(float)), "cudaMalloc");
  cudaMemset(src, 0, bg_floats * sizeof(float));
  const size_t copy_floats = size_t{1} << 28;  // 1 GiB, copied into another 1 GiB
  float *cx = nullptr, *cy = nullptr;
  Check(cudaMalloc(&cx, copy_floats * sizeof(float)), "cudaMalloc");
  Check(cudaMalloc(&cy, copy_floats * sizeof(float)), "cudaMalloc");
  cudaMemset(cx, 0, copy_floats * sizeof(float));
  // A large GEMM and the shapes of one TP-8 layer of a 22B model (h = 6144, 4 x 2048 tokens):
  // QKV, attention projection, fc1, fc2.
  std::vector<std::array<int64_t, 3>> shapes = {{8192, 8192, 8192}};
  if (!o.quick) {
    shapes.insert(shapes.end(),
                  {{8192, 2304, 6144}, {8192, 6144, 768}, {8192, 3072, 6144}, {8192, 6144, 3072}});
  }
  const int runs = o.quick ? 5 : 20;
  auto measure = [&](const ContentionPoint& base, const std::function<void()>& fn) {
    ContentionPoint p = base;
    p.sms = sms;
    p.alone = Duration::Seconds(Time(victim, runs, fn).first);
    for (int copy : {0, 1}) {
      for (int blocks : counts) {
        cudaMemcpy(stop_dev, &flag_host[0], sizeof(int), cudaMemcpyHostToDevice);
        cudaMemset(passes, 0, sizeof(*passes));
        Check(cudaDeviceSynchronize(), "contention set-up");
        const auto began = std::chrono::steady_clock::now();
        if (!CalibBackground(src, dst, per_block, blocks, copy, stop_dev, passes, background)) {
          Fail(1, "the communication stand-in kernel could not be launched");
        }
        auto [t, spread] = Time(victim, runs, fn);
        cudaMemcpyAsync(stop_dev, &flag_host[1], sizeof(int), cudaMemcpyHostToDevice, control);
        Check(cudaStreamSynchronize(background), "communication stand-in");
        const double span =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
        unsigned long long done = 0;
        cudaMemcpy(&done, passes, sizeof(done), cudaMemcpyDeviceToHost);
        // Bytes the stand-in read and wrote per second while it ran.
        p.rate = copy ? Bandwidth::BytesPerSecond(2.0 * done * per_block * sizeof(float) / span)
                      : Bandwidth::BytesPerSecond(0);
        p.background = copy ? "copy" : "spin";
        p.blocks = blocks;
        p.with = Duration::Seconds(t);
        p.spread = spread;
        m->contention.push_back(p);
      }
    }
  };
  for (const auto& [M, N, K] : shapes) {
    LtGemm g(ctx, victim, Dtype::kBf16, M, N, K);
    if (g.status() != CUBLAS_STATUS_SUCCESS) continue;
    ContentionPoint p;
    p.victim = "gemm";
    p.m = M;
    p.n = N;
    p.k = K;
    measure(p, [&] { g.Run(); });
  }
  ContentionPoint c;
  c.victim = "copy";
  c.bytes = Bytes(2.0 * copy_floats * sizeof(float));
  measure(c, [&] { CalibCopy(cx, cy, copy_floats, victim); });
  for (void* p : {static_cast<void*>(src), static_cast<void*>(dst), static_cast<void*>(cx),
                  static_cast<void*>(cy), static_cast<void*>(passes)}) {
    cudaFree(p);
  }
  cudaFree(stop_dev);
  cudaFreeHost(flag_host);
  cudaStreamDestroy(control);
  cudaStreamDestroy(victim);
  cudaStreamDestroy(background);
}

// Clocks under sustained load: 8192^3 bf16 GEMMs back to back for a while; the median GEMM of
// the first second against that of the last quarter.
void Sustained(const Options& o, Measurements* m) {
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
      auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v.empty() ? 0.0 : v[v.size() / 2];
      };
      p.first = Duration::Seconds(median(first));
      p.last = Duration::Seconds(median(last));
      m->sustained.push_back(p);
    }
  }
  cudaStreamDestroy(stream);
}

// Materialised ("standard") attention for `batch` heads of seq x d: forward QK^T, softmax, AV;
// backward dV = P^T dO, dP = dO V^T, softmax backward, dQ = dS K, dK = dS^T Q. Row-major
// tensors, cuBLAS (column-major) sees their transposes.
void Attention(const Options& o, Measurements* m) {
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) Fail(1, "cublasCreate failed");
  cudaStream_t stream;
  Check(cudaStreamCreate(&stream), "cudaStreamCreate");
  cublasSetStream(h, stream);
  std::vector<std::array<int64_t, 3>> shapes = o.attention;
  for (int64_t seq :
       o.quick ? std::vector<int64_t>{2048} : std::vector<int64_t>{1024, 2048, 4096}) {
    for (int64_t d : {64, 128}) shapes.push_back({4096 * 8 / seq * 4, seq, d});  // 32 heads at 4k
  }
  for (const auto& [B, S, D] : shapes) {
    if (S > kCalibMaxRow) {
      fmt::print(stderr, "attention {}x{}x{} skipped: rows longer than {}\n", B, S, D,
                 kCalibMaxRow);
      continue;
    }
    const size_t qkv = static_cast<size_t>(B) * S * D * 2,
                 scores = static_cast<size_t>(B) * S * S * 2;
    std::vector<void*> t(8, nullptr);  // Q K V O dO dQ dK dV
    void *P = nullptr, *dP = nullptr;
    bool ok = cudaMalloc(&P, scores) == cudaSuccess && cudaMalloc(&dP, scores) == cudaSuccess;
    for (void*& p : t) ok = ok && cudaMalloc(&p, qkv) == cudaSuccess;
    if (!ok) {
      fmt::print(stderr, "attention {}x{}x{} skipped: out of GPU memory\n", B, S, D);
      cudaGetLastError();
    } else {
      for (size_t i = 0; i < t.size(); ++i) CalibFill(t[i], qkv / 2, 0, 10 + i, nullptr);
      cudaMemset(P, 0, scores);
      cudaMemset(dP, 0, scores);
      void *Q = t[0], *K = t[1], *V = t[2], *O = t[3], *dO = t[4], *dQ = t[5], *dK = t[6],
           *dV = t[7];
      const float one = 1, zero = 0;
      const long long sq = S * D, ss = S * S;
      auto gemm = [&](cublasOperation_t ta, cublasOperation_t tb, int64_t mm, int64_t nn,
                      int64_t kk, const void* A, int64_t lda, long long sa, const void* Bm,
                      int64_t ldb, long long sb, void* C, int64_t ldc, long long sc) {
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
      m->attention.push_back(a);
    }
    for (void* p : t) cudaFree(p);
    cudaFree(P);
    cudaFree(dP);
  }
  cublasDestroy(h);
  cudaStreamDestroy(stream);
}

// Pinned host memory <-> GPU, 1 MiB to 1 GiB.
void HostCopies(const Options& o, Measurements* m) {
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

// NCCL collectives on the first `g` GPUs (one communicator each, one process).
void CollectivesOn(const Options& o, int g, Measurements* m) {
  std::vector<ncclComm_t> comms(g);
  std::vector<int> devs(g);
  for (int i = 0; i < g; ++i) devs[i] = i;
  if (ncclCommInitAll(comms.data(), g, devs.data()) != ncclSuccess) {
    Fail(1, fmt::format("ncclCommInitAll over {} GPUs failed", g));
  }
  // The largest buffer that fits twice (send and receive) on every GPU, up to --max-bytes.
  size_t max_bytes = o.quick ? std::min(o.max_bytes, size_t{64} << 20) : o.max_bytes;
  std::vector<void*> send(g, nullptr), recv(g, nullptr);
  std::vector<cudaStream_t> streams(g);
  for (;;) {
    bool ok = true;
    for (int i = 0; i < g && ok; ++i) {
      cudaSetDevice(i);
      ok = cudaMalloc(&send[i], max_bytes) == cudaSuccess &&
           cudaMalloc(&recv[i], max_bytes) == cudaSuccess;
    }
    if (ok) break;
    cudaGetLastError();
    for (int i = 0; i < g; ++i) {
      cudaSetDevice(i);
      cudaFree(send[i]);
      cudaFree(recv[i]);
      send[i] = recv[i] = nullptr;
    }
    max_bytes /= 2;
    if (max_bytes < (size_t{1} << 20)) Fail(1, "no GPU memory left for NCCL buffers");
    fmt::print(stderr, "NCCL buffers: only {} MiB fit\n", max_bytes >> 20);
  }
  for (int i = 0; i < g; ++i) {
    cudaSetDevice(i);
    cudaMemset(send[i], 0, max_bytes);
    cudaStreamCreate(&streams[i]);
  }
  auto run = [&](Collective op, size_t bytes) {
    const size_t count = bytes / 2;  // bf16 elements
    ncclGroupStart();
    for (int i = 0; i < g; ++i) {
      switch (op) {
        case Collective::kAllReduce:
          ncclAllReduce(send[i], recv[i], count, ncclBfloat16, ncclSum, comms[i], streams[i]);
          break;
        case Collective::kAllGather:
          ncclAllGather(send[i], recv[i], count / g, ncclBfloat16, comms[i], streams[i]);
          break;
        case Collective::kReduceScatter:
          ncclReduceScatter(send[i], recv[i], count / g, ncclBfloat16, ncclSum, comms[i],
                            streams[i]);
          break;
        case Collective::kAllToAll:
          for (int p = 0; p < g; ++p) {
            const size_t part = count / g;
            ncclSend(static_cast<char*>(send[i]) + p * part * 2, part, ncclBfloat16, p, comms[i],
                     streams[i]);
            ncclRecv(static_cast<char*>(recv[i]) + p * part * 2, part, ncclBfloat16, p, comms[i],
                     streams[i]);
          }
          break;
        case Collective::kSendRecv:
          if (i < 2) {
            ncclSend(send[i], count, ncclBfloat16, 1 - i, comms[i], streams[i]);
            ncclRecv(recv[i], count, ncclBfloat16, 1 - i, comms[i], streams[i]);
          }
          break;
        case Collective::kBroadcast:
          break;
      }
    }
    ncclGroupEnd();
  };
  std::vector<Collective> ops = {Collective::kAllReduce, Collective::kAllGather,
                                 Collective::kReduceScatter, Collective::kAllToAll};
  if (g == 2) ops.push_back(Collective::kSendRecv);  // one pair is one case
  for (Collective op : ops) {
    for (size_t bytes = 1024; bytes <= max_bytes; bytes *= 4) {
      std::vector<double> times;
      const int runs = o.quick ? 3 : bytes >= (size_t{1} << 30) ? 5 : 20;
      for (int it = 0; it < kWarmup + runs; ++it) {
        const auto t0 = std::chrono::steady_clock::now();
        run(op, bytes);
        for (int i = 0; i < g; ++i) {
          cudaSetDevice(i);
          Check(cudaStreamSynchronize(streams[i]), "NCCL");
        }
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (it >= kWarmup) times.push_back(s);
      }
      std::sort(times.begin(), times.end());
      const double med = times[times.size() / 2];
      const int64_t ranks = op == Collective::kSendRecv ? 2 : g;
      m->collectives.push_back({op, "", ranks, ranks, Bytes(static_cast<double>(bytes)),
                                Duration::Seconds(med),
                                med > 0 ? (times.back() - times.front()) / med : 0.0});
    }
  }
  for (int i = 0; i < g; ++i) {
    cudaSetDevice(i);
    cudaFree(send[i]);
    cudaFree(recv[i]);
    cudaStreamDestroy(streams[i]);
    ncclCommDestroy(comms[i]);
  }
  cudaSetDevice(0);
}

// Groups of 2, 4, 8, ... GPUs and all of them: the cost model prices each group size on its own
// when the profile has it (hardware/spec.h, FabricSpec::collectives).
void Collectives(const Options& o, int gpus, Measurements* m) {
  if (gpus < 2) {
    fmt::print(stderr, "NCCL skipped: one visible GPU\n");
    return;
  }
  std::vector<int> sizes;
  for (int g = 2; g < gpus; g *= 2) sizes.push_back(g);
  sizes.push_back(gpus);
  for (int g : sizes) {
    fmt::print(stderr, "NCCL on {} GPUs\n", g);
    CollectivesOn(o, g, m);
  }
}

}  // namespace
}  // namespace parasim

int main(int argc, char** argv) {
  using namespace parasim;
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) {
      o.out = argv[++i];
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--fp8-shapes") {
      o.fp8_shapes = true;
    } else if ((a == "--shapes" || a == "--attention") && i + 1 < argc) {
      auto& into = a == "--shapes" ? o.shapes : o.attention;
      std::string list = argv[++i];
      size_t pos = 0;
      while (pos < list.size()) {
        size_t end = list.find(',', pos);
        std::string item =
            list.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
        long long x = 0, y = 0, z = 0;
        char extra = 0;
        if (std::sscanf(item.c_str(), "%lldx%lldx%lld%c", &x, &y, &z, &extra) != 3 || x <= 0 ||
            y <= 0 || z <= 0 || x > (1 << 24) || y > (1 << 24) || z > (1 << 24)) {
          Fail(2, fmt::format("{}: '{}' is not {} with positive sizes up to 2^24", a, item,
                              a == "--shapes" ? "MxNxK (e.g. 4096x4096x12288)"
                                              : "BATCHxSEQxHEAD_DIM (e.g. 32x2048x128)"));
        }
        into.push_back({x, y, z});
        if (end == std::string::npos) break;
        pos = end + 1;
      }
    } else if (a == "--only" && i + 1 < argc) {
      std::string list = argv[++i];
      size_t pos = 0;
      while (pos <= list.size()) {
        size_t end = std::min(list.find(',', pos), list.size());
        std::string part = list.substr(pos, end - pos);
        if (std::find(std::begin(kParts), std::end(kParts), part) == std::end(kParts)) {
          Fail(2, fmt::format("--only: '{}' is not a part; parts are gemm, memory, attention, "
                              "host, collectives, contention, sustained (comma-separated)",
                              part));
        }
        o.only.push_back(part);
        pos = end + 1;
      }
    } else if (a == "--max-bytes" && i + 1 < argc) {
      StatusOr<Bytes> b = ParseBytes(argv[++i]);
      if (!b.ok() || b->bytes() < 1024 || b->bytes() > 64.0 * (1ull << 30)) {
        Fail(2, fmt::format("--max-bytes: '{}' is not a size between 1KiB and 64GiB (e.g. 4GiB)",
                            argv[i]));
      }
      o.max_bytes = static_cast<size_t>(b->bytes());
    } else {
      Fail(2, fmt::format("unknown argument '{}'; usage: parasim-calibrate --out FILE "
                          "[--shapes MxNxK,...] [--fp8-shapes] [--attention BxSxD,...] "
                          "[--max-bytes SIZE] [--only PART,...] [--quick]",
                          a));
    }
  }
  int gpus = 0;
  cudaError_t e = cudaGetDeviceCount(&gpus);
  if (e != cudaSuccess || gpus == 0) {
    Fail(2, fmt::format("no usable CUDA GPU on this machine ({}); run it on the GPU nodes to "
                        "calibrate, or fit nccl-tests logs with `parasim fit`",
                        e != cudaSuccess ? cudaGetErrorString(e) : "0 devices"));
  }
  cudaDeviceProp prop;
  Check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  Measurements m;
  m.device = prop.name;
  m.gpu = CatalogId(prop.name);
  int driver = 0;
  cudaDriverGetVersion(&driver);
  m.driver = fmt::format("CUDA driver API {}.{}", driver / 1000, (driver % 1000) / 10);
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%d", std::gmtime(&now));
  m.date = date;
  cudaSetDevice(0);
  fmt::print(stderr, "calibrating {} ({} visible GPUs)\n", m.device, gpus);
  if (o.Runs("gemm")) Gemms(o, 0, &m);
  if (o.Runs("memory")) Memory(o, &m);
  if (o.Runs("attention")) Attention(o, &m);
  if (o.Runs("host")) HostCopies(o, &m);
  if (o.Runs("collectives")) Collectives(o, gpus, &m);
  if (o.Runs("contention")) Contention(o, 0, &m);
  if (o.Runs("sustained")) Sustained(o, &m);
  Status st = WriteFileAtomic(o.out, FormatMeasurements(m));
  if (!st.ok()) Fail(2, st.message());
  fmt::print(stderr,
             "wrote {}: {} GEMMs, {} memory points, {} attention, {} host copies, {} collectives, "
             "{} contention, {} sustained\n",
             o.out, m.gemm.size(), m.memory.size(), m.attention.size(), m.host_copies.size(),
             m.collectives.size(), m.contention.size(), m.sustained.size());
  return 0;
}
