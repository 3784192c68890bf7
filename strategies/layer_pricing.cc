#include "strategies/layer_pricing.h"

#include <algorithm>
#include <cmath>

#include "models/layer_graph.h"
#include "strategies/host_ops.h"
#include "strategies/step_kernels.h"

namespace parasim {

namespace {

// Blockwise FP8's weight-gradient GEMMs (DeepSeek-V3's recipe: the contraction runs over
// tokens, whose 1x128 scales the kernel applies every 128 of them while it accumulates into the
// fp32 gradients) against the forward GEMMs of the same FLOPs, as DeepSeek-V3's profiled chunk
// pair on H800 ran them (docs/MODEL.md, "The DeepSeek-V3 chunk pair on H800, kind by kind";
// deepseek-ai/profile-data): the routed experts' accumulating kernels (fp8_dptp128c_acc) took
// 5.43 ms a layer against their forward's 2.90 (0.53), the attention projections' 9.554 ms
// against 6.693 (0.70).
constexpr double kBlockwiseExpertWgradRate = 0.53;
constexpr double kBlockwiseWgradRate = 0.70;

}  // namespace

LayerPricer::LayerPricer(LoweringContext& ctx) : ctx_(ctx) {
  if (ctx_.training.precision == Dtype::kFp8) cost16_.emplace(ctx_.cluster, Dtype::kBf16);
}

double NodeLimitedShare(const MoeSpec& e, const GroupPlacement& g) {
  // A token's top_k experts fall on N nodes of the EP group at random: E[distinct nodes] =
  // N (1 - (1 - 1/N)^top_k). Limited to M nodes and sent once to each, the network carries
  // min(M, that) copies of the token instead of top_k (the remote fraction, (N - 1)/N, is the
  // same for both and stays in the all-to-all's price).
  if (e.node_limit <= 0 || e.top_k <= 0) return 1.0;
  const double nodes = std::ceil(static_cast<double>(g.size) / std::max<int64_t>(1, g.per_node));
  if (nodes <= 1) return 1.0;
  const double distinct = nodes * (1 - std::pow(1 - 1 / nodes, e.top_k));
  return std::min(1.0, std::min<double>(e.node_limit, distinct) / e.top_k);
}

Duration LayerPricer::Comm(const CommSpec& c) const {
  if (c.kind == CommKind::kNone || c.bytes <= 0) return Duration::Zero();
  const GroupPlacement& g = ctx_.groups[static_cast<int>(c.group)];
  if (g.size <= 1) return Duration::Zero();
  const double share = c.kind == CommKind::kAllToAll && c.group == GroupKind::kEp
                           ? NodeLimitedShare(ctx_.model.moe, g)
                           : 1.0;
  return ctx_.cost.CollectiveTime(ToCollective(c.kind), Bytes(c.bytes), g, share).time;
}

OpTime LayerPricer::Time(const Op& op) {
  const Training& t = ctx_.training;
  const Duration accumulate = AccumulationTime(op);
  OpTime ot;
  switch (op.kind) {
    case OpKind::kGemm:
      GemmTimes(op, accumulate, &ot);
      break;
    case OpKind::kAttention: {
      // A Mamba layer's chunked scan (not the attention core) is always a fused kernel.
      const AttentionKernel k = op.in_attention_core
                                    ? TrainingAttentionKernel(t, ctx_.model, ctx_.cluster.gpu)
                                    : AttentionKernel::kFused;
      ot.fwd = ctx_.cost.AttentionTime(op.fwd_flops * op.causal_fraction, op.fwd_bytes, false, k);
      ot.bwd = ctx_.cost.AttentionTime(op.bwd_flops * op.causal_fraction, op.bwd_bytes, true, k);
      break;
    }
    case OpKind::kMemoryBound:
      MemoryBoundTimes(op, &ot);
      break;
  }
  ot.bwd += accumulate;
  if (t.deterministic) {
    // PyTorch's NaN fill of each tensor the op allocates (Training::deterministic): one more
    // memory-bound pass over its outputs in each pass.
    const AllocatedBytes a = OutputBytes(op, t);
    ot.fwd += ctx_.cost.MemoryTime(Bytes(a.fwd)) + ctx_.cost.Launch();
    ot.bwd += ctx_.cost.MemoryTime(Bytes(a.bwd)) + ctx_.cost.Launch();
  }
  ot.recompute = Recomputes(op, t.recompute);
  if (ot.recompute) ot.rerun = RecomputeShare(op, t.recompute);
  ot.contended = op.kind == OpKind::kMemoryBound ? ctx_.cluster.gpu.contended_memory
                                                 : ctx_.cluster.gpu.contended_compute;
  CommTimes(op, &ot);
  HostTimes(op, &ot);
  if (ctx_.options.granularity == Granularity::kOp) {
    ot.label_f = ctx_.program.Intern("F " + op.name);
    ot.label_b = ctx_.program.Intern("B " + op.name);
    ot.label_r = ctx_.program.Intern("R " + op.name);
  }
  return ot;
}

void LayerPricer::GemmTimes(const Op& op, Duration accumulate, OpTime* ot) const {
  const Training& t = ctx_.training;
  const CostModel& cm = ctx_.cost;
  const bool frozen = t.finetune != FinetuneKind::kNone;
  // FP8 training runs the layers' Linears in FP8 and the rest (router, LM head) in bf16.
  const CostModel& gemm_cost = op.fp8 || !cost16_ ? cm : *cost16_;
  for (const GemmCall& g : TrainingGemms(op, frozen)) {
    Duration d = ExpertGemmTime(gemm_cost, op, g);
    if (g.pass == 'W' && op.fp8 && t.fp8_recipe == Fp8Recipe::kBlockwise) {
      d = d * (1 / (op.expert ? kBlockwiseExpertWgradRate : kBlockwiseWgradRate));
    }
    (g.pass == 'F' ? ot->fwd : ot->bwd) += d;
    if (g.pass == 'W') ot->wgrad += d;
  }
  if (op.fp8) AddFp8Casts(op, ot);
  ot->wgrad += accumulate;  // after the weight-gradient GEMM, in its pass
  if (t.finetune == FinetuneKind::kQlora && op.params > 0 && op.name != "lm_head") {
    // 4-bit weights dequantised to bf16 before each use (read 0.5 B, write 2 B a weight); the
    // LM head stays 16-bit (StageAccounting::BaseBytes).
    Duration dq = cm.MemoryTime(Bytes(op.params * 2.5));
    ot->fwd += dq;
    ot->bwd += dq;
  }
}

void LayerPricer::MemoryBoundTimes(const Op& op, OpTime* ot) const {
  const CostModel& cm = ctx_.cost;
  // The graph marks only the passes whose per-element work was measured (a norm's and a
  // dropout's backward stream: ElementMath::kStream).
  const ElementwiseRates& rates = ctx_.cluster.gpu.elementwise_rates;
  auto rate = [&](ElementMath math, bool backward) {
    switch (math) {
      case ElementMath::kActivation:
        return backward ? rates.activation_backward : rates.activation_forward;
      case ElementMath::kNorm:
        return rates.norm_forward;
      case ElementMath::kDropout:
        return rates.dropout_forward;
      case ElementMath::kLossPasses:
        return rates.loss_pass;
      case ElementMath::kStream:
        break;
    }
    return 0.0;
  };
  auto price = [&](Bytes bytes, ElementMath math, double sm_passes, double sm_bytes,
                   bool backward) {
    const double r = rate(math, backward);
    if (math != ElementMath::kLossPasses || r <= 0) {
      return cm.ElementwiseTime(bytes, op.elements, r);
    }
    // Several kernels one after another: those the SMs bound, and the rest streaming.
    return cm.MemoryTime(Bytes(bytes.bytes() - sm_bytes)) +
           cm.ElementwiseTime(Bytes(sm_bytes), sm_passes * op.elements, r);
  };
  ot->fwd =
      price(op.fwd_bytes, op.fwd_math, op.fwd_sm_passes, op.fwd_sm_bytes, false) + cm.Launch();
  ot->bwd = price(op.bwd_bytes, op.bwd_math, op.bwd_sm_passes, op.bwd_sm_bytes, true) + cm.Launch();
}

void LayerPricer::CommTimes(const Op& op, OpTime* ot) const {
  ot->fwd_comm = Comm(op.fwd_comm);
  ot->bwd_comm = Comm(op.bwd_comm);
  ot->fwd_group = op.fwd_comm.group;
  ot->bwd_group = op.bwd_comm.group;
  ot->fwd_cat = CommCat(op.fwd_comm.group);
  ot->bwd_cat = CommCat(op.bwd_comm.group);
  auto overlap = [&](const CommSpec& c) {
    return c.overlappable ||
           (c.group == GroupKind::kTp && ctx_.layout.overlap_tp == Layout::TpOverlap::kAll);
  };
  ot->fwd_overlap = overlap(op.fwd_comm);
  ot->bwd_overlap = overlap(op.bwd_comm);
  if (op.bwd_comm.regather && op.bwd_comm.beside_wgrad) {
    // SP keeps the Linear's input sharded: its backward gathers it again for the weight
    // gradient, whether or not the collectives overlap (Megatron-LM's backward issues the
    // all-gather whenever sequence_parallel is set; overlap.tp false makes it block).
    CommSpec ag = op.bwd_comm;
    ag.kind = CommKind::kAllGather;
    ot->bwd_regather = Comm(ag);
  }
  const bool beside_wgrad =
      op.bwd_comm.beside_wgrad && ctx_.layout.overlap_tp != Layout::TpOverlap::kNone;
  if (ot->bwd_overlap || !beside_wgrad) {
    // Hidden behind the whole backward (overlap.tp all), or blocking one after the other.
    ot->bwd_comm += ot->bwd_regather;
    ot->bwd_regather = Duration::Zero();
  } else {
    ot->bwd_beside_wgrad = true;
  }
}

void LayerPricer::HostTimes(const Op& op, OpTime* ot) const {
  // The op's kernels and, one each, the collectives it issues over a group of more than one
  // rank (a collective priced at zero has none).
  const Layout& l = ctx_.layout;
  const HostOps h =
      CountHostOps(op, ctx_.training, {l.cp, l.cp_comm == Layout::CpComm::kAllGather});
  const bool regather = op.bwd_comm.regather && op.bwd_comm.beside_wgrad;
  const double fwd_comm = ot->fwd_comm > Duration::Zero() ? kHostOpsPerCollective : 0;
  const double bwd_comm =
      ot->bwd_comm > Duration::Zero() ? kHostOpsPerCollective * (regather ? 2 : 1) : 0;
  const Duration c = ctx_.cluster.gpu.host_op_time;
  ot->host_f = c * (h.fwd + fwd_comm);
  ot->host_b = c * (h.bwd + bwd_comm);
  ot->host_w = c * h.wgrad;
}

namespace {

// Transformer Engine's grouped Linear without a grouped kernel spreads its per-expert cuBLAS
// calls over this many CUDA streams (transformer_engine/common/include/transformer_engine/
// gemm.h, num_streams; nvte_multi_stream_cublas_gemm).
constexpr int64_t kExpertGemmStreams = 4;

}  // namespace

Duration LayerPricer::ExpertGemmTime(const CostModel& cm, const Op& op, const GemmCall& g) const {
  if (!op.expert || !ctx_.training.per_expert_gemm || g.batch <= kExpertGemmStreams) {
    return cm.GemmTime(g.m, g.n, g.k, g.batch);
  }
  // One GEMM per local expert, kExpertGemmStreams of them at a time: each wave fills the GPU
  // as a batch of that many, not as one grouped GEMM of every expert's rows.
  const double waves = static_cast<double>(g.batch) / kExpertGemmStreams;
  return cm.GemmTime(g.m, g.n, g.k, kExpertGemmStreams) * waves;
}

void LayerPricer::HostBoundBlock(const Block& b, BlockTime* bt) const {
  // A MoE layer whose experts the host issues one at a time after the routing's
  // device-to-host synchronisation (IssuesExpertsFromHost). No kernel starts before the host
  // has issued it (GpuSpec::host_op_time each), and the host runs ahead of the GPU except across
  // that synchronisation (tools/gpu_check/moe_step_check.py, docs/MODEL.md "Dropless experts
  // issued from the host"):
  // - forward: after the synchronisation the GPU's queue is empty, so the experts take the
  //   longer of their kernels and their issue, and the rest of the layer likewise;
  // - backward: no synchronisation, so the layer takes the longer of all its kernels and all
  //   their issue.
  // The time the host adds is spread over the ops whose issue it is, in proportion.
  // Each op's issue is its host time (OpTime::host_f, host_b: strategies/host_ops.h).
  auto host = [&](size_t i, bool backward) {
    return (backward ? bt->ops[i].host_b : bt->ops[i].host_f).seconds();
  };
  auto spread = [&](bool backward, auto in_section) {
    double gpu = 0, issue = 0;
    for (size_t i = 0; i < b.size(); ++i) {
      if (!in_section(b.op(i))) continue;
      gpu += (backward ? bt->ops[i].bwd : bt->ops[i].fwd).seconds();
      issue += host(i, backward);
    }
    const double wait = issue - gpu;
    if (wait <= 0) return;
    for (size_t i = 0; i < b.size(); ++i) {
      if (!in_section(b.op(i))) continue;
      Duration& d = backward ? bt->ops[i].bwd : bt->ops[i].fwd;
      d += Duration::Seconds(wait * host(i, backward) / issue);
    }
  };
  spread(false, [](const Op& op) { return op.expert; });
  spread(false, [](const Op& op) { return !op.expert; });
  spread(true, [](const Op&) { return true; });
}

Duration LayerPricer::AccumulationTime(const Op& op) const {
  const Training& t = ctx_.training;
  if (t.grad_accumulation == GradAccumulation::kFused || op.params <= 0 ||
      t.finetune != FinetuneKind::kNone) {
    return Duration::Zero();
  }
  const Layout& l = ctx_.layout;
  const double acc = DtypeBytes(t.grad_dtype);
  double bytes;
  if (l.shards_gradients()) {
    // ZeRO 2/3 reducing every micro-batch: the reduce-scatter's shard is added to the
    // accumulated shard (FSDP2's foreach_reduce: `grad += new_sharded_grad`).
    const double dense = static_cast<double>(l.dp) * l.cp;
    const double shard = op.expert ? std::max(1.0, l.expert_data_width()) : dense;
    bytes = 3 * acc * op.params / shard;
  } else {
    // Read the weight gradient the backward wrote and read and write the accumulated one.
    bytes = (BackwardGradBytes(t) + 2 * acc) * op.params;
  }
  return ctx_.cost.MemoryTime(Bytes(bytes)) + ctx_.cost.Launch();
}

void LayerPricer::AddFp8Casts(const Op& op, OpTime* ot) const {
  // The bf16 -> E4M3 casts around an FP8 GEMM, each a memory-bound kernel (read 2 bytes, write
  // the FP8 bytes of an element). Measured on an H100 (tools/gpu_check/fp8_bench.py,
  // hardware/profiles/h100-sxm5-80gb-2026-11-22-measurements/fp8-quantize.yaml): a 1x128 tile
  // cast runs as fast as a per-tensor one, both at 0.94 of HBM bandwidth, so the recipes differ
  // in the passes they make, not in their kernels' speed.
  const CostModel& cm = ctx_.cost;
  const double x = static_cast<double>(op.m) * op.k * op.batch;  // the GEMM's input
  const double g = static_cast<double>(op.m) * op.n * op.batch;  // its output's gradient
  auto cast = [&](double bytes) { return cm.MemoryTime(Bytes(bytes)) + cm.Launch(); };
  if (ctx_.training.fp8_recipe == Fp8Recipe::kTensorwise) {
    // Cast and transpose in one kernel (Transformer Engine's cast_transpose): the input for
    // forward and weight gradient, then the output gradient for the input and weight gradients.
    ot->fwd += cast(4 * x);
    ot->bwd += cast(4 * g);
  } else if (ctx_.training.fp8_recipe == Fp8Recipe::kMxfp8) {
    // MXFP8's blocks run along the inner dimension of each GEMM, so a tensor used both ways is
    // quantized both ways, rowwise and columnwise, in one kernel (Transformer Engine's "tensor
    // usages", docs/.../performance_considerations): the input for forward and weight gradient,
    // the output gradient for the input and weight gradients, each with its E8M0 scales.
    const double e = Fp8ElementBytes(Fp8Recipe::kMxfp8);
    ot->fwd += cast((2 + 2 * e) * x);
    ot->bwd += cast((2 + 2 * e) * g);
  } else {
    // DeepSeek-V3: the input cast per 1x128 tile for forward, the output gradient per 1x128 and
    // per 128x1 for the two backward GEMMs, and the cached input re-cast per 128x1 for the
    // weight gradient (its tiles run along the other dimension there).
    const double e = Fp8ElementBytes(Fp8Recipe::kBlockwise);
    ot->fwd += cast((2 + e) * x);
    ot->bwd += cast((2 + 2 * e) * g);
    const Duration w = cast(2 * e * x);
    ot->bwd += w;
    ot->wgrad += w;
  }
}

void LayerPricer::Price(const Block& b, BlockTime* bt) {
  for (size_t i = 0; i < b.size(); ++i) bt->ops.push_back(Time(b.op(i)));
  // MoE layers, and a multi-token-prediction module that holds one (DeepSeek-V3's).
  if (!IssuesExpertsFromHost(ctx_.model, ctx_.training)) return;
  for (size_t i = 0; i < b.size(); ++i) {
    if (b.op(i).expert) {
      HostBoundBlock(b, bt);
      return;
    }
  }
}

}  // namespace parasim
