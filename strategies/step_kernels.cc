#include "strategies/step_kernels.h"

#include <fmt/core.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "models/layer_graph.h"
#include "strategies/memory.h"
#include "strategies/schedule.h"

namespace parasim {

std::vector<GemmCall> TrainingGemms(const Op& op, bool frozen) {
  // Input gradient (m x k) and, unless the weights are frozen, weight gradient (k x n).
  std::vector<GemmCall> out = {{'F', op.m, op.n, op.k, op.batch},
                               {'B', op.m, op.k, op.n, op.batch}};
  if (!frozen) out.push_back({'W', op.k, op.n, op.m, op.batch});
  return out;
}

StepKernels StepKernelsOf(const ModelSpec& model, const Training& training, const Layout& layout) {
  StepKernels out;
  out.dtype = training.precision;
  const GraphShape shape = RankShape(training, layout);
  const auto graph = SharedModelGraph(model, shape);
  const ModelGraph& g = *graph;
  const bool frozen = training.finetune != FinetuneKind::kNone;
  std::set<std::tuple<int64_t, int64_t, int64_t>> seen;
  std::vector<const Block*> blocks = g.Layers();
  blocks.insert(blocks.begin(), &g.embedding);
  blocks.push_back(&g.head);
  for (const Block* b : blocks) {
    for (size_t i = 0; i < b->size(); ++i) {
      const Op& op = b->op(i);
      if (op.kind != OpKind::kGemm) continue;
      for (const GemmCall& c : TrainingGemms(op, frozen)) {
        // The cost model prices a batched GEMM as one with `batch` times the rows.
        const int64_t m = c.m * c.batch;
        if (seen.insert({m, c.n, c.k}).second) {
          out.gemms.push_back({m, c.n, c.k, fmt::format("{} {}", c.pass, op.name)});
        }
      }
    }
  }
  out.attention_batch =
      shape.micro_batch * std::max<int64_t>(1, model.heads / std::max(1, shape.tp));
  out.attention_seq = shape.seq_len / std::max(1, shape.cp);
  out.attention_head_dim = model.hd();
  return out;
}

SequenceFlops FlopsPerSequence(const ModelSpec& model, const Training& training,
                               const Layout* layout) {
  GraphShape shape;
  shape.micro_batch = 1;
  shape.seq_len = training.seq_len;
  shape.attention = training.attention;
  const auto graph = SharedModelGraph(model, shape);
  const ModelGraph& g = *graph;
  const bool frozen = training.finetune != FinetuneKind::kNone;
  auto block = [&](const Block& b, double* model_f, double* recompute_f) {
    for (size_t i = 0; i < b.size(); ++i) {
      const Op& op = b.op(i);
      // Frozen weights need no weight gradient: backward is the input gradient only.
      const Flops bwd = frozen && op.kind == OpKind::kGemm ? Flops(op.bwd_flops / 2) : op.bwd_flops;
      *model_f += op.fwd_flops.flops() + bwd.flops();
      *recompute_f += op.fwd_flops.flops() * RecomputeShare(op, training.recompute);
    }
  };
  SequenceFlops f;
  double unused = 0;
  block(g.embedding, &f.model, &unused);
  block(g.head, &f.model, &unused);
  for (int k = 0; k < model.mtp_depth; ++k) {  // multi-token prediction: module, layer, head
    block(g.mtp, &f.model, &unused);
    block(g.mtp_layer(), &f.model, &f.recompute);
    block(g.head, &f.model, &unused);
  }
  std::vector<char> recomputed(static_cast<size_t>(model.layers), 1);
  if (layout != nullptr) recomputed = RecomputedLayers(*layout, training, model.layers);
  for (int i = 0; i < model.layers; ++i) {
    block(g.Layer(model.KindOf(i)), &f.model,
          recomputed[static_cast<size_t>(i)] ? &f.recompute : &unused);
  }
  return f;
}

AttentionKernel TrainingAttentionKernel(const Training& t, const ModelSpec& m, const GpuSpec& g) {
  if (t.attention == AttentionKind::kStandard) return AttentionKernel::kStandard;
  if (t.transformer_engine && t.deterministic && AttentionDropout(t, m) > 0 &&
      g.compute_capability >= 10.0) {
    return AttentionKernel::kFlash2;
  }
  return AttentionKernel::kFused;
}

}  // namespace parasim
