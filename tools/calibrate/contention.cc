#include "tools/calibrate/contention.h"

#include <cuda_runtime.h>

#include <array>
#include <chrono>
#include <functional>
#include <utility>
#include <vector>

#include "tools/calibrate/kernels.h"
#include "tools/calibrate/lt_gemm.h"
#include "tools/calibrate/timing.h"

namespace parasim::calibrate {
namespace {

// The victims' stream, the communication stand-in's, and what the stand-in runs on: its stop
// flag, its pass counter and the buffers it streams; and the copy victim's buffers.
struct Rig {
  cudaStream_t victim, background, control;
  int* stop_dev = nullptr;
  int* flag_host = nullptr;  // {0, 1}: run, stop
  unsigned long long* passes = nullptr;
  std::vector<int> counts;  // the stand-in's block counts
  size_t per_block = 0;     // floats each stand-in block streams
  float *src = nullptr, *dst = nullptr;
  size_t copy_floats = 0;
  float *cx = nullptr, *cy = nullptr;
};

void OpenRig(const Options& o, Rig* r) {
  Check(cudaStreamCreateWithFlags(&r->victim, cudaStreamNonBlocking), "cudaStreamCreate");
  Check(cudaStreamCreateWithFlags(&r->background, cudaStreamNonBlocking), "cudaStreamCreate");
  // The stop flag lives in GPU memory (as NCCL's flags do), set by a copy on its own stream:
  // polling mapped host memory across PCIe from many SMs slowed every other kernel 3-30x on an
  // H100 (seen here, 2026-11-22), which no collective does.
  Check(cudaMalloc(&r->stop_dev, sizeof(int)), "cudaMalloc");
  Check(cudaHostAlloc(&r->flag_host, 2 * sizeof(int), cudaHostAllocDefault), "cudaHostAlloc");
  r->flag_host[0] = 0;
  r->flag_host[1] = 1;
  Check(cudaStreamCreateWithFlags(&r->control, cudaStreamNonBlocking), "cudaStreamCreate");
  Check(cudaMalloc(&r->passes, sizeof(*r->passes)), "cudaMalloc");
  r->counts = o.quick ? std::vector<int>{16} : std::vector<int>{8, 16, 32};
  // 8 MiB per stand-in block: a pass of its slice takes longer than polling the flag.
  r->per_block = size_t{2} << 20;  // floats
  const size_t bg_floats = r->per_block * r->counts.back();
  Check(cudaMalloc(&r->src, bg_floats * sizeof(float)), "cudaMalloc");
  Check(cudaMalloc(&r->dst, bg_floats * sizeof(float)), "cudaMalloc");
  cudaMemset(r->src, 0, bg_floats * sizeof(float));
  r->copy_floats = size_t{1} << 28;  // 1 GiB, copied into another 1 GiB
  Check(cudaMalloc(&r->cx, r->copy_floats * sizeof(float)), "cudaMalloc");
  Check(cudaMalloc(&r->cy, r->copy_floats * sizeof(float)), "cudaMalloc");
  cudaMemset(r->cx, 0, r->copy_floats * sizeof(float));
}

void CloseRig(Rig* r) {
  for (void* p : {static_cast<void*>(r->src), static_cast<void*>(r->dst), static_cast<void*>(r->cx),
                  static_cast<void*>(r->cy), static_cast<void*>(r->passes)}) {
    cudaFree(p);
  }
  cudaFree(r->stop_dev);
  cudaFreeHost(r->flag_host);
  cudaStreamDestroy(r->control);
  cudaStreamDestroy(r->victim);
  cudaStreamDestroy(r->background);
}

// Times `fn` alone, then beside the stand-in spinning and copying on each block count: one row
// each, `base` naming the victim.
void Measure(const Rig& r, int sms, int runs, const ContentionPoint& base,
             const std::function<void()>& fn, Measurements* m) {
  ContentionPoint p = base;
  p.sms = sms;
  p.alone = Duration::Seconds(Time(r.victim, runs, fn).first);
  for (int copy : {0, 1}) {
    for (int blocks : r.counts) {
      cudaMemcpy(r.stop_dev, &r.flag_host[0], sizeof(int), cudaMemcpyHostToDevice);
      cudaMemset(r.passes, 0, sizeof(*r.passes));
      Check(cudaDeviceSynchronize(), "contention set-up");
      const auto began = std::chrono::steady_clock::now();
      if (!CalibBackground(r.src, r.dst, r.per_block, blocks, copy, r.stop_dev, r.passes,
                           r.background)) {
        Fail(1, "the communication stand-in kernel could not be launched");
      }
      auto [t, spread] = Time(r.victim, runs, fn);
      cudaMemcpyAsync(r.stop_dev, &r.flag_host[1], sizeof(int), cudaMemcpyHostToDevice, r.control);
      Check(cudaStreamSynchronize(r.background), "communication stand-in");
      const double span =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      unsigned long long done = 0;
      cudaMemcpy(&done, r.passes, sizeof(done), cudaMemcpyDeviceToHost);
      // Bytes the stand-in read and wrote per second while it ran.
      p.rate = copy ? Bandwidth::BytesPerSecond(2.0 * done * r.per_block * sizeof(float) / span)
                    : Bandwidth::BytesPerSecond(0);
      p.background = copy ? "copy" : "spin";
      p.blocks = blocks;
      p.with = Duration::Seconds(t);
      p.spread = spread;
      m->contention.push_back(p);
    }
  }
}

}  // namespace

void MeasureContention(const Options& o, int device, Measurements* m) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  LtContext ctx;
  Rig rig;
  OpenRig(o, &rig);
  // A large GEMM and the shapes of one TP-8 layer of a 22B model (h = 6144, 4 x 2048 tokens):
  // QKV, attention projection, fc1, fc2.
  std::vector<std::array<int64_t, 3>> shapes = {{8192, 8192, 8192}};
  if (!o.quick) {
    shapes.insert(shapes.end(),
                  {{8192, 2304, 6144}, {8192, 6144, 768}, {8192, 3072, 6144}, {8192, 6144, 3072}});
  }
  const int runs = o.quick ? 5 : 20;
  for (const auto& [M, N, K] : shapes) {
    LtGemm g(ctx, rig.victim, Dtype::kBf16, M, N, K);
    if (g.status() != CUBLAS_STATUS_SUCCESS) continue;
    ContentionPoint p;
    p.victim = "gemm";
    p.m = M;
    p.n = N;
    p.k = K;
    Measure(
        rig, sms, runs, p, [&] { g.Run(); }, m);
  }
  ContentionPoint c;
  c.victim = "copy";
  c.bytes = Bytes(2.0 * rig.copy_floats * sizeof(float));
  Measure(
      rig, sms, runs, c, [&] { CalibCopy(rig.cx, rig.cy, rig.copy_floats, rig.victim); }, m);
  CloseRig(&rig);
}

}  // namespace parasim::calibrate
