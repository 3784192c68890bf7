// The small context the step planners share while lowering one training step (step.h):
// the inputs, the program being built and its cost table, the cost model, the rank placement
// and the groups' shapes, and the types the planners pass each other.
//
// The planners, each in its own file:
//   schedule.h        the order of units per stage (one class per schedule)
//   topology.h        ranks, streams and links of the replayed replicas; tasks on them
//   layer_pricing.h   op costs of the layer graph, TP/SP/CP/EP collectives
//   layer_lowering.h  model chunks, the tasks of their forwards and backwards
//   dp_lowering.h     DP, ZeRO/FSDP gathers and reductions, compression, the optimizer step
//   step_lowering.h   units in schedule order, pipeline transfers, memory events, bounds
//   schedule_bound.h  the schedule walked unit by unit at given durations (a lower bound)
//   step_shift.h      each task's counterpart a steady-state period later
//   step_summary.h    step time, bubble, exposed communication, MFU, critical path
//   step_advice.h     warnings, each threshold with its source
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hardware/cost_model.h"
#include "hardware/spec.h"
#include "models/model_spec.h"
#include "models/op.h"
#include "models/training.h"
#include "sim/flat_map.h"
#include "sim/program.h"
#include "sim/units.h"
#include "strategies/layout.h"
#include "strategies/lowered_step.h"
#include "strategies/placement.h"
#include "strategies/schedule.h"

namespace parasim {

// Group kinds indexing the context's groups: the layer graph's kinds, plus expert data parallel.
inline constexpr int kGroupEdp = 6;
inline constexpr int kNumGroups = 7;

TaskCat CommCat(GroupKind g);
Collective ToCollective(CommKind k);

// Durations of one op of a block in each phase, with the collective that follows it.
struct OpTime {
  Duration fwd, bwd;
  Duration wgrad;  // the weight-gradient part of bwd (W, for schedules that split it)
  Duration fwd_comm, bwd_comm;
  TaskCat fwd_cat = TaskCat::kTp, bwd_cat = TaskCat::kTp;
  GroupKind fwd_group = GroupKind::kTp, bwd_group = GroupKind::kTp;
  bool fwd_overlap = false, bwd_overlap = false;
  // A column-parallel Linear's backward collective beside its weight gradient, and the
  // all-gather of its SP-sharded input beside its input gradient (CommSpec::beside_wgrad).
  bool bwd_beside_wgrad = false;
  Duration bwd_regather;
  bool recompute = false;  // rerun before backward under the training's recompute mode
  double rerun = 1;        // the share of the forward rerun (a part of a fused matmul)
  // How much longer the op's kernels take beside a running collective (GpuSpec::contended_*).
  double contended = 1.0;
  // The host's time to issue the op's kernels and collectives in each pass (strategies/
  // host_ops.h at GpuSpec::host_op_time each); host_w is the weight gradient's share of host_b.
  Duration host_f, host_b, host_w;
  uint32_t label_f = 0, label_b = 0, label_r = 0;
};

struct BlockTime {
  std::vector<OpTime> ops;
};

// One piece of a model chunk: the embedding, a transformer layer or the head.
struct Piece {
  const BlockTime* time = nullptr;
  double act = 0;        // activation bytes saved for backward under the recompute mode
  double act_full = 0;   // bytes of the piece's activations without recompute
  double act_w = 0;      // bytes its weight gradient (W) needs after the input gradient (B)
  double transient = 0;  // the most working memory one of its ops holds while it runs
  double dense = 0;      // trainable dense parameters on this rank
  double expert = 0;     // trainable expert parameters on this rank
  // A LoRA model's frozen base on this rank, dense and expert, in the weights' bytes' worth
  // (QLoRA's 4-bit Linears at 4.127 / 8 bytes over those): ZeRO 3 gathers it beside the
  // adapters and never reduces it.
  double frozen_dense = 0, frozen_expert = 0;
  // Of dense and expert, the FP8 GEMMs' weights the all-gathers carry as FP8, a byte each
  // (training.fp8_param_gather; MXFP8's go as bf16, param_and_grad_buffer.py's shared buffer).
  double fp8_dense = 0, fp8_expert = 0;
  bool layer = false;  // a transformer layer (recompute replays layers, not embedding or head)
  // Rerun before backward under the training's recompute mode (a layer the mode applies to:
  // every one, or the first recompute_layers of its chunk); `act` is then what the mode keeps.
  bool recompute = false;
};

// A model chunk: the pieces one stage runs for one virtual stage, split into gradient buckets
// (segments, forward order).
struct Chunk {
  std::vector<Piece> pieces;
  std::vector<std::pair<int, int>> segments;  // [first, last) piece ranges
  double act = 0;
  double act_w = 0;         // of it, or rebuilt by recompute, what W needs after B (split backward)
  double act_full_max = 0;  // the most recompute rebuilds of one layer (dropped bytes)
  double transient = 0;     // the most working memory of one of its pieces' ops (the loss's)
  // Of it, the most one layer's ops hold (context parallelism's gathered K and V), beside what
  // recompute rebuilds of that layer during its backward.
  double layer_transient = 0;
  int id = -1;  // stage * chunks + chunk in LayerLowering's table (-1: none)
  // Its parameters are one data-parallel bucket (Megatron-Core's, LayerLowering::Segment): each
  // segment's collective is one call, not split at the bucket size.
  bool one_bucket = false;
};

// Hash of a pair of 64-bit integers, for the lowerings' memo tables.
struct Int64PairHash {
  size_t operator()(const std::pair<int64_t, int64_t>& p) const {
    return std::hash<int64_t>()(p.first) ^ (std::hash<int64_t>()(p.second) * 0x9E3779B97F4A7C15ull);
  }
};

class LoweringContext {
 public:
  LoweringContext(const ModelSpec& m, const Training& t, const Layout& l, const ClusterSpec& c,
                  const StepOptions& o, LoweredStep* out);

  const ModelSpec& model;
  const Training& training;
  const Layout& layout;
  const ClusterSpec& cluster;
  const StepOptions& options;
  LoweredStep& out;
  sim::Program& program;
  CostModel cost;
  Placement placement;
  const PipelineSchedule& schedule;
  GroupPlacement groups[kNumGroups];  // shape of each group kind (placement is symmetric)
  int64_t micro_batches = 1;
  int chunks = 1;  // model chunks per stage
  // Virtual stages on a micro-batch's route, and micro-batches per chunk (strategies/schedule.h
  // RouteLength, ChunkMicroBatches: p and m/2 for DualPipe's two directions).
  int route = 1;
  int64_t chunk_micro_batches = 1;
  double grad_bytes = 2, weight_bytes = 2;
  bool dp_comm = false;  // gradients are synchronised across data-parallel ranks
  // Bytes per data-parallel collective call: the layout's bucket, else the framework's:
  //   ZeRO 0 (DDP): PyTorch DDP's 25 MiB buckets;
  //   ZeRO 1-2 (Megatron-Core distributed optimizer): max(40M, 1M x dp) parameters per bucket
  //     (megatron/core/distributed/distributed_data_parallel.py, core_r0.8.0), so a wider
  //     data-parallel group moves fewer, larger buckets;
  //   ZeRO 3 (FSDP, DeepSpeed stage 3): one collective per wrapped layer (FSDP's unit), i.e.
  //     no bucket limit within a layer's segment.
  double bucket_bytes = 0;

  // The cost-table key of a compute duration and its duration beside a running collective
  // (one entry per distinct pair; `contended` zero = not slowed).
  uint32_t Key(Duration d, Duration contended = Duration::Zero());
  // The cost-table key of a flow (one entry per distinct latency and bytes).
  uint32_t FlowKey(Duration latency, Bytes bytes);
  // The label of a category's tasks (after InternCategoryLabels).
  uint32_t Label(TaskCat c) const { return cat_label_[static_cast<int>(c)]; }
  void InternCategoryLabels();

 private:
  // (duration, contended duration) in picoseconds -> key; asked once per compute task.
  sim::FlatMap<std::pair<int64_t, int64_t>, uint32_t, Int64PairHash> compute_keys_;
  struct RecentKey {
    int64_t d = 0, contended = 0;
    uint32_t key = sim::kNone;
  };
  static constexpr size_t kRecentKeys = 64;
  RecentKey recent_keys_[kRecentKeys];
  // (latency in picoseconds, the bytes' bit pattern) -> key.
  sim::FlatMap<std::pair<int64_t, int64_t>, uint32_t, Int64PairHash> flow_keys_;
  uint32_t cat_label_[kNumTaskCats] = {};
};

}  // namespace parasim
