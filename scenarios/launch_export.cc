#include "scenarios/launch_export.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "scenarios/megatron_exprs.h"
#include "sim/parse_units.h"
#include "strategies/layout.h"
#include "strategies/placement.h"
#include "strategies/schedule.h"

namespace parasim {
namespace {

// Builds the flag list; `Miss` records what cannot be said.
class Flags {
 public:
  explicit Flags(LaunchConfig* l) : l_(l) {}
  void Add(const std::string& flag) { l_->megatron.push_back(flag); }
  template <typename T>
  void Add(const std::string& flag, const T& value) {
    l_->megatron.push_back(flag);
    l_->megatron.push_back(fmt::format("{}", value));
  }
  void Miss(const std::string& key, const std::string& value, const std::string& why) {
    l_->megatron_missing.push_back({key, value, why});
  }
  bool Has(const std::string& flag) const {
    return std::find(l_->megatron.begin(), l_->megatron.end(), flag) != l_->megatron.end();
  }

 private:
  LaunchConfig* l_;
};

// "--moe-layer-freq": the MoE pattern as runs of a Python list expression.
std::string LayerFreq(const ModelSpec& m) {
  std::string out;
  int i = 0;
  while (i < m.layers) {
    const int bit = m.IsMoeLayer(i) ? 1 : 0;
    int run = 0;
    while (i < m.layers && (m.IsMoeLayer(i) ? 1 : 0) == bit) {
      ++run;
      ++i;
    }
    out += fmt::format("{}[{}]*{}", out.empty() ? "" : "+", bit, run);
  }
  return "(" + out + ")";
}

// The largest of 128, 64, ..., 1 that leaves the vocabulary unpadded at this TP.
int Divisor(int64_t vocab, int tp) {
  for (int d = 128; d > 1; d /= 2) {
    if (vocab % (static_cast<int64_t>(d) * tp) == 0) return d;
  }
  return 1;
}

// A hybrid stack: the pattern (Megatron-LM counts its layers from it), split by '|' into the
// virtual stages' runs where the pipeline has stages (segment v * pp + p on stage p, as
// --pipeline-model-parallel-layout places them; it takes no layout flag beside it); then its MTP
// modules after '/', an attention layer and the MLP or experts each, as the graph builds them
// (their depth is counted from it); and the Mamba-2 mixers' sizes.
void HybridFlags(const Scenario& s, Flags& f) {
  const ModelSpec& m = s.model;
  const Layout& l = s.layout;
  const int chunks = l.schedule == kScheduleInterleaved ? l.virtual_stages : 1;
  std::string pattern;
  if (l.pp > 1) {
    const std::vector<std::vector<int>> c = ChunkLayers(l, m.layers, chunks);
    size_t at = 0;
    for (int v = 0; v < chunks; ++v) {
      for (int p = 0; p < l.pp; ++p) {
        if (!pattern.empty()) pattern += "|";
        pattern += m.hybrid.substr(at, static_cast<size_t>(c[p][v]));
        at += static_cast<size_t>(c[p][v]);
      }
    }
  } else {
    pattern = m.hybrid;
  }
  for (int d = 0; d < m.mtp_depth; ++d) pattern += m.is_moe() ? "/*E" : "/*-";
  f.Add("--hybrid-layer-pattern", pattern);
  f.Add("--mamba-num-heads", m.mamba_heads());
  f.Add("--mamba-head-dim", m.mamba.head_dim);
  f.Add("--mamba-state-dim", m.mamba.state_dim);
  f.Add("--mamba-num-groups", m.mamba.groups);
}

void ModelFlags(const Scenario& s, Flags& f) {
  const ModelSpec& m = s.model;
  f.Add("--num-layers", m.layers);
  f.Add("--hidden-size", m.hidden);
  f.Add("--num-attention-heads", m.heads);
  if (m.kv() != m.heads) {
    f.Add("--group-query-attention");
    f.Add("--num-query-groups", m.kv());
  }
  if (!m.mla.enabled()) f.Add("--kv-channels", m.hd());
  f.Add("--ffn-hidden-size", m.ffn());
  if (m.mlp == MlpKind::kSwiglu) f.Add("--swiglu");
  f.Add("--normalization", m.norm == NormKind::kRmsNorm ? "RMSNorm" : "LayerNorm");
  if (m.position == PositionKind::kAlibi) {
    f.Miss("model.position", "alibi", "Megatron-LM has no ALiBi positions");
  }
  const bool learned = m.position == PositionKind::kLearned;
  f.Add("--position-embedding-type", learned ? "learned_absolute" : "rope");
  f.Add("--max-position-embeddings", m.max_position > 0 ? m.max_position : s.training.seq_len);
  if (!m.tied_embeddings) f.Add("--untie-embeddings-and-output-weights");
  if (!m.has_bias()) f.Add("--disable-bias-linear");
  // A flat vocabulary from NullTokenizer, padded to nothing more (replace it by the job's own).
  f.Add("--tokenizer-type", "NullTokenizer");
  f.Add("--vocab-size", m.vocab);
  const int d = Divisor(m.vocab, s.layout.tp);
  f.Add("--make-vocab-size-divisible-by", d);
  if (m.vocab % (static_cast<int64_t>(d) * s.layout.tp) != 0) {
    f.Miss("model.vocab", std::to_string(m.vocab),
           "not a multiple of TP: Megatron-LM pads the embedding to one");
  }
  if (m.window.size > 0) {
    f.Miss("model.attention_window",
           fmt::format("{{size: {}, kind: {}, global_every: {}}}", m.window.size,
                       m.window.chunked ? "chunked" : "sliding", m.window.global_every),
           "local attention: Megatron-LM's --window-size is not read by the import");
  }
  if (m.mla.enabled()) {
    f.Add("--multi-latent-attention");
    if (m.mla.q_lora_rank == 0) {
      f.Miss("model.mla.q_lora_rank", "0", "no query bottleneck: Megatron-LM always has one");
    }
    f.Add("--q-lora-rank", m.mla.q_lora_rank);
    f.Add("--kv-lora-rank", m.mla.kv_lora_rank);
    f.Add("--qk-head-dim", m.mla.qk_nope_head_dim);
    f.Add("--qk-pos-emb-head-dim", m.mla.qk_rope_head_dim);
    f.Add("--v-head-dim", m.mla.v_head_dim);
  }
  if (m.is_hybrid()) {
    HybridFlags(s, f);
  } else if (m.mtp_depth > 0) {
    f.Add("--mtp-num-layers", m.mtp_depth);
  }
}

void MoeFlags(const Scenario& s, Flags& f) {
  const MoeSpec& e = s.model.moe;
  if (!s.model.is_moe()) return;
  f.Add("--num-experts", e.experts);
  f.Add("--moe-router-topk", e.top_k);
  f.Add("--moe-ffn-hidden-size", e.expert_ffn_hidden > 0 ? e.expert_ffn_hidden : s.model.ffn());
  const int64_t width = e.expert_ffn_hidden > 0 ? e.expert_ffn_hidden : s.model.ffn();
  if (e.shared_experts > 0)
    f.Add("--moe-shared-expert-intermediate-size", e.shared_experts * width);
  if (!s.model.is_hybrid() && (e.dense_layers > 0 || e.every > 1)) {
    f.Add("--moe-layer-freq", LayerFreq(s.model));
  }
  // A token sent once to each node it reaches (node_limit) is the flex dispatcher's (DeepEP, its
  // default backend); the alltoall dispatcher sends a copy per expert it picks.
  f.Add("--moe-token-dispatcher-type", e.node_limit > 0 ? "flex" : "alltoall");
  if (e.capacity_factor > 0) f.Add("--moe-expert-capacity-factor", e.capacity_factor);
  if (e.node_limit > 0) {
    // The groups are the nodes the EP group spans, as the replay places it: with TP (or the
    // experts' own TP) innermost, EP's ranks are that far apart (tp2 ep8 on 8-GPU nodes: 2).
    const GroupPlacement g = Placement(s.layout, s.cluster).Group(GroupKind::kEp);
    // Within one node the limit changes nothing (layer_pricing's NodeLimitedShare): no flags.
    const int64_t ep_nodes = (g.size + g.per_node - 1) / g.per_node;
    // A limit of the group's nodes or more limits nothing (NodeLimitedShare: min(limit, the
    // nodes a token reaches)): flex alone, as the import of a flex launch without groups writes
    // it (group flags it never had had been exported).
    if (ep_nodes > 1 && e.node_limit < ep_nodes) {
      f.Add("--moe-router-num-groups", ep_nodes);
      f.Add("--moe-router-group-topk", e.node_limit);
    }
  }
  if (e.imbalance > 0 || e.expert_cv > 0) {
    f.Miss("model.moe.imbalance",
           e.imbalance > 0 ? fmt::format("{}", e.imbalance)
                           : fmt::format("{{expert_cv: {}}}", e.expert_cv),
           "a routing statistic, not a launch setting");
  }
  if (s.training.per_expert_gemm) {
    f.Add("--moe-grouped-gemm");
  } else {
    f.Miss("training.expert_gemm", "grouped",
           "one grouped kernel for all local experts: Transformer Engine issues a GEMM per expert");
  }
}

// Megatron-Core's precision-aware optimizer (Transformer Engine's FusedAdam) stores bf16 moments
// and a 16-bit master copy. Under bf16 weights and no FP8 recipe but delayed scaling, the fp32
// master it keeps is the 16-bit remainder beside the bf16 weights (optimizer_config.py
// store_param_remainders, no flag turns it off); under the exported FP8 recipes (never delayed)
// Megatron-Core keeps its own fp32 master (use_precision_aware_optimizer_no_fp8_or_ds_fp8).
// Megatron-Core takes the flag only beside the distributed optimizer (or Megatron-FSDP):
// `distributed` says whether the layout's flags name one; else what it would set is listed.
void OptimizerStateFlags(const Training& t, bool distributed, Flags& f) {
  const MasterWeights w = t.master_weights;
  const bool mixed = t.precision != Dtype::kFp32 && t.precision != Dtype::kTf32;
  if (t.moments != Dtype::kBf16 && (w == MasterWeights::kFp32 || !mixed)) return;
  if (!distributed) {
    const std::string why =
        "--use-precision-aware-optimizer needs the distributed optimizer or Megatron-FSDP "
        "(parallelism.zero 1 or 2, or 3 without zero3_copies), which this layout does not run";
    if (t.moments == Dtype::kBf16) f.Miss("training.moments", "bf16", why);
    if (mixed && w != MasterWeights::kFp32) {
      f.Miss("training.master_weights", std::string(MasterWeightsName(w)), why);
    }
    return;
  }
  f.Add("--use-precision-aware-optimizer");
  if (t.moments == Dtype::kBf16) {
    f.Add("--exp-avg-dtype", "bf16");
    f.Add("--exp-avg-sq-dtype", "bf16");
  }
  if (!mixed) return;
  if (w == MasterWeights::kFp16) {
    f.Add("--main-params-dtype", "fp16");
    return;
  }
  const bool remainder = t.precision == Dtype::kBf16;  // what the flags give
  if (w == MasterWeights::kRemainder && !remainder) {
    f.Miss("training.master_weights", "remainder",
           "under this precision Megatron-Core keeps an fp32 master (only bf16 without an FP8 "
           "recipe other than delayed stores the remainder)");
  }
  if (w == MasterWeights::kFp32 && remainder) {
    f.Miss("training.master_weights", "fp32",
           "--use-precision-aware-optimizer (for the bf16 moments) keeps the fp32 master as its "
           "16-bit remainder beside bf16 weights; no flag keeps it whole");
  }
}

void PrecisionFlags(const Training& t, bool distributed, Flags& f) {
  const Dtype p = t.precision;
  if (p == Dtype::kBf16 || p == Dtype::kFp8) f.Add("--bf16");
  if (p == Dtype::kFp16) f.Add("--fp16");
  if (p == Dtype::kTf32) f.Miss("training.precision", "tf32", "Megatron-LM trains fp32, not tf32");
  if (p == Dtype::kFp8) {
    f.Add("--fp8-format", "hybrid");
    f.Add("--fp8-recipe", std::string(Fp8RecipeName(t.fp8_recipe)));
    if (t.fp8_param_gather && distributed) f.Add("--fp8-param-gather");
    if (t.fp8_param_gather && !distributed) {
      f.Miss("training.fp8_param_gather", "true",
             "Megatron-LM gathers FP8 weights only under its distributed optimizer or Megatron "
             "FSDP (FSDP2 turns it off)");
    }
  }
  const Dtype base = p == Dtype::kFp8 ? Dtype::kBf16 : p;
  const Dtype g = t.grad_dtype;
  if (base == Dtype::kBf16 && g == Dtype::kBf16) f.Add("--grad-reduce-in-bf16");
  if (base == Dtype::kFp16 && g == Dtype::kFp32) f.Add("--accumulate-allreduce-grads-in-fp32");
  const bool ok = (base == Dtype::kBf16 && (g == Dtype::kBf16 || g == Dtype::kFp32)) ||
                  (base == Dtype::kFp16 && (g == Dtype::kFp16 || g == Dtype::kFp32)) ||
                  (base != Dtype::kBf16 && base != Dtype::kFp16 && g == Dtype::kFp32);
  if (!ok) {
    f.Miss("training.grad_dtype", std::string(DtypeName(g)),
           "gradients in this type under this precision: Megatron-LM has no flag for it");
  }
  OptimizerStateFlags(t, distributed, f);
  if (t.optimizer == OptimizerKind::kSgd) f.Add("--optimizer", "sgd");
}

void TrainingFlags(const Scenario& s, Flags& f) {
  const Training& t = s.training;
  f.Add("--seq-length", t.seq_len);
  f.Add("--micro-batch-size", t.micro_batch);
  f.Add("--global-batch-size", t.global_batch);
  // The flags name a distributed optimizer (ZeRO 1) or Megatron-FSDP (ZeRO 2, ZeRO 3 without
  // gathered copies): LayoutFlags.
  const Layout& l = s.layout;
  PrecisionFlags(t, l.zero == 1 || l.zero == 2 || (l.zero == 3 && !l.zero3_copies), f);
  switch (t.recompute) {
    case RecomputeKind::kNone:
      break;
    case RecomputeKind::kSelective:
      f.Add("--recompute-granularity", "selective");
      break;
    case RecomputeKind::kDeepseek:
      f.Add("--recompute-granularity", "selective");
      f.Add("--recompute-modules", "layernorm mla_up_proj moe_act");
      break;
    case RecomputeKind::kFull:
      f.Add("--recompute-granularity", "full");
      f.Add("--recompute-method", t.recompute_layers >= 0 ? "block" : "uniform");
      f.Add("--recompute-num-layers", t.recompute_layers >= 0 ? t.recompute_layers : 1);
      break;
    case RecomputeKind::kSelectiveOp:
      f.Miss("training.recompute", "selective-op",
             "torchtitan's op-level policy, not Megatron-LM's");
      break;
  }
  if (t.recompute != RecomputeKind::kFull && t.recompute_layers >= 0) {
    f.Miss("training.recompute_layers", std::to_string(t.recompute_layers),
           "Megatron-LM limits only full recompute to a number of layers");
  }
  // auto: Transformer Engine picks its fused (flash) attention, as the import reads it back.
  f.Add("--attention-backend", t.attention == AttentionKind::kStandard ? "unfused" : "auto");
  // Always said (unstated: the model's convention), since the import reads an absent flag as
  // Megatron-Core's 0.1.
  f.Add("--attention-dropout", fmt::format("{}", AttentionDropout(t, s.model)));
  if (t.fused_cross_entropy) f.Add("--cross-entropy-loss-fusion");
  if (!t.transformer_engine) f.Add("--transformer-impl", "local");
  if (t.blas_workspace.bytes() > 0) {
    f.Miss("training.blas_workspace", FormatBytes(t.blas_workspace),
           "an environment variable, not a flag: CUBLAS_WORKSPACE_CONFIG=:SIZE_KIB:COUNT");
  }
  if (t.grad_accumulation == GradAccumulation::kSeparate)
    f.Add("--no-gradient-accumulation-fusion");
  if (t.deterministic) f.Add("--deterministic-mode");
  if (t.finetune != FinetuneKind::kNone) {
    f.Miss("training.finetune", "{method: lora}", "Megatron-LM's training has no LoRA flags");
  }
  const double samples = t.tokens / static_cast<double>(t.seq_len);
  if (t.tokens > 0 && samples == std::floor(samples)) {
    f.Add("--train-samples", static_cast<int64_t>(samples));
  } else if (t.tokens > 0) {
    f.Miss("training.tokens", fmt::format("{}", t.tokens), "not a whole number of sequences");
  }
}

// --pipeline-model-parallel-layout from the layers of each stage's chunks.
std::string LayoutString(const Scenario& s, int chunks) {
  const std::vector<std::vector<int>> c = ChunkLayers(s.layout, s.model.layers, chunks);
  std::string out;
  for (int v = 0; v < chunks; ++v) {
    for (int p = 0; p < s.layout.pp; ++p) {
      if (!out.empty()) out += "|";
      if (v == 0 && p == 0) out += "E";
      if (c[p][v] > 0) out += c[p][v] == 1 ? "t" : fmt::format("t*{}", c[p][v]);
      if (v == chunks - 1 && p == s.layout.pp - 1) {
        out += std::string(static_cast<size_t>(s.model.mtp_depth), 'm') + "L";
      }
    }
  }
  return out;
}

// How the distributed optimizer's start gathers are issued, where Megatron-LM has a flag for
// it: --no-align-param-gather under interleaving; Megatron-Core 0.8's chain and gathers all at
// the start have none (its own schedules' defaults are `auto`'s).
void ParamGatherFlags(const Layout& l, Flags& f) {
  if (l.zero != 1 || !l.overlap_dp) return;
  const Layout::ParamGather g = l.param_gather_resolved();
  if (g == l.auto_param_gather()) return;  // the schedule's default
  if (g == Layout::ParamGather::kOnDemand && l.schedule == kScheduleInterleaved) {
    f.Add("--no-align-param-gather");
    return;
  }
  f.Miss("parallelism.param_gather", std::string(ParamGatherName(g)),
         "Megatron-Core 0.9 on gathers on demand, or aligned under interleaving");
}

void PipelineFlags(const Scenario& s, Flags& f) {
  const Layout& l = s.layout;
  const bool interleaved = l.schedule == kScheduleInterleaved;
  const int chunks = interleaved ? l.virtual_stages : 1;
  if (l.schedule != kSchedule1F1B && !interleaved) {
    f.Miss("parallelism.schedule", std::string(ScheduleName(l.schedule)),
           "Megatron-LM runs 1F1B and interleaved 1F1B");
  }
  if (interleaved && chunks > 1 && l.microbatch_group > 0) {
    f.Add("--microbatch-group-size-per-virtual-pipeline-stage", l.microbatch_group);
  }
  if (s.model.is_hybrid()) {
    // The pattern's '|' places the layers (HybridFlags), as account_for split them: Megatron-LM
    // refuses --account-for-*-in-pipeline-split beside it, and needs none.
    return;
  }
  // Megatron-LM splits the layers (with the embedding and loss where counted) evenly over the
  // stages or refuses them (arguments.py: "Number of layers should be divisible by the
  // pipeline-model-parallel size"): parasim's uneven split goes out as the layout it is.
  const int units = s.model.layers + (l.split_embedding ? 1 : 0) + (l.split_loss ? 1 : 0);
  if (!l.stage_layers.empty() || units % (l.pp * chunks) != 0) {
    f.Add("--pipeline-model-parallel-layout", LayoutString(s, chunks));
    return;
  }
  if (interleaved && chunks > 1) f.Add("--num-virtual-stages-per-pipeline-rank", chunks);
  if (l.split_embedding) f.Add("--account-for-embedding-in-pipeline-split");
  if (l.split_loss) f.Add("--account-for-loss-in-pipeline-split");
}

// ZeRO as Megatron-LM launches it: the distributed optimizer, Megatron-FSDP or Torch FSDP2, and
// the data-parallel overlap flags.
void ShardingFlags(const Scenario& s, Flags& f) {
  const Layout& l = s.layout;
  if (l.zero == 1) f.Add("--use-distributed-optimizer");
  if (l.zero == 2 || (l.zero == 3 && !l.zero3_copies)) {
    f.Add("--use-megatron-fsdp");
    f.Add("--data-parallel-sharding-strategy", l.zero == 2 ? "optim_grads" : "optim_grads_params");
  }
  // Megatron-LM runs Torch FSDP2 with neither pipeline nor expert parallelism, nor tied
  // embeddings or fp16, and without gradient-accumulation fusion (megatron/training/arguments.py,
  // validate_args under use_torch_fsdp2).
  const bool fsdp2 = l.zero == 3 && l.zero3_copies;
  std::string refused;
  if (l.pp > 1) refused = fmt::format("--pipeline-model-parallel-size {}", l.pp);
  if (l.ep > 1) refused = fmt::format("--expert-model-parallel-size {}", l.ep);
  if (s.model.tied_embeddings) refused = "tied embeddings (it needs untied)";
  if (s.training.precision == Dtype::kFp16) refused = "--fp16";
  if (fsdp2 && !refused.empty()) {
    f.Miss("parallelism.zero", "3",
           fmt::format("Megatron-LM refuses --use-torch-fsdp2 with {}; --use-megatron-fsdp "
                       "shards without the gathered copies priced here",
                       refused));
  } else if (fsdp2) {
    f.Add("--use-torch-fsdp2");
    if (!f.Has("--no-gradient-accumulation-fusion")) {
      f.Add("--no-gradient-accumulation-fusion");
      f.Miss("training.grad_accumulation", "fused",
             "Megatron-LM's Torch FSDP2 refuses gradient-accumulation fusion "
             "(--no-gradient-accumulation-fusion, read back as separate)");
    }
  }
  if (l.overlap_dp) {
    f.Add("--overlap-grad-reduce");
    // Megatron-LM gathers parameters ahead only with its distributed optimizer or
    // Megatron-FSDP (arguments.py: --overlap-param-gather); Torch FSDP2 prefetches its own.
    const bool megatron_sharded = l.zero == 1 || l.zero == 2 || (l.zero == 3 && !fsdp2);
    if (megatron_sharded) f.Add("--overlap-param-gather");
  }
}

// The experts' all-to-all overlap, where Megatron-Core runs it.
void EpOverlapFlags(const Scenario& s, Flags& f) {
  const Layout& l = s.layout;
  if (l.overlap_ep) {
    // Megatron-Core's limits (transformer_config.py __post_init__): virtual stages under a
    // pipeline, no full recompute, at most one MTP layer.
    const bool vp = l.schedule == kScheduleInterleaved && l.virtual_stages > 1;
    const std::string refused = l.pp > 1 && !vp ? "a pipeline without virtual stages"
                                : s.training.recompute == RecomputeKind::kFull ? "full recompute"
                                : s.model.mtp_depth > 1
                                    ? fmt::format("{} MTP layers", s.model.mtp_depth)
                                    : "";
    if (refused.empty()) {
      f.Add("--overlap-moe-expert-parallel-comm");
    } else {
      f.Miss(
          "parallelism.overlap.ep", "true",
          fmt::format("Megatron-Core refuses --overlap-moe-expert-parallel-comm with {}", refused));
    }
  }
}

void ParallelFlags(const Scenario& s, Flags& f) {
  const Layout& l = s.layout;
  f.Add("--tensor-model-parallel-size", l.tp);
  f.Add("--pipeline-model-parallel-size", l.pp);
  if (l.cp > 1) f.Add("--context-parallel-size", l.cp);
  if (l.ep > 1) f.Add("--expert-model-parallel-size", l.ep);
  if (l.etp > 0 && s.model.is_moe()) f.Add("--expert-tensor-parallel-size", l.etp);
  if (l.sp) f.Add("--sequence-parallel");
  PipelineFlags(s, f);
  ShardingFlags(s, f);
  ParamGatherFlags(l, f);
  // --tp-comm-overlap needs --sequence-parallel at TP > 1 (arguments.py, validate_args).
  if (l.overlap_tp == Layout::TpOverlap::kAll && l.sp && l.tp > 1) {
    f.Add("--tp-comm-overlap");
  } else if (l.overlap_tp == Layout::TpOverlap::kAll) {
    f.Miss("parallelism.overlap.tp", "true",
           "Megatron-LM overlaps all TP communication (--tp-comm-overlap) only under "
           "--sequence-parallel at TP > 1");
  }
  if (l.overlap_tp == Layout::TpOverlap::kNone) {
    f.Miss("parallelism.overlap.tp", "false", "Megatron-Core always overlaps the backward's TP");
  }
  EpOverlapFlags(s, f);
  if (l.cp > 1) f.Add("--cp-comm-type", l.gathers_kv() ? "all_gather" : "p2p");
  if (l.grad_reduce != Layout::GradReduce::kAuto) {
    f.Miss("parallelism.grad_reduce", std::string(GradReduceName(l.grad_reduce)),
           "Megatron-LM reduces as its ZeRO stage does");
  }
  if (l.zero == 3 && l.zero3_reshard != Layout::Zero3Reshard::kForward) {
    f.Miss("parallelism.zero3_reshard", std::string(Zero3ReshardName(l.zero3_reshard)),
           "Megatron-LM's FSDP frees each layer's parameters after its forward");
  }
  const double grad_bytes = DtypeBytes(s.training.grad_dtype);
  const double elements = l.bucket.bytes() / grad_bytes;
  if (l.bucket.bytes() > 0 && elements == std::floor(elements)) {
    f.Add("--ddp-bucket-size", static_cast<int64_t>(elements));
  } else if (l.bucket.bytes() > 0) {
    f.Miss("parallelism.bucket", fmt::format("{}B", l.bucket.bytes()), "not whole gradients");
  }
  if (l.compression != CompressionKind::kNone) {
    f.Miss("parallelism.compression", CompressionText(l.compression, l.compression_param),
           "Megatron-LM does not compress gradients");
  }
  const std::vector<RankDim> tp_pp_dp = {RankDim::kTp, RankDim::kCp, RankDim::kEp, RankDim::kPp,
                                         RankDim::kDp};
  if (l.order == tp_pp_dp) f.Add("--use-tp-pp-dp-mapping");
  if (l.order != tp_pp_dp && l.order != DefaultRankOrder()) {
    f.Miss("parallelism.order", OrderText(l.order),
           "Megatron-LM orders ranks tp-cp-ep-dp-pp or tp-cp-ep-pp-dp");
  }
}

}  // namespace

LaunchConfig ExportLaunch(const Scenario& s) {
  LaunchConfig l;
  l.nodes = s.cluster.nodes;
  l.gpus_per_node = s.cluster.gpus_per_node;
  if (s.model.is_hybrid()) l.script = "pretrain_hybrid.py";
  Flags f(&l);
  ModelFlags(s, f);
  MoeFlags(s, f);
  TrainingFlags(s, f);
  ParallelFlags(s, f);
  ExportTorchtitan(s, &l);
  return l;
}

std::string MegatronScript(const LaunchConfig& l) {
  std::string out = fmt::format("torchrun --nnodes {} --nproc-per-node {} {}", l.nodes,
                                l.gpus_per_node, l.script);
  for (const std::string& t : l.megatron) {
    const bool flag = t.rfind("--", 0) == 0;
    // Quote what the shell would split or read: blanks, `|`, `(`, `*`.
    const bool quote = t.find_first_of(" |()*[]") != std::string::npos;
    out += flag ? " \\\n  " + t : " " + (quote ? "'" + t + "'" : t);
  }
  return out + "\n";
}

}  // namespace parasim
