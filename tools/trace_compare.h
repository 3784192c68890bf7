// parasim compare --trace: a measured step from a PyTorch profiler (Kineto) Chrome trace set
// against the replay of the same rank.
//
// The trace format is PyTorch's (torch.profiler export_chrome_trace, Kineto): a JSON object
// whose "traceEvents" list holds complete events ("ph": "X", "ts" and "dur" in microseconds);
// GPU kernels carry "cat": "kernel" (also "gpu_memcpy" and "gpu_memset"). One training step on
// one rank is expected; plain or gzipped (.json.gz).
//
//   StatusOr<KindTimes> m = ReadKinetoTrace("step.json.gz");
//   KindTimes p = PredictedKinds(scenario, lowered, timeline, stage);
#pragma once

#include <array>
#include <map>
#include <string>
#include <string_view>

#include "hardware/profile.h"
#include "scenarios/scenario.h"
#include "sim/engine.h"
#include "sim/status.h"
#include "strategies/lowered_step.h"

namespace parasim {

// What a GPU kernel does, for comparison with the replay.
enum class KernelKind : uint8_t {
  kGemm,           // cuBLAS/cuBLASLt/CUTLASS matrix multiplies
  kAttention,      // fused (flash, fmha, cuDNN SDPA) attention; standard attention's softmax
  kElementwise,    // everything else that computes: norms, activations, optimizer, copies
  kCommunication,  // NCCL/RCCL collectives and point-to-point
};
inline constexpr int kNumKernelKinds = 4;
std::string_view KernelKindName(KernelKind k);
// By the kernel's name (NCCL, GEMM and attention libraries' naming), else element-wise.
KernelKind ClassifyKernel(std::string_view name);
// An NCCL kernel's collective ("AllReduce", "SendRecv", ...), from its name.
std::string NcclCollective(std::string_view name);

struct KindTimes {
  std::array<double, kNumKernelKinds> seconds{};  // summed kernel time per kind
  // Communication in detail: by collective (measured) or by parallel group (predicted).
  std::map<std::string, double> comm_detail;
  double span_s = 0;  // first kernel start to last kernel end
  double idle_s = 0;  // the span covered by no kernel
  int64_t kernels = 0;
};

StatusOr<KindTimes> ReadKinetoTrace(const std::string& path);

// The replayed step of one pipeline stage's rank (an op-granularity replay), in the same kinds:
// compute tasks by their op's kind, communication by its parallel group.
KindTimes PredictedKinds(const Scenario& s, const LoweredStep& low, const sim::Timeline& tl,
                         int stage);

// Measured efficiencies: each kind's model efficiency scaled by predicted / measured time
// (GEMM, memory-bound, attention), as a calibration profile for this scenario's GPU.
CalibrationProfile ProfileFromTrace(const Scenario& s, const KindTimes& measured,
                                    const KindTimes& predicted, const std::string& trace);

}  // namespace parasim
