// Layer pricing: every op of the layer graph's blocks (models/layer_graph.h) priced for one
// rank's shard: GEMMs on the roofline (FP8 with its casts, experts issued one by one where
// the framework does, QLoRA's dequantisation), attention, memory-bound ops at their measured
// per-element rates, a gradient-accumulation pass where it is separate, and the TP/SP, CP and
// EP collectives each op carries, timed for its whole group. The layer planner
// (layer_lowering.h) builds its chunks from these times.
//
//   LayerPricer pricer(ctx);
//   BlockTime dense;
//   pricer.Price(graph->dense, &dense);   // dense.ops[i]: op i's forward, backward, W, comm
#pragma once

#include <optional>

#include "hardware/cost_model.h"
#include "models/op.h"
#include "strategies/lowering.h"
#include "strategies/step_kernels.h"

namespace parasim {

// The share of an EP all-to-all's off-node bytes that crosses the network under node-limited
// routing (MoeSpec::node_limit; 1 without a limit or within one node).
double NodeLimitedShare(const MoeSpec& e, const GroupPlacement& g);

class LayerPricer {
 public:
  explicit LayerPricer(LoweringContext& ctx);

  // Appends the time of every op of `b`, in the block's order, to bt->ops; a MoE block whose
  // experts the host issues one at a time is priced at no less than the host's issue.
  void Price(const Block& b, BlockTime* bt);

 private:
  // One op's times in each phase, its collectives, and (--ops) its labels.
  OpTime Time(const Op& op);
  // A GEMM's passes: forward, backward with its weight gradient (and `accumulate`, the pass
  // adding it to the accumulated gradients), FP8 casts, QLoRA's dequantisation.
  void GemmTimes(const Op& op, Duration accumulate, OpTime* ot) const;
  // A memory-bound op's passes at the GPU's measured per-element rates.
  void MemoryBoundTimes(const Op& op, OpTime* ot) const;
  // The collectives the op carries, and how they overlap its compute.
  void CommTimes(const Op& op, OpTime* ot) const;
  // The host's time to issue the op's kernels and collectives (OpTime::host_*).
  void HostTimes(const Op& op, OpTime* ot) const;
  Duration Comm(const CommSpec& c) const;
  void AddFp8Casts(const Op& op, OpTime* ot) const;
  // training.grad_accumulation: separate: the pass adding an op's weight gradients of one
  // micro-batch to the accumulated ones; zero when fused.
  Duration AccumulationTime(const Op& op) const;
  // A MoE block's passes priced at no less than the host's time to issue their kernels where
  // the experts are issued one at a time after the routing's sync (IssuesExpertsFromHost).
  void HostBoundBlock(const Block& b, BlockTime* bt) const;
  // A GEMM call's time; the routed experts' issued one per expert (Training::per_expert_gemm)
  // are priced a few streams at a time rather than as one grouped GEMM.
  Duration ExpertGemmTime(const CostModel& cm, const Op& op, const GemmCall& g) const;

  LoweringContext& ctx_;
  std::optional<CostModel> cost16_;  // bf16 GEMMs of FP8 training (router, LM head)
};

}  // namespace parasim
