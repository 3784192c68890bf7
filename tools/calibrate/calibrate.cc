// parasim-calibrate: measures the GPUs of this node for `parasim fit`.
//
//   parasim-calibrate --out measurements.yaml [--shapes 4096x4096x12288,...] [--quick]
//
// GEMMs (cuBLASLt, bf16/fp16 and fp8 where the GPU has it, fp32 accumulation) over a grid of
// shapes plus the given ones; copy and triad bandwidth; empty-kernel launch overhead; NCCL
// all-reduce, all-gather, reduce-scatter, all-to-all and send/recv over every visible GPU of the
// node (one process) from 1 KiB up. Each point: warm-up runs, then timed runs with CUDA events;
// the median is written, with the spread. Exit 2 with a clear message when no GPU is usable.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <fmt/core.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "hardware/measurements.h"
#include "sim/io.h"
#include "tools/calibrate/kernels.h"

namespace parasim {
namespace {

constexpr int kWarmup = 3;

struct Options {
  std::string out = "measurements.yaml";
  std::vector<std::array<int64_t, 3>> shapes;
  bool quick = false;
};

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

std::string CatalogId(const std::string& name) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (has("A100") && has("80GB")) return "a100-sxm4-80gb";
  if (has("A100")) return "a100-sxm4-40gb";
  if (has("H100") && has("PCIe")) return "h100-pcie-80gb";
  if (has("H100")) return "h100-sxm5-80gb";
  if (has("H800")) return "h800-sxm5-80gb";
  if (has("H200")) return "h200-sxm-141gb";
  return "";
}

void Gemms(const Options& o, int device, Measurements* m) {
  cublasLtHandle_t lt;
  if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) Fail(1, "cublasLtCreate failed");
  cudaStream_t stream;
  Check(cudaStreamCreate(&stream), "cudaStreamCreate");
  std::vector<std::array<int64_t, 3>> shapes = o.shapes;
  const std::vector<int64_t> dims = o.quick
                                        ? std::vector<int64_t>{1024, 4096, 8192}
                                        : std::vector<int64_t>{512, 1024, 2048, 4096, 8192, 16384};
  for (int64_t a : dims) {
    for (int64_t b : dims) shapes.push_back({a, b, 4096});
    shapes.push_back({4096, 4096, a});
  }
  int major = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  size_t workspace_bytes = 64 << 20;
  void* workspace = nullptr;
  Check(cudaMalloc(&workspace, workspace_bytes), "cudaMalloc workspace");
  struct Type {
    Dtype dtype;
    cudaDataType_t cuda;
    size_t bytes;
  };
  std::vector<Type> types = {{Dtype::kBf16, CUDA_R_16BF, 2}, {Dtype::kFp16, CUDA_R_16F, 2}};
  for (const Type& ty : types) {
    for (const auto& [M, N, K] : shapes) {
      void *A, *B, *C;
      if (cudaMalloc(&A, M * K * ty.bytes) != cudaSuccess ||
          cudaMalloc(&B, K * N * ty.bytes) != cudaSuccess ||
          cudaMalloc(&C, M * N * ty.bytes) != cudaSuccess) {
        Fail(1, fmt::format("out of GPU memory for a {}x{}x{} GEMM", M, N, K));
      }
      cudaMemset(A, 0, M * K * ty.bytes);
      cudaMemset(B, 0, K * N * ty.bytes);
      cublasLtMatmulDesc_t op;
      cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
      cublasLtMatrixLayout_t la, lb, lc;
      // Column-major: C (M x N) = A (M x K) * B (K x N).
      cublasLtMatrixLayoutCreate(&la, ty.cuda, M, K, M);
      cublasLtMatrixLayoutCreate(&lb, ty.cuda, K, N, K);
      cublasLtMatrixLayoutCreate(&lc, ty.cuda, M, N, M);
      cublasLtMatmulPreference_t pref;
      cublasLtMatmulPreferenceCreate(&pref);
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                           &workspace_bytes, sizeof(workspace_bytes));
      cublasLtMatmulHeuristicResult_t heur;
      int found = 0;
      cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &heur, &found);
      if (found > 0) {
        const float alpha = 1, beta = 0;
        auto [t, spread] = Time(stream, o.quick ? 5 : 20, [&] {
          cublasLtMatmul(lt, op, &alpha, A, la, B, lb, &beta, C, lc, C, lc, &heur.algo, workspace,
                         workspace_bytes, stream);
        });
        m->gemm.push_back({ty.dtype, M, N, K, Duration::Seconds(t), spread});
      }
      cublasLtMatmulPreferenceDestroy(pref);
      cublasLtMatrixLayoutDestroy(la);
      cublasLtMatrixLayoutDestroy(lb);
      cublasLtMatrixLayoutDestroy(lc);
      cublasLtMatmulDescDestroy(op);
      cudaFree(A);
      cudaFree(B);
      cudaFree(C);
    }
  }
  (void)major;  // fp8 GEMMs need per-tensor scales; left to a later version of this program.
  cudaFree(workspace);
  cublasLtDestroy(lt);
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
    cudaMemset(b, 0, n * sizeof(float));
    cudaMemset(c, 0, n * sizeof(float));
    auto [tc, sc] = Time(stream, 10, [&] { CalibCopy(b, a, n, stream); });
    m->memory.push_back({"copy", Bytes(2.0 * n * sizeof(float)), Duration::Seconds(tc)});
    auto [tt, st] = Time(stream, 10, [&] { CalibTriad(a, b, c, 3.0f, n, stream); });
    m->memory.push_back({"triad", Bytes(3.0 * n * sizeof(float)), Duration::Seconds(tt)});
    (void)sc;
    (void)st;
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
  }
  auto [tl, sl] = Time(stream, 200, [&] { CalibEmpty(stream); });
  (void)sl;
  m->launch = Duration::Seconds(tl);
  cudaStreamDestroy(stream);
}

void Collectives(const Options& o, int gpus, Measurements* m) {
  if (gpus < 2) return;
  std::vector<ncclComm_t> comms(gpus);
  std::vector<int> devs(gpus);
  for (int i = 0; i < gpus; ++i) devs[i] = i;
  if (ncclCommInitAll(comms.data(), gpus, devs.data()) != ncclSuccess) {
    Fail(1, "ncclCommInitAll failed");
  }
  const size_t max_bytes = o.quick ? (size_t{64} << 20) : (size_t{1} << 30);
  std::vector<void*> send(gpus), recv(gpus);
  std::vector<cudaStream_t> streams(gpus);
  for (int i = 0; i < gpus; ++i) {
    cudaSetDevice(i);
    Check(cudaMalloc(&send[i], max_bytes), "cudaMalloc");
    Check(cudaMalloc(&recv[i], max_bytes), "cudaMalloc");
    cudaMemset(send[i], 0, max_bytes);
    cudaStreamCreate(&streams[i]);
  }
  auto run = [&](Collective op, size_t bytes) {
    const size_t count = bytes / 2;  // bf16 elements
    ncclGroupStart();
    for (int i = 0; i < gpus; ++i) {
      switch (op) {
        case Collective::kAllReduce:
          ncclAllReduce(send[i], recv[i], count, ncclBfloat16, ncclSum, comms[i], streams[i]);
          break;
        case Collective::kAllGather:
          ncclAllGather(send[i], recv[i], count / gpus, ncclBfloat16, comms[i], streams[i]);
          break;
        case Collective::kReduceScatter:
          ncclReduceScatter(send[i], recv[i], count / gpus, ncclBfloat16, ncclSum, comms[i],
                            streams[i]);
          break;
        case Collective::kAllToAll:
          for (int p = 0; p < gpus; ++p) {
            const size_t part = count / gpus;
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
  for (Collective op : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                        Collective::kAllToAll, Collective::kSendRecv}) {
    for (size_t bytes = 1024; bytes <= max_bytes; bytes *= 4) {
      std::vector<double> times;
      for (int it = 0; it < kWarmup + (o.quick ? 3 : 10); ++it) {
        const auto t0 = std::chrono::steady_clock::now();
        run(op, bytes);
        for (int i = 0; i < gpus; ++i) {
          cudaSetDevice(i);
          cudaStreamSynchronize(streams[i]);
        }
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (it >= kWarmup) times.push_back(s);
      }
      std::sort(times.begin(), times.end());
      const int64_t ranks = op == Collective::kSendRecv ? 2 : gpus;
      m->collectives.push_back({op, "", ranks, ranks, Bytes(static_cast<double>(bytes)),
                                Duration::Seconds(times[times.size() / 2])});
    }
  }
  for (int i = 0; i < gpus; ++i) {
    cudaSetDevice(i);
    cudaFree(send[i]);
    cudaFree(recv[i]);
    cudaStreamDestroy(streams[i]);
    ncclCommDestroy(comms[i]);
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
    } else if (a == "--shapes" && i + 1 < argc) {
      std::string list = argv[++i];
      size_t pos = 0;
      while (pos < list.size()) {
        size_t end = list.find(',', pos);
        std::string item =
            list.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
        long long mm = 0, nn = 0, kk = 0;
        if (std::sscanf(item.c_str(), "%lldx%lldx%lld", &mm, &nn, &kk) != 3 || mm <= 0 || nn <= 0 ||
            kk <= 0) {
          Fail(2, fmt::format("--shapes: '{}' is not MxNxK (e.g. 4096x4096x12288)", item));
        }
        o.shapes.push_back({mm, nn, kk});
        if (end == std::string::npos) break;
        pos = end + 1;
      }
    } else {
      Fail(2, fmt::format("unknown argument '{}'; usage: parasim-calibrate --out FILE "
                          "[--shapes MxNxK,...] [--quick]",
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
  Gemms(o, 0, &m);
  Memory(o, &m);
  Collectives(o, gpus, &m);
  Status st = WriteFileAtomic(o.out, FormatMeasurements(m));
  if (!st.ok()) Fail(2, st.message());
  fmt::print(stderr, "wrote {}: {} GEMMs, {} memory points, {} collectives\n", o.out, m.gemm.size(),
             m.memory.size(), m.collectives.size());
  return 0;
}
