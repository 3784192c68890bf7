// How a model is trained: sequence, batch, precision, optimizer, recompute, fine-tuning.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/spec.h"
#include "models/model_spec.h"

namespace parasim {

enum class OptimizerKind { kAdam, kSgd };
// kDeepseek: DeepSeek-V3's set (arXiv 2412.19437 secs. 3.2.3 and 3.3.2): every RMSNorm, the
// MLA up-projections and the experts' SwiGLU rerun in backward, so their outputs are not kept,
// and the SwiGLU inputs are kept as their FP8 casts under FP8 training.
// kSelectiveOp: torchtitan's op-level selective activation checkpointing ("selective op",
// torchtitan/distributed/activation_checkpoint.py): a layer keeps its input and the outputs of
// its matmuls (aten.mm), but every second one, and of scaled-dot-product attention; everything
// else reruns in backward from them.
enum class RecomputeKind { kNone, kSelective, kFull, kDeepseek, kSelectiveOp };
enum class FinetuneKind { kNone, kLora, kQlora };
enum class AttentionKind { kFlash, kStandard };
// How each micro-batch's weight gradients join the gradients accumulated over the step:
// - fused: the weight-gradient GEMM accumulates into the gradient buffer itself (Megatron-LM's
//   gradient_accumulation_fusion, on by default since its 2022 release, and Transformer
//   Engine's fuse_wgrad_accumulation);
// - separate: the backward writes a weight gradient and a memory-bound pass adds it to the
//   buffer, every micro-batch (Megatron-LM 2021's DDP hook `main_grad.add_(grad)`, PyTorch
//   autograd's AccumulateGrad, and Megatron-LM with --no-gradient-accumulation-fusion).
enum class GradAccumulation { kFused, kSeparate };
// How `precision: fp8` scales its E4M3 tensors (docs/MODEL.md, "FP8 recipes"):
// - tensorwise: one scale per tensor (Transformer Engine's delayed scaling, the amax from the
//   previous steps), the cast fused with a transpose for the backward GEMMs;
// - blockwise: DeepSeek-V3's fine-grained scaling (arXiv 2412.19437 Sec. 3.3.2): activations and
//   gradients per 1x128 tile, weights per 128x128 block, one fp32 scale each; the MoE dispatch
//   sends FP8 (Sec. 3.3.3).
// Per-tensor scales (Transformer Engine's current/delayed scaling), DeepSeek-V3's 1x128/128x128
// blocks, or MXFP8 (one E8M0 scale per 32 values along the inner dimension, on tensor cores that
// apply the scales themselves: Blackwell).
enum class Fp8Recipe { kTensorwise, kBlockwise, kMxfp8 };
// The optimizer's master copy of 16-bit weights: fp32 (the 16-byte rule's 4 bytes), the fp32
// value's low 16 bits beside the bf16 weights that hold its high 16 (Transformer Engine's
// FusedAdam with store_param_remainders, Megatron-Core's default under
// --use-precision-aware-optimizer with bf16: 2 bytes), or fp16 (--main-params-dtype fp16: 2).
enum class MasterWeights { kFp32, kRemainder, kFp16 };

std::string_view Fp8RecipeName(Fp8Recipe r);
StatusOr<Fp8Recipe> ParseFp8Recipe(std::string_view s);
std::vector<std::string_view> Fp8RecipeNames();  // tensorwise, blockwise, mxfp8

std::string_view MasterWeightsName(MasterWeights w);
StatusOr<MasterWeights> ParseMasterWeights(std::string_view s);
std::vector<std::string_view> MasterWeightsNames();  // fp32, remainder, fp16

std::string_view RecomputeName(RecomputeKind r);
StatusOr<RecomputeKind> ParseRecompute(std::string_view s);
std::vector<std::string_view> RecomputeNames();  // none, selective, full

std::string_view GradAccumulationName(GradAccumulation g);
StatusOr<GradAccumulation> ParseGradAccumulation(std::string_view s);
std::vector<std::string_view> GradAccumulationNames();  // fused, separate

struct Training {
  int64_t seq_len = 0;
  int64_t global_batch = 0;  // sequences per optimizer step
  int64_t micro_batch = 1;
  Dtype precision = Dtype::kBf16;
  Dtype grad_dtype = Dtype::kBf16;                // defaults to precision (16-byte rule)
  Fp8Recipe fp8_recipe = Fp8Recipe::kTensorwise;  // with precision fp8
  // FP8 weights (precision fp8): the FP8 GEMMs' weights are kept as Transformer Engine's FP8
  // tensors, not bf16, and the data-parallel all-gathers carry them (Megatron-LM's
  // --fp8-param-gather; MXFP8 gathers bf16 and quantizes after, param_and_grad_buffer.py).
  // Without it Transformer Engine keeps an FP8 copy of each such weight beside the bf16 one from
  // a step's first micro-batch on (Fp8WeightCopyBytes).
  bool fp8_param_gather = false;
  // Adam's two moments: fp32 (the 16-byte rule) or bf16 (DeepSeek-V3 Sec. 3.3.3).
  Dtype moments = Dtype::kFp32;
  MasterWeights master_weights = MasterWeights::kFp32;  // with 16-bit (or fp8) training only
  OptimizerKind optimizer = OptimizerKind::kAdam;
  RecomputeKind recompute = RecomputeKind::kNone;
  // How many transformer layers of each model chunk (each pipeline stage, or each of its
  // virtual stages) the recompute mode applies to, the first ones in model order; the others
  // keep every activation. Megatron-LM's --recompute-method block --recompute-num-layers N,
  // which trades memory for compute a layer at a time. -1: every layer.
  int recompute_layers = -1;
  // Fused (FlashAttention) kernels, as every training stack since 2023 runs them (FlashAttention
  // 2, Transformer Engine, PyTorch SDPA); `attention: standard` for the materialised softmax of
  // Megatron-LM 2021-22 (the published SC21 and Korthikanti 2022 runs state it).
  AttentionKind attention = AttentionKind::kFlash;
  // The attention's dropout probability (Megatron-LM's --attention-dropout, 0.1 by default:
  // Megatron-Core's TransformerConfig); -1: the model's own convention (ModelDropsOut). It decides
  // the materialised softmax's dropout mask, and which kernels Transformer Engine runs
  // (TrainingAttentionKernel: on Blackwell cuDNN's deterministic backward takes no dropout).
  double attention_dropout = -1;
  // The loss over the vocabulary as one fused kernel pair (Megatron-Core's
  // cross_entropy_loss_fusion, Transformer Engine's parallel_cross_entropy), or pass by pass on
  // fp32 logits (Megatron-LM's default path, PyTorch's F.cross_entropy on .float() logits).
  bool fused_cross_entropy = false;
  // How the routed experts' GEMMs are issued (training.expert_gemm):
  // - grouped: one grouped kernel for all local experts per GEMM (DeepSeek's DeepGEMM,
  //   torch._grouped_mm as torchtitan runs it, CUTLASS grouped GEMM);
  // - per_expert: one GEMM per local expert, and under FP8 one quantization of its input or
  //   gradient, as Transformer Engine's GroupedLinear issues them (grouped_linear.py: its
  //   general_grouped_gemm, a loop of cuBLAS calls over 4 streams, nvte_multi_stream_cublas_gemm),
  //   Megatron-Core's TEGroupedMLP with moe_grouped_gemm. Under the routing (dropless, or
  //   dropping without padding) the host learns the token counts first (a synchronisation), so
  //   those launches cannot run ahead of the GPU:
  //   the replay prices the MoE layer's passes at no less than the host's time to issue their
  //   kernels (GpuSpec::host_op_time; LayerLowering::HostBoundBlock). The GEMMs themselves run
  //   four streams at a time (LayerLowering::ExpertGemmTime), with or without dropping.
  bool per_expert_gemm = false;
  GradAccumulation grad_accumulation = GradAccumulation::kFused;
  // PyTorch's deterministic algorithms (torch.use_deterministic_algorithms(True), as Megatron-LM's
  // --deterministic-mode sets: megatron/training/determinism.py). With it PyTorch fills every
  // newly allocated tensor with NaN before use (torch.utils.deterministic.fill_uninitialized_
  // memory, on by default; aten's empty_cuda does it, so Transformer Engine's outputs too): one
  // more memory-bound kernel per op output, on the GPU and on the host that issues it
  // (strategies/host_ops.h).
  bool deterministic = false;
  // The layers run Transformer Engine's modules (Megatron-LM's default --transformer-impl
  // transformer_engine), which hold a cuBLAS workspace of their own; false: the framework's
  // own modules on PyTorch ops (Megatron-LM's `local`, torchtitan).
  bool transformer_engine = true;
  // The cuBLAS workspace PyTorch holds per handle and stream (CUBLAS_WORKSPACE_CONFIG); 0: its
  // default for the GPU (strategies/workspaces.h).
  Bytes blas_workspace;
  double tokens = 0;  // total training tokens; 0 = not given
  FinetuneKind finetune = FinetuneKind::kNone;
  int lora_rank = 16;
};

// The attention's dropout probability a training runs with: Training::attention_dropout where
// stated, else the model's convention (ModelDropsOut: Megatron-Core's default 0.1, or none).
inline double AttentionDropout(const Training& t, const ModelSpec& m) {
  return t.attention_dropout >= 0 ? t.attention_dropout : ModelDropsOut(m) ? 0.1 : 0.0;
}

// Bytes per element of the weight gradients the backward writes: the training precision's, and
// bf16 under FP8 (its GEMMs write bf16 gradients).
inline double BackwardGradBytes(const Training& t) {
  return t.precision == Dtype::kFp8 ? 2.0 : DtypeBytes(t.precision);
}

// Whether the host issues the routed experts' kernels one expert at a time after a
// synchronisation (Training::per_expert_gemm), so that the replay waits on the host
// (GpuSpec::host_op_time). Token dropping without padding syncs too, earlier: the dropped
// routing's output size is read on the host before the permutation (Megatron-Core's
// MoEAlltoAllTokenDispatcher, "before_permutation_1" where moe_expert_capacity_factor is set);
// only inputs padded to capacity (--moe-pad-expert-input-to-capacity, not modelled) run ahead.
inline bool IssuesExpertsFromHost(const ModelSpec& m, const Training& t) {
  return m.is_moe() && t.per_expert_gemm;
}

}  // namespace parasim
