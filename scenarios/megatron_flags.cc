#include "scenarios/megatron_flags.h"

#include <algorithm>
#include <vector>

#include "scenarios/megatron_flags_rows.h"
#include "sim/yaml_reader.h"

namespace parasim {
namespace megatron_rows {
namespace {

using A = FlagArity;
using U = FlagUse;

// The flags the importer reads (scenarios/megatron_import.cc): `why` names the keys.
constexpr MegatronFlag kMappedRows[] = {
    {"--account-for-embedding-in-pipeline-split", A::kBare, U::kMapped,
     "parallelism.account_for: [embedding]"},
    {"--account-for-loss-in-pipeline-split", A::kBare, U::kMapped,
     "parallelism.account_for: [loss]"},
    {"--accumulate-allreduce-grads-in-fp32", A::kBare, U::kMapped, "training.grad_dtype: fp32"},
    {"--attention-backend", A::kOne, U::kMapped,
     "training.attention: unfused/local -> standard, flash/fused/auto -> flash"},
    {"--attention-dropout", A::kOne, U::kMapped,
     "training.attention_dropout (which kernels Transformer Engine runs the attention with; the "
     "materialised softmax's dropout mask); absent: Megatron-Core's default, 0.1"},
    {"--bf16", A::kBare, U::kMapped, "training.precision: bf16"},
    {"--context-parallel-size", A::kOne, U::kMapped, "parallelism.cp"},
    {"--cp-comm-type", A::kOne, U::kMapped,
     "parallelism.cp_comm: p2p -> ring, all_gather -> all_gather"},
    {"--cross-entropy-loss-fusion", A::kBare, U::kMapped, "training.cross_entropy: fused"},
    {"--data-parallel-sharding-strategy", A::kOne, U::kMapped,
     "parallelism.zero: 0 no_shard, 1 optim, 2 optim_grads, 3 optim_grads_params"},
    {"--ddp-bucket-size", A::kOne, U::kMapped,
     "parallelism.bucket (elements x the gradient bytes)"},
    {"--decoder-first-pipeline-num-layers", A::kOne, U::kMapped,
     "parallelism.stage_layers (the first stage)"},
    {"--decoder-last-pipeline-num-layers", A::kOne, U::kMapped,
     "parallelism.stage_layers (the last stage)"},
    {"--deterministic-mode", A::kBare, U::kMapped,
     "training.deterministic (PyTorch's NaN fill of every new tensor: a kernel more per op "
     "output; on Blackwell with attention dropout, FlashAttention 2's kernels in place of "
     "cuDNN's; the deterministic backward's own cost is not priced apart)"},
    {"--disable-bias-linear", A::kBare, U::kMapped, "model.bias: false"},
    {"--exp-avg-dtype", A::kOne, U::kMapped,
     "training.moments (with --use-precision-aware-optimizer)"},
    {"--exp-avg-sq-dtype", A::kOne, U::kMapped,
     "training.moments (with --use-precision-aware-optimizer)"},
    {"--expert-model-parallel-size", A::kOne, U::kMapped, "parallelism.ep"},
    {"--expert-tensor-parallel-size", A::kOne, U::kMapped, "parallelism.etp"},
    {"--ffn-hidden-size", A::kOne, U::kMapped, "model.ffn_hidden"},
    {"--fp16", A::kBare, U::kMapped, "training.precision: fp16"},
    {"--fp8-format", A::kOne, U::kMapped, "training.precision: fp8"},
    {"--fp8-param-gather", A::kBare, U::kMapped,
     "training.fp8_param_gather (FP8 weights, gathered as FP8; needs --fp8-format)"},
    {"--fp8-recipe", A::kOne, U::kMapped, "training.fp8_recipe"},
    {"--global-batch-size", A::kOne, U::kMapped, "training.global_batch"},
    {"--grad-reduce-in-bf16", A::kBare, U::kMapped, "training.grad_dtype: bf16"},
    {"--group-query-attention", A::kBare, U::kMapped, "model.kv_heads (with --num-query-groups)"},
    {"--hidden-size", A::kOne, U::kMapped, "model.hidden"},
    {"--kv-channels", A::kOne, U::kMapped, "model.head_dim"},
    {"--kv-lora-rank", A::kOne, U::kMapped, "model.mla.kv_lora_rank"},
    {"--main-grads-dtype", A::kOne, U::kMapped, "training.grad_dtype"},
    {"--main-params-dtype", A::kOne, U::kMapped,
     "training.master_weights: fp16 (with --use-precision-aware-optimizer)"},
    {"--make-vocab-size-divisible-by", A::kOne, U::kMapped,
     "model.vocab padding: a multiple of this x TP"},
    {"--max-position-embeddings", A::kOne, U::kMapped, "model.max_position (learned positions)"},
    {"--merge-file", A::kOne, U::kMapped,
     "with no --tokenizer-type: GPT2BPETokenizer's vocabulary (50257)"},
    {"--micro-batch-size", A::kOne, U::kMapped, "training.micro_batch"},
    {"--moe-expert-capacity-factor", A::kOne, U::kMapped, "model.moe.capacity_factor"},
    {"--moe-ffn-hidden-size", A::kOne, U::kMapped, "model.moe.expert_ffn_hidden"},
    {"--moe-grouped-gemm", A::kBare, U::kMapped,
     "training.expert_gemm: per_expert (Transformer Engine GroupedLinear: a GEMM per expert)"},
    {"--moe-layer-freq", A::kOne, U::kMapped, "model.moe.dense_layers and every"},
    {"--moe-router-group-topk", A::kOne, U::kMapped,
     "model.moe.node_limit, where the groups are the EP nodes"},
    {"--moe-router-num-groups", A::kOne, U::kMapped,
     "model.moe.node_limit, with --moe-router-group-topk, where the groups are the EP nodes"},
    {"--moe-router-topk", A::kOne, U::kMapped, "model.moe.top_k"},
    {"--moe-shared-expert-intermediate-size", A::kOne, U::kMapped,
     "model.moe.shared_experts (this / the expert width)"},
    {"--moe-token-dispatcher-type", A::kOne, U::kMapped,
     "alltoall: the EP all-to-all parasim prices; allgather and flex are listed as not modelled"},
    {"--mtp-num-layers", A::kOne, U::kMapped, "model.mtp_depth"},
    {"--multi-latent-attention", A::kBare, U::kMapped, "model.mla"},
    {"--no-align-param-gather", A::kBare, U::kMapped,
     "parallelism.param_gather: on_demand (each stage gathers as it goes)"},
    {"--no-gradient-accumulation-fusion", A::kBare, U::kMapped,
     "training.grad_accumulation: separate"},
    {"--normalization", A::kOne, U::kMapped, "model.norm"},
    {"--microbatch-group-size-per-virtual-pipeline-stage", A::kOne, U::kMapped,
     "parallelism.microbatch_group (interleaved 1F1B's micro-batches a chunk runs in a row)"},
    {"--num-attention-heads", A::kOne, U::kMapped, "model.heads"},
    {"--num-experts", A::kOne, U::kMapped, "model.moe.experts"},
    {"--num-layers", A::kOne, U::kMapped, "model.layers"},
    {"--num-layers-per-virtual-pipeline-stage", A::kOne, U::kMapped,
     "parallelism.virtual_stages (layers / pp / this), schedule interleaved-1f1b"},
    {"--num-query-groups", A::kOne, U::kMapped, "model.kv_heads"},
    {"--num-virtual-stages-per-pipeline-rank", A::kOne, U::kMapped,
     "parallelism.virtual_stages, schedule interleaved-1f1b"},
    {"--optimizer", A::kOne, U::kMapped, "training.optimizer (adam, sgd)"},
    {"--overlap-grad-reduce", A::kBare, U::kMapped, "parallelism.overlap.dp"},
    {"--overlap-moe-expert-parallel-comm", A::kBare, U::kMapped, "parallelism.overlap.ep"},
    {"--overlap-param-gather", A::kBare, U::kMapped,
     "parallelism.overlap.dp (the parameter all-gather beside the forward)"},
    {"--pipeline-model-parallel-layout", A::kOne, U::kMapped,
     "parallelism.stage_layers and virtual_stages (pp x vp segments)"},
    {"--pipeline-model-parallel-size", A::kOne, U::kMapped, "parallelism.pp"},
    {"--position-embedding-type", A::kOne, U::kMapped, "model.position"},
    {"--q-lora-rank", A::kOne, U::kMapped, "model.mla.q_lora_rank"},
    {"--qk-head-dim", A::kOne, U::kMapped, "model.mla.qk_nope_head_dim"},
    {"--qk-pos-emb-head-dim", A::kOne, U::kMapped, "model.mla.qk_rope_head_dim"},
    {"--recompute-activations", A::kBare, U::kMapped,
     "training.recompute: selective (the older spelling)"},
    {"--recompute-granularity", A::kOne, U::kMapped, "training.recompute"},
    {"--recompute-method", A::kOne, U::kMapped,
     "training.recompute_layers (block), every layer (uniform)"},
    {"--recompute-modules", A::kList, U::kMapped,
     "training.recompute: selective (core_attn) or deepseek (layernorm, mla_up_proj, moe_act)"},
    {"--recompute-num-layers", A::kOne, U::kMapped, "training.recompute_layers"},
    {"--seq-length", A::kOne, U::kMapped, "training.seq_len"},
    {"--sequence-parallel", A::kBare, U::kMapped, "parallelism.sp"},
    {"--spec", A::kList, U::kMapped,
     "megatron.core.models.hybrid.hybrid_layer_specs hybrid_stack_spec with a hybrid pattern "
     "(the stack it builds); any other layer spec is listed as not modelled"},
    {"--swiglu", A::kBare, U::kMapped, "model.mlp: swiglu"},
    {"--tensor-model-parallel-size", A::kOne, U::kMapped, "parallelism.tp"},
    {"--tokenizer-type", A::kOne, U::kMapped,
     "model.vocab from the tokenizer (GPT2BPETokenizer 50257, Llama2Tokenizer 32000, BERT "
     "WordPiece)"},
    {"--tp-comm-overlap", A::kBare, U::kMapped, "parallelism.overlap.tp: true"},
    {"--train-iters", A::kOne, U::kMapped, "training.tokens (x global batch x seq_len)"},
    {"--train-samples", A::kOne, U::kMapped, "training.tokens (x seq_len)"},
    {"--transformer-impl", A::kOne, U::kMapped,
     "training.attention: standard under local (its unfused attention)"},
    {"--untie-embeddings-and-output-weights", A::kBare, U::kMapped, "model.tied_embeddings: false"},
    {"--use-distributed-optimizer", A::kBare, U::kMapped, "parallelism.zero: 1"},
    {"--use-flash-attn", A::kBare, U::kMapped, "training.attention: flash"},
    {"--use-megatron-fsdp", A::kBare, U::kMapped,
     "parallelism.zero (with --data-parallel-sharding-strategy), zero3_copies: false"},
    {"--use-precision-aware-optimizer", A::kBare, U::kMapped,
     "training.master_weights: remainder under --bf16 (fp8 recipe delayed); non-fp32 "
     "--exp-avg-dtype, --exp-avg-sq-dtype, --main-params-dtype, --main-grads-dtype need it"},
    {"--use-rotary-position-embeddings", A::kBare, U::kMapped, "model.position: rope"},
    {"--use-torch-fsdp2", A::kBare, U::kMapped,
     "parallelism.zero: 3 (PyTorch FSDP2: per-parameter sharding)"},
    {"--use-tp-pp-dp-mapping", A::kBare, U::kMapped, "parallelism.order: [tp, cp, ep, pp, dp]"},
    {"--v-head-dim", A::kOne, U::kMapped, "model.mla.v_head_dim"},
    {"--vocab-extra-ids", A::kOne, U::kMapped, "model.vocab (added to the tokenizer's)"},
    {"--vocab-size", A::kOne, U::kMapped, "model.vocab (padded as Megatron-LM pads it)"},
};

constexpr MegatronFlag kRefusedRows[] = {
    {"--dataloader-seq-length", A::kOne, U::kRefused,
     "a multimodal sequence (LLaVA): parasim builds the language model only"},
    {"--decoder-num-layers", A::kOne, U::kRefused,
     "an encoder-decoder model (T5): parasim builds decoder-only stacks"},
    {"--decoder-seq-length", A::kOne, U::kRefused,
     "an encoder-decoder model (T5): parasim builds decoder-only stacks"},
    {"--encoder-num-layers", A::kOne, U::kRefused,
     "an encoder-decoder model (T5): parasim builds decoder-only stacks"},
    {"--encoder-seq-length", A::kOne, U::kRefused,
     "an encoder-decoder model (T5): parasim builds decoder-only stacks"},
    {"--export-kd-teacher-load", A::kOne, U::kRefused,
     "knowledge distillation: a teacher forward every step, a model parasim is not given"},
    {"--flextron", A::kBare, U::kRefused,
     "Flextron elastic training (nested sub-models per step): parasim predicts one model"},
    {"--hybrid-layer-pattern", A::kOne, U::kMapped,
     "model.hybrid.pattern and model.layers; '|' segments: parallelism.stage_layers and "
     "virtual_stages; '/' parts: model.mtp_depth"},
    {"--hybrid-override-pattern", A::kOne, U::kMapped,
     "as --hybrid-layer-pattern (its deprecated name)"},
    {"--img-h", A::kOne, U::kRefused,
     "a vision encoder (LLaVA): parasim builds the language model only"},
    {"--img-w", A::kOne, U::kRefused,
     "a vision encoder (LLaVA): parasim builds the language model only"},
    {"--is-hybrid-model", A::kBare, U::kMapped,
     "read with --hybrid-layer-pattern, which alone makes the model hybrid (it sets only the "
     "output layer's initialisation)"},
    {"--mamba-head-dim", A::kOne, U::kMapped, "model.hybrid.mamba.head_dim"},
    {"--mamba-num-groups", A::kOne, U::kMapped, "model.hybrid.mamba.groups"},
    {"--mamba-num-heads", A::kOne, U::kMapped, "model.hybrid.mamba.heads"},
    {"--mamba-state-dim", A::kOne, U::kMapped, "model.hybrid.mamba.state_dim"},
    {"--model-provider", A::kOne, U::kRefused,
     "a multimodal model (MIMO): parasim builds the language model only"},
    {"--moe-latent-size", A::kOne, U::kRefused,
     "experts on a latent projection of the tokens: parasim's experts take the hidden width"},
    {"--mtp-hybrid-override-pattern", A::kOne, U::kRefused,
     "the MTP layers' pattern apart (Megatron-LM's older form): give them after '/' in "
     "--hybrid-layer-pattern"},
    {"--patch-dim", A::kOne, U::kRefused,
     "a vision encoder (LLaVA): parasim builds the language model only"},
    {"--perform-rl-step", A::kBare, U::kRefused,
     "a GRPO step (rollout generation, then training): parasim predicts a training step"},
    {"--total-seq-length", A::kOne, U::kRefused,
     "a multimodal sequence (MIMO, image and text): parasim builds the language model only"},
};

}  // namespace

std::span<const MegatronFlag> Mapped() { return kMappedRows; }
std::span<const MegatronFlag> Refused() { return kRefusedRows; }

}  // namespace megatron_rows

namespace {

std::vector<MegatronFlag> SortedRows() {
  std::vector<MegatronFlag> rows;
  for (auto part : {megatron_rows::Mapped(), megatron_rows::Refused(), megatron_rows::NotModelled(),
                    megatron_rows::NoEffect()}) {
    rows.insert(rows.end(), part.begin(), part.end());
  }
  std::sort(rows.begin(), rows.end(),
            [](const MegatronFlag& a, const MegatronFlag& b) { return a.name < b.name; });
  return rows;
}

}  // namespace

std::span<const MegatronFlag> MegatronFlags() {
  static const std::vector<MegatronFlag> kRows = SortedRows();
  return kRows;
}

const MegatronFlag* FindMegatronFlag(std::string_view name) {
  const std::span<const MegatronFlag> rows = MegatronFlags();
  auto it = std::lower_bound(rows.begin(), rows.end(), name,
                             [](const MegatronFlag& f, std::string_view n) { return f.name < n; });
  return it != rows.end() && it->name == name ? &*it : nullptr;
}

std::string NearestMegatronFlag(std::string_view name) {
  std::vector<std::string_view> names;
  for (const MegatronFlag& f : MegatronFlags()) names.push_back(f.name);
  return DidYouMean(name, names);
}

std::string_view FlagUseName(FlagUse u) {
  switch (u) {
    case FlagUse::kMapped:
      return "mapped";
    case FlagUse::kNoEffect:
      return "no effect";
    case FlagUse::kNotModelled:
      return "not modelled";
    case FlagUse::kRefused:
      return "refused";
  }
  return "";
}

}  // namespace parasim
