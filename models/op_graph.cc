#include "models/op_graph.h"

#include <algorithm>
#include <cmath>

#include "sim/enum_names.h"

namespace parasim {

namespace {
constexpr EnumNames<CommKind, 5> kComms("communication",
                                        {{{CommKind::kNone, "none"},
                                          {CommKind::kAllReduce, "all-reduce"},
                                          {CommKind::kReduceScatter, "reduce-scatter"},
                                          {CommKind::kAllGather, "all-gather"},
                                          {CommKind::kAllToAll, "all-to-all"}}});
constexpr EnumNames<GroupKind, 6> kGroups("group", {{{GroupKind::kTp, "tp"},
                                                     {GroupKind::kCp, "cp"},
                                                     {GroupKind::kEp, "ep"},
                                                     {GroupKind::kDp, "dp"},
                                                     {GroupKind::kPp, "pp"},
                                                     {GroupKind::kEtp, "etp"}}});
}  // namespace

std::string_view CommName(CommKind c) { return kComms.Name(c); }

double FlashComputedShare(const ModelSpec& m, int64_t seq) {
  // A causal layer computes the blocks on and below the diagonal: half of the matrix.
  constexpr double kCausal = 0.5;
  const AttentionWindow& w = m.window;
  const double s = static_cast<double>(seq);
  if (w.size <= 0 || static_cast<double>(w.size) >= s || m.layers <= 0) return kCausal;
  // Flash kernels compute whole tiles of 128 x 128 (FlashAttention-2, Dao 2023, sec. 3.1 and
  // its kernels' block sizes; cuDNN's fused attention alike): a sliding window of w keys
  // touches ceil(w / 128) + 1 key tiles per query tile, a chunk of w tokens its causal
  // triangle, (w / 128 + 1) / 2 tiles per query tile on average.
  constexpr double kTile = 128;
  const double size = static_cast<double>(w.size);
  const double local = std::min(
      kCausal, w.chunked ? (size + kTile) / (2 * s) : (std::ceil(size / kTile) + 1) * kTile / s);
  const int global = w.global_every > 0 ? m.layers / w.global_every : 0;
  return (global * kCausal + (m.layers - global) * local) / m.layers;
}
std::string_view GroupName(GroupKind g) { return kGroups.Name(g); }

// One E4M3 byte, plus blockwise's fp32 scale per 1x128 tile (a weight's 128x128 blocks add
// 4 / 16384, left out) or MXFP8's E8M0 byte per 32 values.
double Fp8ElementBytes(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::kTensorwise:
      return 1.0;
    case Fp8Recipe::kBlockwise:
      return 1.0 + 4.0 / 128;  // an fp32 scale per 128 values
    case Fp8Recipe::kMxfp8:
      return 1.0 + 1.0 / 32;  // an E8M0 scale (one byte) per 32 values
  }
  return 1.0;
}

// Transformer Engine (transformer_engine/pytorch/module/linear.py, layernorm_mlp.py,
// grouped_linear.py: get_weight_workspace with the weight quantizer's usage rowwise and, under
// autograd, columnwise): a Float8Tensor's column-wise usage allocates a transpose only where
// nvte_is_non_tn_fp8_gemm_supported() is false, compute capability below 10.0 or in [12.0, 13.0)
// (common/transformer_engine.cpp); MXFP8Tensor and Float8BlockwiseQTensor hold row-wise and
// column-wise data apart (each with its scales: E8M0 per 32 values; fp32 per 128x128 block, the
// weights' 2D blocks of the blockwise recipe, w_block_scaling_dim 2).
double Fp8WeightCopyBytes(Fp8Recipe r, double cc) {
  switch (r) {
    case Fp8Recipe::kTensorwise: {
      const bool non_tn = (cc >= 10.0 && cc < 12.0) || cc >= 13.0;
      return non_tn ? 1.0 : 2.0;
    }
    case Fp8Recipe::kBlockwise:
      return 2 * (1.0 + 4.0 / (128 * 128));
    case Fp8Recipe::kMxfp8:
      return 2 * (1.0 + 1.0 / 32);
  }
  return 2.0;
}

bool Recomputes(const Op& op, RecomputeKind r) {
  switch (r) {
    case RecomputeKind::kNone:
      return false;
    case RecomputeKind::kSelective:
      return op.in_attention_core;
    case RecomputeKind::kFull:
      return true;
    case RecomputeKind::kDeepseek:
      return op.deepseek_recompute;
    case RecomputeKind::kSelectiveOp:
      return op.op_rerun > 0;
  }
  return false;
}

double RecomputeShare(const Op& op, RecomputeKind r) {
  if (!Recomputes(op, r)) return 0;
  return r == RecomputeKind::kSelectiveOp ? op.op_rerun : 1.0;
}

}  // namespace parasim
