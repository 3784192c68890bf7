// parasim compare --trace: a measured step from a PyTorch profiler (Kineto) trace set against the
// op-level replay of the same rank, kind by kind.
//
// The trace is read and summed by hardware/readers (json_trace.h: the streaming JSON reader;
// kernel_classes.h: the kernel table; trace_summary.h: steps, kinds, families and the overlap on
// the streams). This file folds the reader's seven kernel classes into the four kinds the replay
// prices (GEMM, attention, element-wise, communication), sums the replay of one pipeline stage's
// rank in the same kinds and families, and turns measured over replayed time into a calibration
// profile, refusing the efficiencies that would have to be clamped.
//
//   PARASIM_ASSIGN_OR_RETURN(TraceSummary sum, SummarizeTrace(trace, table, choice));
//   KindTimes m = MeasuredKinds(sum);
//   KindTimes p = PredictedKinds(scenario, lowered, timeline, stage, /*layers_only=*/false);
//   TraceProfile prof = ProfileFromTrace(scenario, m, p, "step.json");
//   if (!prof.refused.empty()) ...;  // an efficiency on its bound: say why, write nothing
#pragma once

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/profile.h"
#include "hardware/readers/kernel_classes.h"
#include "hardware/readers/stream_overlap.h"
#include "hardware/readers/trace_summary.h"
#include "scenarios/scenario.h"
#include "sim/engine.h"
#include "strategies/lowered_step.h"

namespace parasim {

// What a GPU kernel does, as the replay prices it.
enum class KernelKind : uint8_t {
  kGemm,           // matrix multiplies (cuBLAS, CUTLASS, DeepGEMM, grouped GEMMs, convolutions)
  kAttention,      // fused (flash, fmha, cuDNN SDPA, FlashMLA) attention
  kElementwise,    // norms, activations, casts, routing, optimizer, copies and memsets
  kCommunication,  // NCCL, DeepEP, NVSHMEM, userbuffers, custom all-reduce and all-to-all
};
inline constexpr int kNumKernelKinds = 4;
std::string_view KernelKindName(KernelKind k);
// The replay's kind of a trace's kernel class: normalization, copies and memsets are element-wise
// (the replay prices norms as memory-bound ops and schedules no copies of its own).
KernelKind KindOf(KernelClass c);

// One side of the comparison, per step: time by kind and by family within each kind.
struct KindTimes {
  std::array<double, kNumKernelKinds> seconds{};
  std::array<double, kNumKernelKinds> count{};  // kernels (measured; an average may be fractional)
  // Within each kind: by the kernel table's family (measured), or by the replay's op group
  // ("routed experts", "dense", "LM head", ...) and parallel group ("ep-comm", ...) (predicted).
  std::array<std::map<std::string, double>, kNumKernelKinds> families;
  double span_s = 0;     // first kernel's start to the last one's end
  double idle_s = 0;     // the span covered by no kernel
  OverlapFacts overlap;  // communication beside compute on the streams (nanoseconds)

  double Seconds(KernelKind k) const { return seconds[static_cast<int>(k)]; }
  double kernels() const { return count[0] + count[1] + count[2] + count[3]; }
  // Adds `o`'s times and counts (spans, idle and overlap too): several ranks summed.
  void Add(const KindTimes& o);
  // Multiplies every time and count by `f` (a sum of ranks into their mean).
  void Scale(double f);
};

// The reader's sums of the chosen step(s), in the replay's kinds: families from the per-kernel
// listing, divided by the number of steps chosen.
KindTimes MeasuredKinds(const TraceSummary& s);

// The replayed step of one pipeline stage's rank (an op-granularity replay), in the same kinds:
// compute tasks by their op's kind, communication by its parallel group. `layers_only` counts
// only the transformer layers (their ops and their TP, CP and EP collectives), leaving out the
// embedding, the LM head and loss, the optimizer and the pipeline and data-parallel traffic: for
// traces of a chunk of layers (DualPipe's forward-and-backward chunk pairs).
KindTimes PredictedKinds(const Scenario& s, const LoweredStep& low, const sim::Timeline& tl,
                         int stage, bool layers_only);

// A calibration profile from measured over replayed time per kind, and what stands in its way.
struct TraceProfile {
  CalibrationProfile profile;
  // Efficiencies that would leave (0.01, 1]: each with its value and the likely reason. A
  // profile with any of these is refused unless forced (then they are clamped).
  std::vector<std::string> refused;
  // Kinds that could not be calibrated (no measured or no replayed time), said aloud.
  std::vector<std::string> notes;
};

// Each kind's model efficiency scaled by predicted / measured time (GEMM, memory-bound,
// attention) for the scenario's GPU.
TraceProfile ProfileFromTrace(const Scenario& s, const KindTimes& measured,
                              const KindTimes& predicted, const std::string& trace);

// Lines for kinds the trace has no time for while the replay does (a kernel table that files
// them elsewhere, or a part of the step the trace left out), and the reverse.
std::vector<std::string> MissingKinds(const KindTimes& measured, const KindTimes& predicted);

}  // namespace parasim
