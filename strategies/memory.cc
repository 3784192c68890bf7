#include "strategies/memory.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "models/layer_graph.h"
#include "strategies/schedule.h"
#include "strategies/workspaces.h"

namespace parasim {
StateBytes StateBytesPerParam(const Training& t) {
  StateBytes b;
  const bool mixed = t.precision != Dtype::kFp32 && t.precision != Dtype::kTf32;
  // fp8 training keeps bf16 weights (Transformer Engine casts per GEMM).
  b.weights = t.precision == Dtype::kFp8 ? 2.0 : DtypeBytes(t.precision);
  b.grads = DtypeBytes(t.grad_dtype);
  // The master copy: fp32, or two bytes (the fp32 value's remainder beside bf16 weights, or
  // fp16); none when the weights are fp32 themselves. A remainder beside fp16 weights (a sweep
  // over the precision reaches it; the block refuses it) is no remainder: Transformer Engine's
  // FusedAdam stores it only for bf16 parameters, else a whole fp32 master.
  const bool bf16_weights = t.precision == Dtype::kBf16 || t.precision == Dtype::kFp8;
  const bool half = t.master_weights == MasterWeights::kFp16 ||
                    (t.master_weights == MasterWeights::kRemainder && bf16_weights);
  const double master = !mixed ? 0.0 : half ? 2.0 : 4.0;
  // Adam's m and v (or SGD's momentum), fp32 unless `moments: bf16`.
  const double moment = t.moments == Dtype::kBf16 ? 2.0 : 4.0;
  b.optimizer = master + (t.optimizer == OptimizerKind::kAdam ? 2 * moment : moment);
  return b;
}

double Fp8WeightCopyBytesOf(const Training& t, const GpuSpec& gpu) {
  if (t.precision != Dtype::kFp8 || !t.transformer_engine) return 0.0;
  return Fp8WeightCopyBytes(t.fp8_recipe, gpu.compute_capability);
}

GraphShape RankShape(const Training& t, const Layout& l) {
  GraphShape shape;
  shape.micro_batch = t.micro_batch;
  shape.seq_len = t.seq_len;
  shape.tp = l.tp;
  shape.sp = l.sp;
  shape.cp = l.cp;
  shape.cp_all_gather = l.gathers_kv();
  shape.ep = l.ep;
  shape.etp = l.expert_tp();
  shape.act_bytes = (t.precision == Dtype::kFp32 || t.precision == Dtype::kTf32) ? 4 : 2;
  shape.attention = t.attention;
  if (t.attention_dropout >= 0) shape.attention_dropout = t.attention_dropout > 0 ? 1 : 0;
  shape.fused_cross_entropy = t.fused_cross_entropy;
  if (t.precision == Dtype::kFp8) shape.fp8 = t.fp8_recipe;
  return shape;
}

namespace {

// What one layer adds to a stage, the same for every layer of its kind (LayerKind): its
// expert, dense and LoRA parameters, the activations its recompute mode keeps, and those it
// drops (rebuilt during backward).
struct LayerBytes {
  double expert, dense, lora, lora_expert, kept, dropped, transient;
  double fp8_expert, fp8_dense;  // of expert and dense, the FP8 GEMMs' weights
};

LayerBytes LayerBytesOf(const Block& blk, const Training& t, bool lora) {
  const double kept = ActivationBytes(blk, t.recompute);
  const double fp8_expert = Fp8GemmParams(blk, true);
  return LayerBytes{BlockParams(blk, true),
                    BlockParams(blk) - BlockParams(blk, true),
                    lora ? LoraParams(blk, t.lora_rank) : 0.0,
                    lora ? LoraParams(blk, t.lora_rank, /*experts_only=*/true) : 0.0,
                    kept,
                    ActivationBytes(blk, RecomputeKind::kNone) - kept,
                    TransientBytes(blk),
                    fp8_expert,
                    Fp8GemmParams(blk) - fp8_expert};
}

// A split backward's W holds what its GEMMs saved (schedule_zb.cc), as a share of a dense
// layer's activations, averaged over the recomputed layers and the others.
double WeightGradHold(const ModelSpec& m, const ModelGraph& g, const Training& t,
                      const std::vector<char>& recomputed, int layers) {
  if (m.is_hybrid()) {
    // A hybrid stack's layers differ by kind: what their GEMMs saved over what they keep.
    double act = 0, held = 0;
    for (int i = 0; i < layers; ++i) {
      const Block& b = g.Layer(m.KindOf(i));
      act += ActivationBytes(
          b, recomputed[static_cast<size_t>(i)] ? t.recompute : RecomputeKind::kNone);
      held += WeightGradBytes(b);
    }
    return act > 0 ? std::min(1.0, held / act) : 0.0;
  }
  const double n = static_cast<double>(layers);
  const double kept = static_cast<double>(std::count(recomputed.begin(), recomputed.end(), 0));
  const double act = kept == 0   ? ActivationBytes(g.dense, t.recompute)
                     : kept == n ? ActivationBytes(g.dense, RecomputeKind::kNone)
                                 : ((n - kept) * ActivationBytes(g.dense, t.recompute) +
                                    kept * ActivationBytes(g.dense, RecomputeKind::kNone)) /
                                       n;
  return act > 0 ? std::min(1.0, WeightGradBytes(g.dense) / act) : 0.0;
}

// What a stage's chunks hold: its layers, its parameters by kind, and its activations per
// micro-batch (each chunk's, and the most that recompute rebuilds of one layer).
struct StageContents {
  int layers = 0;
  double dense = 0, expert = 0, lora = 0, lora_expert = 0;  // lora_expert: of lora, the experts'
  double fp8_dense = 0, fp8_expert = 0;  // of dense and expert, the FP8 GEMMs' weights
  double tables = 0;         // of dense: the embedding tables and the LM head (16-bit under QLoRA)
  double largest_table = 0;  // of tables: the largest one
  double act_per_mb = 0, act_full_layer = 0;
  double layer_transient = 0;  // the most one layer's ops hold while they run (CP's gathers)
  double head_transient = 0;   // the loss's working memory, where the stage holds the LM head
  std::vector<double> chunk_bytes;
};

// One layout's memory accounting, stage by stage: what every stage reads, computed once.
class StageAccounting {
 public:
  StageAccounting(const ModelSpec& m, const Training& t, const Layout& l, const ModelGraph& g,
                  double workspaces, double fp8_copy)
      : m_(m),
        t_(t),
        l_(l),
        g_(g),
        schedule_(ScheduleOf(l.schedule)),
        rule_(StateBytesPerParam(t)),
        lora_(t.finetune != FinetuneKind::kNone),
        // Layers past a chunk's recompute_layers keep every activation.
        recomputed_(RecomputedLayers(l, t, m.layers)),
        // Each virtual stage's layers in model order, and whether it holds the embedding or the
        // LM head (a stage's chunks of an interleaved or V schedule hold runs apart from each
        // other).
        spans_(ChunkSpans(l, m.layers)),
        shape_(ShapeOf()),
        in_flights_(InFlights()),
        workspaces_(workspaces),
        fp8_copy_(lora_ ? 0.0 : fp8_copy) {
    for (int k = 0; k < kLayerKinds; ++k) {
      const Block& b = g.Layer(static_cast<LayerKind>(k));
      if (b.size() > 0) layer_bytes_[k] = LayerBytesOf(b, t, lora_);
    }
    // Multi-token prediction, beside the LM head: each module's own ops and layer (its head's
    // weights are the LM head's).
    const double depth = m.mtp_depth;
    const Block& mtp_layer = g.mtp_layer();
    mtp_act_ =
        depth * (ActivationBytes(g.mtp, t.recompute) + ActivationBytes(mtp_layer, t.recompute) +
                 ActivationBytes(g.head, RecomputeKind::kNone));
    mtp_expert_ = depth * BlockParams(mtp_layer, true);
    mtp_dense_ =
        depth * (BlockParams(g.mtp) + BlockParams(mtp_layer) - BlockParams(mtp_layer, true));
    mtp_fp8_expert_ = depth * Fp8GemmParams(mtp_layer, true);
    mtp_fp8_dense_ = depth * (Fp8GemmParams(g.mtp) + Fp8GemmParams(mtp_layer)) - mtp_fp8_expert_;
  }

  double bytes_per_param() const { return rule_.weights + rule_.grads + rule_.optimizer; }

  StageMemory Stage(int s) {
    const StageContents c = ContentsOf(s);
    StageMemory st;
    st.layers = c.layers;
    States(c, &st);
    Activations(s, c, &st);
    Buffers(c, &st);
    return st;
  }

 private:
  // The pipeline's shape, with what a split backward's W holds.
  PipelineShape ShapeOf() const {
    PipelineShape shape{l_.pp, ChunksOf(l_),
                        std::max<int64_t>(1, t_.global_batch / (l_.dp * t_.micro_batch))};
    if (schedule_.splits_backward()) {
      shape.w_hold = WeightGradHold(m_, g_, t_, recomputed_, m_.layers);
    }
    return shape;
  }

  // Per stage, the micro-batches in flight at the peak, as the schedule runs them.
  std::vector<double> InFlights() const {
    std::vector<double> in_flights = *SharedInFlights(l_, shape_);
    if (l_.overlap_ep && l_.pp == 1 && !schedule_.pairs_forward_backward()) {
      // One stage with overlap.ep runs the next forward before the backward: two in flight.
      in_flights[0] =
          PeakInFlight((*SharedLayoutOrders(l_, shape_))[0], shape_.chunks, shape_.w_hold);
    }
    return in_flights;
  }

  // The stage's chunks, layer by layer, with the embedding and the LM head where it holds them.
  StageContents ContentsOf(int s) const {
    StageContents c;
    const int chunks = shape_.chunks;
    for (int k = 0; k < chunks; ++k) {
      const ChunkSpan& vs = spans_[VirtualStageOf(schedule_, l_.pp, s, k)];
      double bytes = 0;
      for (int i = vs.first; i < vs.first + vs.layers; ++i) {
        const LayerBytes& lb = layer_bytes_[static_cast<int>(m_.KindOf(i))];
        c.layer_transient = std::max(c.layer_transient, lb.transient);
        c.expert += lb.expert;
        c.dense += lb.dense;
        c.fp8_expert += lb.fp8_expert;
        c.fp8_dense += lb.fp8_dense;
        if (lora_) {
          c.lora += lb.lora;
          c.lora_expert += lb.lora_expert;
        }
        if (recomputed_[static_cast<size_t>(i)]) {
          bytes += lb.kept;
          c.act_full_layer = std::max(c.act_full_layer, lb.dropped);
        } else {
          bytes += lb.kept + lb.dropped;
        }
      }
      c.layers += vs.layers;
      // An embedding table or the LM head: dense parameters, kept 16-bit under QLoRA.
      auto table = [&c](double params) {
        c.dense += params;
        c.tables += params;
        c.largest_table = std::max(c.largest_table, params);
      };
      if (vs.embedding) table(BlockParams(g_.embedding));
      if (vs.head) {
        table(BlockParams(g_.head));
        c.dense += mtp_dense_;
        c.expert += mtp_expert_;
        c.fp8_dense += mtp_fp8_dense_;
        c.fp8_expert += mtp_fp8_expert_;
        // A tied LM head away from its route's embedding (stage 0, or stage p-1 for
        // DualPipe's upward copy) keeps its own copy of the table.
        const bool apart = schedule_.bidirectional() ? l_.pp > 1 : s != 0;
        if (m_.tied_embeddings && apart) {
          table(static_cast<double>(m_.vocab) * m_.hidden / l_.tp);
        }
        if (m_.mtp_depth > 0 && !schedule_.bidirectional() && s != 0) {
          // Multi-token prediction embeds the next tokens on the stage of the LM head, and
          // Megatron-Core builds that stage its own input embedding (GPTModel: an embedding
          // where pre_process or mtp_process, megatron/core/models/gpt/gpt_model.py at d98e8a6),
          // kept in step with stage 0's as tied tables are; tied, the head's own table is
          // allocated beside it all the same (skip_weight_param_allocation only where
          // pre_process). DualPipe holds both ends on one rank (DeepSeek-V3, arXiv:2412.19437
          // Sec. 3.2.1), so shares them.
          table(BlockParams(g_.embedding));
        }
        bytes += ActivationBytes(g_.head, RecomputeKind::kNone) + mtp_act_;
        c.head_transient = TransientBytes(g_.head);
      }
      c.chunk_bytes.push_back(bytes);
      c.act_per_mb += bytes;
    }
    return c;
  }

  // Bytes of the frozen base under LoRA: 16 bits a parameter; QLoRA's 4-bit NormalFloat with
  // double quantisation (Dettmers et al. 2023: 4 + 0.127 bits a parameter) for the layers'
  // Linears, while the embedding tables and the LM head stay 16-bit (bitsandbytes replaces
  // nn.Linear modules but the output embedding, transformers' get_keys_to_not_convert, and no
  // nn.Embedding; the QLoRA paper's qlora.py casts both back to bf16 after
  // prepare_model_for_kbit_training). The layers' norms, cast to fp32 there, are counted 4-bit
  // (2 h parameters a layer).
  // Its dense part, then its experts'.
  std::pair<double, double> BaseBytes(const StageContents& c) const {
    if (t_.finetune != FinetuneKind::kQlora) {
      return {c.dense * rule_.weights, c.expert * rule_.weights};
    }
    return {(c.dense - c.tables) * (4.127 / 8) + c.tables * rule_.weights, c.expert * (4.127 / 8)};
  }

  // Parameters, gradients and optimizer states: LoRA's over a frozen base, or the whole
  // model's sharded as the ZeRO stage says.
  void States(const StageContents& c, StageMemory* st) const {
    const double dense = c.dense, expert = c.expert;
    st->params = dense + expert;
    const double shard_dense = static_cast<double>(l_.dp) * l_.cp;  // ZeRO shards over DP (x CP)
    const double shard_expert = std::max(1.0, l_.expert_data_width());  // edp
    // This rank's part of dense and expert parameters' bytes, sharded or whole.
    auto sharded = [&](double per_param, double d, double e, bool on) {
      return on ? per_param * (d / shard_dense + e / shard_expert) : per_param * (d + e);
    };
    if (lora_) {
      // Frozen base (BaseBytes): whole on every rank, but under ZeRO 3, which shards it as it
      // shards every parameter and gathers it layer by layer beside the adapters (FSDP's
      // FULL_SHARD of a PEFT model, FSDP-QLoRA, DeepSpeed stage 3; the replay's gathers carry
      // it: DataParallelLowering::TimedOf). ZeRO shards the adapters' states as it does a
      // model's, the experts' over the ranks that hold the same experts.
      const double ld = c.lora - c.lora_expert, le = c.lora_expert;
      const auto [base_dense, base_expert] = BaseBytes(c);
      st->params_bytes = sharded(1.0, base_dense, base_expert, l_.zero >= 3) +
                         sharded(rule_.weights, ld, le, l_.zero >= 3);
      st->grads_bytes = sharded(rule_.grads, ld, le, l_.shards_gradients());
      st->optimizer_bytes = sharded(rule_.optimizer, ld, le, l_.zero >= 1);
      st->params += c.lora;
      return;
    }
    auto part = [&](double per_param, bool on) { return sharded(per_param, dense, expert, on); };
    st->params_bytes = part(rule_.weights, l_.zero >= 3);
    if (fp8_copy_ > 0 && t_.fp8_param_gather) {
      // The FP8 GEMMs' weights are FP8 tensors themselves, sharded as the bf16 ones would be.
      st->params_bytes -=
          sharded(rule_.weights - fp8_copy_, c.fp8_dense, c.fp8_expert, l_.zero >= 3);
    } else if (fp8_copy_ > 0 && l_.zero < 3) {
      // Transformer Engine's FP8 copy of each such weight, made at a step's first micro-batch
      // and kept (Megatron-Core's TE modules pass is_first_microbatch unless
      // disable_parameter_transpose_cache; megatron/core/extensions/transformer_engine.py at
      // d98e8a6). Under ZeRO 3 they go with the gathered layers (GatheredBytes).
      st->params_bytes += fp8_copy_ * (c.fp8_dense + c.fp8_expert);
    }
    // The accumulated gradients stay whole until a reduction after the last micro-batch,
    // ZeRO 2/3 included (grad_reduce: step); sharded when every micro-batch reduces them.
    st->grads_bytes = part(rule_.grads, l_.shards_gradients());
    st->optimizer_bytes = part(rule_.optimizer, l_.zero >= 1);
  }

  // Activations of the micro-batches in flight at the peak, as the schedule runs them
  // (strategies/schedule.h), with recompute's transient on top.
  void Activations(int s, const StageContents& c, StageMemory* st) {
    const double in_flight = in_flights_[s];
    st->in_flight = in_flight;
    st->activations_bytes = c.act_per_mb * in_flight;
    if ((schedule_.mirrored() || shape_.chunks > 1) && c.act_per_mb > 0) {
      // The chunks differ (the ends of a route hold the embedding and the LM head), and an
      // interleaved stage's warm-up depends on its place: the last runs (v-1) n forwards (n the
      // micro-batch group, p by default) before
      // its first backward, the first 2 (p-1) more (megatron/core/pipeline_parallel/
      // schedules.py, get_pp_rank_microbatches), which Korthikanti's factor 1 + (p-1)/(p v)
      // gives for the first stage alone. Walk the stage's order with each chunk's bytes.
      std::vector<double> w(c.chunk_bytes.size());
      for (size_t k = 0; k < w.size(); ++k) w[k] = c.chunk_bytes[k] * shape_.w_hold;
      st->activations_bytes = peaks_.Of(s, c.chunk_bytes, w);
      st->in_flight = st->activations_bytes / c.act_per_mb;
    }
    // Beside them, one op's working memory: recompute rebuilds what it dropped of one layer
    // at a time during backward, beside that layer's own working memory (CP's gathered K and
    // V), and the loss works on copies of the logits, at other times.
    const double rebuild = t_.recompute != RecomputeKind::kNone ? c.act_full_layer : 0.0;
    st->transient_bytes = std::max(rebuild + c.layer_transient, c.head_transient);
  }

  // ZeRO 3's gathered parameters at the peak, beside their shards: two units (a layer each),
  // the one that runs and the one gathered ahead (FSDP2's and DeepSpeed's prefetch, FSDP1's
  // rate limiter, Megatron-FSDP's double buffer: docs/user-guide/features/megatron_fsdp.md at
  // Megatron-LM d98e8a6), and the tables as each implementation holds them:
  // - flat buffers (zero3_copies false): the embedding and the LM head whole from the first
  //   forward through the backward. Megatron-FSDP shards only its unit modules (transformer,
  //   MoE and Mamba layers) and leaves every other module's parameters gathered once used
  //   (megatron_fsdp.py: no post-forward release for a non-unit module); FSDP1 keeps its root,
  //   which holds the tables where the layers are the wrapped units, gathered after the forward
  //   (torch/distributed/fsdp/_runtime_utils.py, _post_forward_reshard: not state._is_root);
  // - per-parameter sharding (zero3_copies true): each table is a unit of its own (torchtitan's
  //   and Megatron-Core's FSDP2 wrap the embedding and the norm with the LM head apart), so
  //   the LM head, gathered for the loss, sits beside the layer gathered ahead of the backward.
  // A mean layer's bytes leave the tables out (they had been spread over the layers: twice what
  // FSDP2 holds on a one-layer stage with the embedding). LoRA: the adapters' and the frozen
  // base's.
  // FP8 GEMMs' weights: gathered as FP8 tensors with fp8_param_gather, else gathered 16-bit
  // with Transformer Engine's FP8 copy made beside them at each gather (the cached copy lives
  // no longer than the gathered weight it was made from; States counts none under ZeRO 3).
  double GatheredBytes(const StageContents& c, int layers) const {
    const auto [base_dense, base_expert] = BaseBytes(c);
    const double fp8 = c.fp8_dense + c.fp8_expert;
    const double fp8_extra =
        fp8_copy_ <= 0 ? 0.0 : (t_.fp8_param_gather ? fp8_copy_ - rule_.weights : fp8_copy_);
    const double all = lora_ ? rule_.weights * c.lora + base_dense + base_expert
                             : rule_.weights * (c.dense + c.expert) + fp8_extra * fp8;
    const double tables = rule_.weights * c.tables;  // 16-bit under QLoRA as well (BaseBytes)
    // Held from their forward to their backward (or to the step's end), every layer of the
    // stage is gathered at the last forward's end (parallelism.zero3_reshard).
    if (l_.zero3_reshard != Layout::Zero3Reshard::kForward) return all;
    const double layer = layers > 0 ? (all - tables) / layers : 0.0;
    if (!l_.zero3_copies) return tables + 2 * layer;
    return std::max(2 * layer, rule_.weights * c.largest_table + layer);
  }

  // Data-parallel buckets are views of the contiguous gradient buffer, reduced (or
  // reduce-scattered into their own shard) in place: Megatron-LM's DDP
  // (megatron/core/distributed/param_and_grad_buffer.py, bucket.grad_data) and PyTorch DDP with
  // gradient_as_bucket_view; NCCL's staging lies in the reserve. (Measured: with two 25 MiB
  // buckets counted, the megatron-ci training subset's dp > 1 runs came out ~2% higher than its
  // dp = 1 runs; docs/MODEL.md "Peak memory".) ZeRO-3 holds gathered parameters
  // (GatheredBytes); the libraries hold their workspaces; the reserve lies outside the allocator.
  void Buffers(const StageContents& c, StageMemory* st) const {
    double comm = 0;
    // Over one rank ZeRO 3 shards nothing: the weights are whole, nothing is gathered (as the
    // lowering's data-parallel groups, dense and expert, of one rank each).
    if (l_.zero == 3 && (l_.dp * l_.cp > 1 || l_.expert_data_width() > 1)) {
      comm = GatheredBytes(c, st->layers);
    }
    st->other_bytes = comm + workspaces_;
    st->reserve_bytes = kFrameworkReserveBytes;
  }

  const ModelSpec& m_;
  const Training& t_;
  const Layout& l_;
  const ModelGraph& g_;
  const PipelineSchedule& schedule_;
  const StateBytes rule_;
  const bool lora_;
  const std::vector<char> recomputed_;
  const std::vector<ChunkSpan> spans_;
  const PipelineShape shape_;
  const std::vector<double> in_flights_;  // per stage, micro-batches in flight at the peak
  const double workspaces_;  // library workspaces on every GPU (strategies/workspaces.h)
  LayerBytes layer_bytes_[kLayerKinds] = {};  // per LayerKind, of the kinds the model has
  double mtp_act_ = 0, mtp_expert_ = 0, mtp_dense_ = 0, mtp_fp8_expert_ = 0, mtp_fp8_dense_ = 0;
  const double fp8_copy_;  // bytes a parameter of Transformer Engine's FP8 weight copy; 0: none
  // LayoutOrders differ from the schedule's only in F&B pairs, not in what each unit holds.
  StagePeaks peaks_{l_, shape_};
};

}  // namespace

int AdoptReplayPeaks(const std::vector<double>& peak_bytes, MemoryReport* r) {
  if (peak_bytes.size() != r->stages.size()) return 0;
  int changed = 0;
  r->fits = true;
  for (size_t i = 0; i < r->stages.size(); ++i) {
    StageMemory& st = r->stages[i];
    const double d = peak_bytes[i] - st.total();
    if (std::abs(d) > 1) {
      const double per_mb = st.in_flight > 0 ? st.activations_bytes / st.in_flight : 0;
      st.activations_bytes = std::max(0.0, st.activations_bytes + d);
      if (per_mb > 0) st.in_flight = st.activations_bytes / per_mb;
      ++changed;
    }
    r->fits = r->fits && st.total() <= r->capacity_bytes;
  }
  return changed;
}

MemoryReport EstimateMemory(const ModelSpec& m, const Training& t, const Layout& l,
                            const ClusterSpec& cluster) {
  MemoryReport rep;
  rep.capacity_bytes = cluster.gpu.memory.bytes();
  const auto graph = SharedModelGraph(m, RankShape(t, l));
  StageAccounting stages(m, t, l, *graph, WorkspacesOf(m, t, l, cluster.gpu).total(),
                         Fp8WeightCopyBytesOf(t, cluster.gpu));
  rep.bytes_per_param = stages.bytes_per_param();
  for (int s = 0; s < l.pp; ++s) {
    StageMemory st = stages.Stage(s);
    if (st.total() > rep.capacity_bytes) rep.fits = false;
    rep.stages.push_back(st);
  }
  return rep;
}

}  // namespace parasim
