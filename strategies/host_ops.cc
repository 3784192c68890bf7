#include "strategies/host_ops.h"

#include <string_view>

namespace parasim {
namespace {

// Kernels and allocated tensors of one op's module per pass, forward and backward. For a GEMM
// op (one GEMM forward; the input and the weight gradient backward) a row counts the
// module's kernels and tensors besides that GEMM's; for any other op, all of them. Read from
// Megatron-Core's TE spec at NVIDIA/Megatron-LM d98e8a6 and Transformer Engine 2.x.
struct ModuleOps {
  std::string_view name;
  double fwd, bwd;              // kernels
  double fwd_alloc, bwd_alloc;  // tensors allocated (each a NaN fill in deterministic mode)
};
constexpr ModuleOps kModules[] = {
    // VocabParallelEmbedding (megatron/core/tensor_parallel/layers.py): the range mask (two
    // compares and an or), the lookup and the masked fill; the learned positions' lookup and
    // add (LanguageModelEmbedding); the embedding dropout (its output and mask). Backward: the
    // lookup's scatter-add (a sort, a segmented sum and the index) and the positions'.
    {"embedding", 7, 4, 8, 5},
    // Transformer Engine's LayerNormLinear runs the norm as its own kernel (its output, mean and
    // inverse deviation), and its backward as the data gradient and the gamma/beta reduction
    // (transformer_engine/common/normalization; dx, dgamma, dbeta).
    {"attn_norm", 1, 2, 3, 3},
    {"mlp_norm", 1, 2, 3, 3},
    {"moe_norm", 1, 2, 3, 3},
    {"final_norm", 1, 2, 3, 3},
    {"q_norm", 1, 2, 3, 3},
    {"kv_norm", 1, 2, 3, 3},
    // Megatron-Core's fused bias-dropout-add: the output and the dropout mask; backward the
    // gradients of the branch and of the residual.
    {"attn_residual", 1, 1, 2, 2},
    {"mlp_residual", 1, 1, 2, 2},
    {"moe_residual", 1, 1, 2, 2},
    // TE's fused RoPE (fused_apply_rotary_pos_emb), for the queries and for the keys.
    {"rope", 2, 2, 2, 2},
    // The router (megatron/core/transformer/moe/router.py): besides the gating GEMM, the
    // scores' softmax or sigmoid, top-k, the probabilities' gather and normalisation, the
    // routing map's scatter, and the load-balancing loss's sum and its autograd hook
    // (MoEAuxLossAutoScaler).
    {"router", 8, 7, 8, 7},
    // The all-to-all dispatcher (token_dispatcher.py, MoEAlltoAllTokenDispatcher): its
    // preprocessing (the tokens per expert summed, gathered over EP and copied to the host, their
    // split sizes and cumulative sums), the permutation (moe_utils.py permute: the routing
    // map's transpose, the sorted indices, the gather) and, after the all-to-all, the sort of
    // the received chunks by local expert; backward the gradients of the gather and the sort.
    {"dispatch_permute", 16, 6, 16, 6},
    {"expert_sort", 3, 3, 3, 3},
    // The combine: the chunks sorted back, the unpermutation (a scatter-add weighted by the
    // routing probabilities) and its output; backward their gradients.
    {"combine_unpermute", 7, 6, 7, 6},
    // The multi-token-prediction module's embedding lookup and concatenation.
    {"mtp_embedding", 3, 2, 3, 2},
    // Under SP, the split of eh_proj's gathered output (the rank's part made contiguous); its
    // backward's all-gather allocates the gathered gradient (the collective counts apart).
    {"mtp_sp_split", 1, 0, 1, 1},
    // A hybrid stack's Mamba-2 layer in training (Megatron-LM d98e8a6, megatron/core/ssm/
    // mamba_mixer.py, _ssm_training, and state-spaces/mamba's mamba_split_conv1d_scan_combined
    // without the norm and out_proj, mamba_ssm/ops/triton/ssd_combined.py; the parameters bf16
    // under Float16Module), counted from the source line by line: the pre-norm fused into
    // in_proj, as attention's. Then the in_proj output's contiguous copy, A = -exp(A_log.float())
    // (a cast, the exp and the negation), dt_bias's cast and causal_conv1d_fwd; backward the
    // conv's recompute and causal_conv1d_bwd with their two zeros_like and two type_as (the
    // extension's C++ wrappers), A's negation, product and cast back, dt_bias's cast, and
    // Transformer Engine's copy of in_proj's non-contiguous output gradient.
    {"mamba_norm", 1, 2, 3, 3},
    {"conv1d", 6, 11, 6, 12},
    // The chunked scan (_mamba_chunk_scan_combined_fwd): the chunk cumsum, chunk states, state
    // passing, C B^T and the chunk scan, five Triton kernels. Backward
    // (_mamba_chunk_scan_combined_bwd): dt's clone, the first four again, then dz, dstates, the
    // state passing's backward, dx, dB, dC, dCB, two bmm backwards, ddAcs and the cumsum's
    // backward (15 Triton kernels); the autotuned kernels' pre-hooks zero their accumulators
    // before every launch (init_to_zero: six zero_ a pass); the partial sums reduced after
    // them (dD's sum and cast, the state passing's, dx's two and its cast, dB's, dC's, dCB's,
    // ddAcs's) with dx's zeros; dB's cumsum; the dA cumsum's last-element add, flip, cumsum and
    // flip; and the two adds of ddA. (Under PyTorch's deterministic algorithms mamba_ssm adds
    // zeroed tile workspaces and their sums, about a dozen kernels, not counted: no hybrid run
    // of the corpus is deterministic.)
    {"ssd_scan", 5, 40, 8, 37},
    // The grouped RMSNorm (mamba_ssm's Triton layer norm, layernorm_gated.py) after the scan
    // output's contiguous copy; backward the data gradient and the weight's partial sums reduced
    // and cast.
    {"mamba_gated_norm", 2, 3, 3, 4},
    {"mamba_residual", 1, 1, 2, 2},
};

// Megatron-LM's vocab-parallel cross-entropy on fp32 logits (megatron/core/tensor_parallel/
// cross_entropy.py, VocabParallelCrossEntropy), after the cast to fp32: forward the max,
// the subtraction, the target mask (two compares and an or), the local target's index, the
// predicted logits' gather and masked fill, the exp, the sum, the log and the loss; backward
// the softmax's copy, the target's one-hot subtraction (an arange and an index), the scaling.
// Each kernel writes a tensor of its own.
constexpr double kLossForward = 15, kLossBackward = 6;
// Transformer Engine's fused cross-entropy (parallel_cross_entropy): a forward kernel and a
// backward kernel.
constexpr double kFusedLossForward = 1, kFusedLossBackward = 1;

// Fused attention (Transformer Engine's DotProductAttention on cuDNN or FlashAttention): the
// kernel and the output's layout copy forward (the output and the softmax statistics);
// backward the kernel and cuDNN's two helpers (the dot of dO and O, the cast of dQ:
// docs/MODEL.md, "A Megatron-style step on an H100"; dQ, dK, dV and the dot).
constexpr ModuleOps kFlash = {"", 2, 4, 2, 4};
// Materialised attention (Megatron-Core's DotProductAttention, megatron/core/transformer/
// dot_product_attention.py): QK^T (baddbmm), the fused scale-mask-softmax, the attention
// dropout, AV (bmm) and the context's permute-and-copy forward; backward the two gradients of
// each matmul, the dropout's and the softmax's, and the copies back.
constexpr ModuleOps kStandard = {"", 5, 8, 5, 8};
// Context-parallel attention as Transformer Engine runs it (transformer_engine/pytorch/
// attention/dot_product_attention/context_parallel.py). Over a ring (AttnFuncWithCPAndKVP2P),
// per step of cp: the next K/V's send and receive, the chunk's attention kernel, the
// sequence halves' views and copies (load balancing), and from the second step the softmax
// statistics' and the output's correction; backward the same exchange of K/V and of their
// gradients, the kernel with its helpers and the gradients' accumulation. All-gathered
// (AttnFuncWithCPAndKVAllGather): the gather, two kernels (the two load-balanced query
// chunks) and the copies; backward their gradients and the reduce-scatter.
constexpr ModuleOps kRingStep = {"", 10, 11, 10, 11};
constexpr ModuleOps kGathered = {"", 8, 12, 8, 12};

// What a module does before the training's additions; `alloc` gets its tensors.
HostOps Module(const Op& op, const Training& t, const HostContext& where, bool frozen,
               HostOps* alloc) {
  HostOps h;
  const bool weights = op.kind == OpKind::kGemm && op.params > 0 && !frozen;
  auto take = [&](const ModuleOps& m, double times) {
    h.fwd = m.fwd * times;
    h.bwd = m.bwd * times;
    alloc->fwd = m.fwd_alloc * times;
    alloc->bwd = m.bwd_alloc * times;
  };
  switch (op.kind) {
    case OpKind::kGemm:
      // Megatron-Core runs a SwiGLU's gate and up projections as one GEMM (linear_fc1); the
      // graph's mm_cols are torchtitan's matmuls. The weight gradient accumulates into the
      // fp32 main gradient in place (gradient accumulation fusion) or is a tensor of its own.
      h.fwd = alloc->fwd = 1;
      h.wgrad = weights ? 1 : 0;
      h.bwd = 1 + h.wgrad;
      alloc->bwd = 1;
      alloc->wgrad = weights && t.grad_accumulation == GradAccumulation::kSeparate ? 1 : 0;
      alloc->bwd += alloc->wgrad;
      break;
    case OpKind::kAttention:
      if (where.cp > 1) {
        if (where.cp_all_gather) {
          take(kGathered, 1);
        } else {
          take(kRingStep, where.cp);
        }
      } else {
        take(t.attention == AttentionKind::kFlash ? kFlash : kStandard, 1);
      }
      break;
    case OpKind::kMemoryBound:
      h.fwd = h.bwd = alloc->fwd = alloc->bwd = 1;
      if (op.name == "cross_entropy") {
        h.fwd = alloc->fwd = t.fused_cross_entropy ? kFusedLossForward : kLossForward;
        h.bwd = alloc->bwd = t.fused_cross_entropy ? kFusedLossBackward : kLossBackward;
      }
      break;
  }
  for (const ModuleOps& m : kModules) {
    if (op.name != m.name) continue;
    const double keep = op.kind == OpKind::kGemm ? 1 : 0;
    h.fwd = keep * h.fwd + m.fwd;
    h.bwd = keep * h.bwd + m.bwd;
    alloc->fwd = keep * alloc->fwd + m.fwd_alloc;
    alloc->bwd = keep * alloc->bwd + m.bwd_alloc;
  }
  return h;
}

}  // namespace

HostOps CountHostOps(const Op& op, const Training& t, const HostContext& where) {
  const bool frozen = t.finetune != FinetuneKind::kNone;
  HostOps alloc;
  HostOps h = Module(op, t, where, frozen, &alloc);
  if (op.expert && op.kind == OpKind::kGemm && t.per_expert_gemm) {
    // Transformer Engine's GroupedLinear issues the routed experts one GEMM each (op.batch of
    // them), and under FP8 a quantization of the forward's input and of the backward's
    // gradient per expert (tex.fused_multi_quantize over the experts' splits); each writes a
    // tensor.
    const double n = static_cast<double>(op.batch);
    const double quantize = op.fp8 ? n : 0;
    h.fwd = alloc.fwd = n + quantize;
    h.wgrad = frozen ? 0 : n;
    h.bwd = alloc.bwd = n + h.wgrad + quantize;
    alloc.wgrad = h.wgrad;
  } else if (op.fp8) {
    // The casts around an FP8 GEMM (LayerPricer::AddFp8Casts): the input's forward, the output
    // gradient's backward, and blockwise's re-cast of the input for the weight gradient.
    const double b = t.fp8_recipe == Fp8Recipe::kBlockwise && h.wgrad > 0 ? 2 : 1;
    h.fwd += 1;
    h.bwd += b;
    alloc.fwd += 1;
    alloc.bwd += b;
  }
  const bool weights = op.params > 0 && !frozen;
  if (t.grad_accumulation == GradAccumulation::kSeparate && weights) {
    // Megatron's DDP hook adds each weight gradient to the fp32 main gradient in place
    // (param.main_grad.add_(param.grad): distributed_data_parallel.py, the backward post-hook).
    h.bwd += 1;
    h.wgrad += 1;
  }
  if (t.deterministic) {
    // A NaN fill of every tensor allocated (aten's empty_cuda under
    // torch.use_deterministic_algorithms).
    h.fwd += alloc.fwd;
    h.bwd += alloc.bwd;
    h.wgrad += alloc.wgrad;
  }
  return h;
}

AllocatedBytes OutputBytes(const Op& op, const Training& t) {
  AllocatedBytes a;
  const double act = 2;  // 16-bit activations and their gradients
  if (op.kind == OpKind::kGemm) {
    const double batch = static_cast<double>(op.batch);
    a.fwd = static_cast<double>(op.m) * op.n * batch * act;
    a.bwd = static_cast<double>(op.m) * op.k * batch * act;
    // The weight gradient is written into the accumulated gradient in place, unless the
    // accumulation is a pass of its own.
    if (op.params > 0 && t.finetune == FinetuneKind::kNone &&
        t.grad_accumulation == GradAccumulation::kSeparate) {
      a.bwd += op.params * BackwardGradBytes(t);
    }
    return a;
  }
  // A memory-bound kernel or the attention writes about half of the bytes it moves.
  a.fwd = op.fwd_bytes.bytes() / 2;
  a.bwd = op.bwd_bytes.bytes() / 2;
  return a;
}

}  // namespace parasim
