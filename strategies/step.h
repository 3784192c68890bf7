// One training step: lower model x layout onto the cluster's ranks as a sim::Program, replay it
// in the discrete-event engine, and summarise the timeline.
//
//   StatusOr<StepReport> r = SimulateStep(model, training, layout, cluster, {});
//   r->step_time_s, r->mfu, r->bubble_fraction, r->exposed.dp, r->peak_memory_bytes[stage]
//
// Lowering, one planner per concern (see step.cc):
//   pipeline   per-stage unit order for GPipe, 1F1B and interleaved 1F1B (Megatron's ordering);
//              activations and gradients sent stage to stage as flows over NVLink or NICs.
//   layers     each unit is the forward, backward or recompute of a model chunk; at op
//              granularity one task per op, at coarse granularity one task per unit (split at
//              gradient-bucket boundaries only where communication attaches there).
//   tp/cp/ep   collectives timed for their whole group (hardware/cost_model.h) on the compute
//              stream, or beside it when overlapped (TP with overlap.tp, CP ring exchange).
//   dp/zero    gradient buckets all-reduced (or reduce-scattered, ZeRO >= 1) as the last
//              micro-batch's backward produces them, sharing the NIC with pipeline traffic;
//              ZeRO 1/2 gather updated parameters ahead of the first forward; ZeRO 3 gathers
//              each layer before its forward and backward and reduce-scatters every micro-batch.
//   optimizer  a memory-bound pass over the local shard of the optimizer states.
//   memory     states allocated at the start, activations at each forward, freed at its backward.
//
// By default one representative rank per pipeline stage is replayed (DP and TP replicas behave
// alike); `full` expands every rank of the cluster, with collectives spanning their members.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/spec.h"
#include "models/layer_graph.h"
#include "models/model_spec.h"
#include "models/training.h"
#include "sim/engine.h"
#include "sim/program.h"
#include "sim/status.h"
#include "strategies/layout.h"

namespace parasim {

enum class Granularity { kCoarse, kOp };

// Categories of replayed tasks (sim::Program's category byte).
enum class TaskCat : uint8_t {
  kForward,
  kBackward,
  kRecompute,
  kOptimizer,
  kTp,
  kCp,
  kEp,
  kPp,
  kDp,
  kCompress
};
inline constexpr int kNumTaskCats = 10;
std::string_view TaskCatName(TaskCat c);
std::vector<std::string> TaskCatNames();

struct StepOptions {
  Granularity granularity = Granularity::kCoarse;
  bool full = false;  // every rank instead of one per pipeline stage
  bool record_memory = false;
  bool critical_path = true;
};

// --full replays every rank; beyond this many GPUs the symmetric replay is the tool.
inline constexpr int64_t kMaxFullRanks = 1024;

struct ExposedComm {
  // Seconds per step a kind of communication runs while the GPU computes nothing.
  double tp = 0, cp = 0, ep = 0, pp = 0, dp = 0;
  double total() const { return tp + cp + ep + pp + dp; }
};

struct LoweredStep {
  sim::Program program;
  sim::TableCost costs;
  int stages = 1;
  int replicas = 1;                          // program ranks per pipeline stage
  std::vector<uint32_t> stage_rank;          // program rank standing for each stage
  std::vector<sim::StreamId> stage_compute;  // its compute stream
  std::vector<sim::TaskId> pp_flows;         // pipeline transfers
  std::vector<uint32_t> pp_receiver;         // program rank receiving each of pp_flows
  std::vector<double> static_bytes;          // per stage: states and buffers held all step
  int64_t micro_batches = 1;
};

struct StepReport {
  double step_time_s = 0;
  int64_t micro_batches = 0;
  double tokens_per_s = 0;
  double model_flops_per_step = 0;  // model FLOPs (no recompute), whole cluster
  double hw_flops_per_step = 0;     // executed FLOPs including recompute
  double tflops_per_gpu = 0;        // model TFLOP/s per GPU
  double hw_tflops_per_gpu = 0;
  double mfu = 0;
  double hfu = 0;
  double bubble_fraction = 0;             // measured: idle over work of the busiest stage
  double ideal_bubble_fraction = 0;       // (p-1)/m, (p-1)/(v m) interleaved
  ExposedComm exposed;                    // per kind, the largest over stages
  std::vector<double> stage_compute_s;    // forward/backward/recompute/optimizer per stage
  std::vector<double> peak_memory_bytes;  // per stage, from the replay
  double capacity_bytes = 0;
  bool fits = true;
  double time_to_train_s = 0;  // when training.tokens is given
  double gpu_hours = 0;
  double cost = 0;  // gpu_hours x cluster.gpu_hour_cost
  std::string critical_path;
  std::vector<std::string> warnings;
  size_t tasks = 0;
  uint64_t events = 0;
  double lower_ms = 0;   // building the program
  double replay_ms = 0;  // lowering plus engine replay (wall clock)
};

StatusOr<LoweredStep> LowerStep(const ModelSpec& model, const Training& training,
                                const Layout& layout, const ClusterSpec& cluster,
                                const StepOptions& options);

// Lowers, replays and summarises. `lowered` and `timeline`, when given, receive the program
// and its timeline (for traces).
StatusOr<StepReport> SimulateStep(const ModelSpec& model, const Training& training,
                                  const Layout& layout, const ClusterSpec& cluster,
                                  const StepOptions& options, LoweredStep* lowered = nullptr,
                                  sim::Timeline* timeline = nullptr);

// The kernels one rank's step runs, for `parasim calibrate --scenario`: every GEMM shape the
// cost model looks up (rows x batch, cols, depth; forward, input gradient, weight gradient),
// distinct and in first-use order, and the attention core's shape (per micro-batch).
struct StepKernels {
  struct Gemm {
    int64_t m = 0, n = 0, k = 0;
    std::string op;  // "F attention.qkv", "B mlp.fc1", "W mlp.fc1"
  };
  std::vector<Gemm> gemms;
  int64_t attention_batch = 0;  // micro-batch x local heads
  int64_t attention_seq = 0;    // local query length (seq / cp)
  int64_t attention_head_dim = 0;
  Dtype dtype = Dtype::kBf16;
};
StepKernels StepKernelsOf(const ModelSpec& model, const Training& training, const Layout& layout);

// The GEMMs the cost model prices for one GEMM op: (m, n, k, batch) of the forward, the input
// gradient and (unless the weights are frozen) the weight gradient.
struct GemmCall {
  char pass;  // 'F', 'B' (input gradient), 'W' (weight gradient)
  int64_t m, n, k, batch;
};
std::vector<GemmCall> TrainingGemms(const Op& op, bool frozen);

// Model FLOPs of one sequence (forward + backward, no recompute) and the extra FLOPs that
// recompute adds, derived from the layer graph.
struct SequenceFlops {
  double model = 0;
  double recompute = 0;
};
SequenceFlops FlopsPerSequence(const ModelSpec& model, const Training& training);

}  // namespace parasim
