#include "models/layer_graph.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "models/attention.h"
#include "models/block_builder.h"
#include "models/mamba.h"
#include "models/mlp.h"

namespace parasim {
namespace {

using blocks::BlockBuilder;
using blocks::Dims;

// The vocab-parallel embedding table's lookup (and learned positions).
Block BuildEmbedding(const ModelSpec& m, const GraphShape& s, const Dims& d) {
  BlockBuilder bb("embedding");
  const double pos = m.position == PositionKind::kLearned
                         ? static_cast<double>(m.max_position > 0 ? m.max_position : s.seq_len)
                         : 0.0;
  Op emb = blocks::Elementwise("embedding", 2 * d.T * d.h * d.a, 2 * d.T * d.h * d.a);
  emb.params = static_cast<double>(m.vocab) * d.h / s.tp + pos * d.h;  // vocab-parallel table
  blocks::LeaveTp(&emb, d);  // partial sums of the vocab-parallel lookup are reduced over TP
  bb.Add(std::move(emb));
  return bb.Finish();
}

// A transformer layer: the attention, then a dense MLP or the experts; marked for selective-op
// recompute and FP8.
Block BuildLayer(const char* name, bool moe, const ModelSpec& m, const GraphShape& s,
                 const Dims& d) {
  BlockBuilder bb(name);
  blocks::AddAttention(bb, m, s, d);
  if (moe) {
    blocks::AddMoeMlp(bb, m, s, d);
  } else {
    blocks::AddDenseMlp(bb, m, d, m.ffn());
  }
  Block b = bb.Finish();
  blocks::MarkSelectiveOp(&b, d);
  blocks::MarkFp8(&b, s, d);
  return b;
}

// One sublayer of a hybrid stack (ModelSpec::hybrid), marked as a transformer layer is.
Block BuildSublayer(LayerKind k, const ModelSpec& m, const GraphShape& s, const Dims& d) {
  static constexpr const char* kNames[kLayerKinds] = {
      "dense_layer", "moe_layer", "mamba_layer", "attention_layer", "mlp_layer", "experts_layer"};
  BlockBuilder bb(kNames[static_cast<int>(k)]);
  switch (k) {
    case LayerKind::kMamba:
      blocks::AddMamba(bb, m, s, d);
      break;
    case LayerKind::kAttention:
      blocks::AddAttention(bb, m, s, d);
      break;
    case LayerKind::kExperts:
      blocks::AddMoeMlp(bb, m, s, d);
      break;
    default:
      blocks::AddDenseMlp(bb, m, d, m.ffn());
      break;
  }
  Block b = bb.Finish();
  blocks::MarkSelectiveOp(&b, d);
  blocks::MarkFp8(&b, s, d);
  return b;
}

// Vocab-parallel cross-entropy on fp32 logits, pass by pass as Megatron-LM runs it (unfused
// path, the default: megatron/core/tensor_parallel/cross_entropy.py, and mpu/cross_entropy.py
// with the caller's .float() before it). Bytes per logit, a that of the logits' type:
//   forward: max (4 read), subtract the max in place (4 + 4), exp in place (4 + 4), sum (4),
//            divide by the sum in place (4 + 4): 32;
//   backward: scale the saved softmax by the loss gradient in place (4 + 4): 8;
//   and 16-bit logits add the cast to fp32 (a + 4) and the gradient's cast back (4 + a).
// The fp32 softmax is kept for the backward. (torchtitan's F.cross_entropy on .float()
// logits makes about 22 and 26 with bf16: 48 in all against 52.)
// Memory: beside the kept softmax, the 16-bit logits stay alive through the forward (the model
// holds the LM head's output until its forward returns) and the gradient's 16-bit cast is
// written before the fp32 gradient is freed: a bytes a logit of working memory either way.
Op CrossEntropy(const GraphShape& s, const Dims& d, double per_logit) {
  const double cast = d.a < 4 ? d.a + 4 : 0;  // .float() of fp32 logits is a no-op
  if (s.fused_cross_entropy) {
    // Fused (training.cross_entropy: fused): time as Transformer Engine's
    // parallel_cross_entropy (transformer_engine/pytorch/triton/cross_entropy.py): the
    // forward's online softmax reads each logit once, in its own type, and keeps a max, a sum
    // and the target's logit per token; the backward reads the logits again and writes the
    // gradient in their place.
    Op loss = blocks::Elementwise("cross_entropy", per_logit * d.a, per_logit * 2 * d.a);
    // Memory as Megatron-Core's fusion runs by default (cross_entropy_fusion_impl "native",
    // megatron/core/fusions/fused_cross_entropy.py; its "te" choice is refused by the
    // arguments' validation at d98e8a6): the unfused passes compiled (torch.compile), on the
    // logits' fp32 copy, the softmax kept. A compiled function does not write its inputs in
    // place: the exp is a new fp32 buffer beside the cast it reads, and the 16-bit logits are
    // still alive, (a + 4) bytes a logit of working memory beside the kept 4 (measured: the
    // megatron-ci corpus's cross_entropy_loss_fusion runs, docs/MODEL.md "Peak memory").
    loss.saved.push_back({"softmax", per_logit * 4, false});
    loss.transient = per_logit * (cast > 0 ? d.a + 4 : d.a);
    return loss;
  }
  Op loss = blocks::Elementwise("cross_entropy", per_logit * (32 + cast), per_logit * (8 + cast));
  // PyTorch runs the cast to fp32, the in-place subtraction of the max and division by the
  // sum (broadcast over a row), and the backward's in-place scaling unvectorized: kernels
  // the SMs bound (elementwise_kernel<128, 2>, unrolled_elementwise_kernel; "Element-wise
  // kernels on Hopper" in docs/MODEL.md). The max, the exp, the sum and the cast back stream.
  loss.elements = per_logit;
  loss.fwd_math = loss.bwd_math = ElementMath::kLossPasses;
  loss.fwd_sm_passes = cast > 0 ? 3 : 2;
  loss.fwd_sm_bytes = per_logit * (cast + 8 + 8);
  loss.bwd_sm_passes = 1;
  loss.bwd_sm_bytes = per_logit * 8;
  loss.saved.push_back({"logits", per_logit * 4, false});
  loss.transient = cast > 0 ? per_logit * d.a : 0.0;
  return loss;
}

// The final norm, the vocab-parallel LM head and the loss.
Block BuildHead(const ModelSpec& m, const GraphShape& s, const Dims& d) {
  BlockBuilder bb("head");
  Op ln = blocks::Norm("final_norm", m, d);
  const int64_t T = static_cast<int64_t>(d.T);
  const double v_local = static_cast<double>(m.vocab) / s.tp;
  Op head = blocks::Gemm("lm_head", T, m.hidden, static_cast<int64_t>(v_local),
                         m.tied_embeddings ? 0.0 : v_local * d.h);
  blocks::EnterTp(&ln, d, &head);
  bb.Add(std::move(ln));
  head.saved.push_back({"lm_head.input", d.T_out * d.h * d.a, false});
  bb.Add(std::move(head));
  bb.Add(CrossEntropy(s, d, d.T * v_local));
  return bb.Finish();
}

// One multi-token-prediction module's own ops. DeepSeek-V3 sec. 2.2:
// h' = M [RMSNorm(h); RMSNorm(Emb(t_{i+k}))], M of d x 2d.
Block BuildMtp(const ModelSpec& m, const Dims& d) {
  BlockBuilder bb("mtp");
  const double x = d.T_out * d.h * d.a;
  bb.Add(blocks::Elementwise("mtp_embedding", 2 * x, 2 * x));
  bb.Add(blocks::Norm("mtp_hidden_norm", m, d));
  Op norm = blocks::Norm("mtp_embedding_norm", m, d);
  // The projection is column-parallel over TP (Megatron-Core's eh_proj, gather_output=False)
  // and its output all-gathered over the hidden dimension before the module's layer
  // (gather_from_tensor_model_parallel_region, whose backward is a split). Its input, the two
  // halves concatenated, enters TP as a column-parallel linear's does: all-gathered under SP,
  // its gradient reduced. (It had been replicated: each rank computing and holding all of it,
  // DeepSeek-V3 training without TP.) Under SP the gathered output is split along the sequence
  // again (scatter_to_sequence_parallel_region: a contiguous copy of the rank's part), and the
  // split's backward all-gathers the gradient, T x h (multi_token_prediction.py,
  // _concat_embeddings, at Megatron-LM d98e8a6).
  const int t = d.t;
  Op proj = blocks::Gemm("mtp_proj", static_cast<int64_t>(d.T), 2 * m.hidden, m.hidden / t,
                         2.0 * d.h * d.h / t);
  proj.saved.push_back({"mtp_proj.input", 2 * x, false, 0});
  blocks::EnterTp(&norm, d, &proj, /*widths=*/2);
  const double out = d.T * d.h * d.a;  // the gathered output, T x h
  if (t > 1) proj.fwd_comm = {CommKind::kAllGather, GroupKind::kTp, out, false};
  bb.Add(std::move(norm));
  bb.Add(std::move(proj));
  if (t > 1 && d.sp) {
    Op split = blocks::Elementwise("mtp_sp_split", 2 * x, 0);
    split.bwd_comm = {CommKind::kAllGather, GroupKind::kTp, out, false};
    bb.Add(std::move(split));
  }
  return bb.Finish();
}

}  // namespace

ModelGraph BuildModelGraph(const ModelSpec& m, const GraphShape& s) {
  const Dims d = blocks::MakeDims(m, s);
  ModelGraph g;
  g.embedding = BuildEmbedding(m, s, d);
  // A hybrid stack builds its own kinds below; a transformer layer only as its MTP modules' layer.
  const bool transformer = !m.is_hybrid(), mtp = m.mtp_depth > 0;
  if (transformer || (mtp && !m.is_moe())) {
    g.dense = BuildLayer("dense_layer", /*moe=*/false, m, s, d);
  }
  if (m.is_moe() && (transformer || mtp)) g.moe = BuildLayer("moe_layer", /*moe=*/true, m, s, d);
  g.head = BuildHead(m, s, d);
  if (m.mtp_depth > 0) g.mtp = BuildMtp(m, d);
  if (m.is_hybrid()) {
    bool present[kLayerKinds] = {};
    for (int i = 0; i < m.layers; ++i) present[static_cast<int>(m.KindOf(i))] = true;
    for (int k = 0; k < kLayerKinds; ++k) {
      if (present[k])
        g.*ModelGraph::kLayerBlocks[k] = BuildSublayer(static_cast<LayerKind>(k), m, s, d);
    }
  }
  return g;
}

std::shared_ptr<const ModelGraph> SharedModelGraph(const ModelSpec& model,
                                                   const GraphShape& shape) {
  struct Entry {
    ModelSpec model;
    GraphShape shape;
    std::shared_ptr<const ModelGraph> graph;
  };
  // A sweep's layouts take a handful of rank shapes (tp x sp x cp x ep x micro-batch); eight
  // recent ones per thread cover a layout's calls and the runs of layouts beside it.
  constexpr size_t kEntries = 8;
  thread_local std::vector<Entry> cache;
  for (size_t i = 0; i < cache.size(); ++i) {
    if (cache[i].shape == shape && cache[i].model == model) {
      std::rotate(cache.begin(), cache.begin() + static_cast<std::ptrdiff_t>(i),
                  cache.begin() + static_cast<std::ptrdiff_t>(i) + 1);  // most recent first
      return cache.front().graph;
    }
  }
  auto g = std::make_shared<const ModelGraph>(BuildModelGraph(model, shape));
  if (cache.size() == kEntries) cache.pop_back();
  cache.insert(cache.begin(), Entry{model, shape, g});
  return g;
}

}  // namespace parasim
