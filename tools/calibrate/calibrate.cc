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
//
// Each part is a file of its own (gemm.cc, memory.cc, attention.cc, host_copies.cc,
// collectives.cc, contention.cc, sustained.cc); this one reads the options, describes the
// device, runs the parts asked for and writes the measurements.
#include <cuda_runtime.h>
#include <fmt/core.h>

#include <cstdio>
#include <ctime>
#include <string>

#include "hardware/measurements.h"
#include "hardware/spec.h"
#include "sim/io.h"
#include "tools/calibrate/attention.h"
#include "tools/calibrate/collectives.h"
#include "tools/calibrate/contention.h"
#include "tools/calibrate/gemm.h"
#include "tools/calibrate/host_copies.h"
#include "tools/calibrate/memory.h"
#include "tools/calibrate/options.h"
#include "tools/calibrate/sustained.h"
#include "tools/calibrate/timing.h"

namespace parasim::calibrate {
namespace {

// The catalog id of the device, from the names the catalog lists for each GPU ("" if none).
std::string CatalogId(const std::string& name) {
  static const StatusOr<HardwareCatalog> cat = LoadHardwareCatalog();
  const GpuSpec* g = cat.ok() ? cat->FindGpuByDevice(name) : nullptr;
  return g ? g->id : "";
}

// The visible GPUs' count; exits 2 when there is none.
int VisibleGpus() {
  int gpus = 0;
  cudaError_t e = cudaGetDeviceCount(&gpus);
  if (e != cudaSuccess || gpus == 0) {
    Fail(2, fmt::format("no usable CUDA GPU on this machine ({}); run it on the GPU nodes to "
                        "calibrate, or fit nccl-tests logs with `parasim fit`",
                        e != cudaSuccess ? cudaGetErrorString(e) : "0 devices"));
  }
  return gpus;
}

// Measurements that name GPU 0 (as the driver and the catalog do), the driver and today's date.
Measurements DescribeDevice() {
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
  return m;
}

void Write(const Options& o, const Measurements& m) {
  Status st = WriteFileAtomic(o.out, FormatMeasurements(m));
  if (!st.ok()) Fail(2, st.message());
  fmt::print(stderr,
             "wrote {}: {} GEMMs, {} memory points, {} attention, {} host copies, {} collectives, "
             "{} contention, {} sustained\n",
             o.out, m.gemm.size(), m.memory.size(), m.attention.size(), m.host_copies.size(),
             m.collectives.size(), m.contention.size(), m.sustained.size());
}

}  // namespace
}  // namespace parasim::calibrate

int main(int argc, char** argv) {
  using namespace parasim::calibrate;
  parasim::StatusOr<Options> parsed = ParseOptions(argc, argv);
  if (!parsed.ok()) Fail(2, parsed.status().message());
  const Options& o = *parsed;
  const int gpus = VisibleGpus();
  parasim::Measurements m = DescribeDevice();
  cudaSetDevice(0);
  fmt::print(stderr, "calibrating {} ({} visible GPUs)\n", m.device, gpus);
  if (o.Runs("gemm")) MeasureGemms(o, 0, &m);
  if (o.Runs("memory")) MeasureMemory(o, &m);
  if (o.Runs("attention")) MeasureAttention(o, &m);
  if (o.Runs("host")) MeasureHostCopies(o, &m);
  if (o.Runs("collectives")) MeasureCollectives(o, gpus, &m);
  if (o.Runs("contention")) MeasureContention(o, 0, &m);
  if (o.Runs("sustained")) MeasureSustained(o, &m);
  Write(o, m);
  return 0;
}
