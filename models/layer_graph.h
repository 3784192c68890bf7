// The layer graph: a Boost.Graph DAG of ops per block (embedding, dense layer, MoE layer, head)
// for one rank's shard of one micro-batch. Each op knows its shapes, FLOPs forward and backward,
// HBM bytes, parameters, the tensors it saves for backward, and the collective that follows it.
//
//   GraphShape shape{.micro_batch = 1, .seq_len = 2048, .tp = 8, .sp = true};
//   ModelGraph g = BuildModelGraph(model, shape);
//   double act = ActivationBytes(g.dense, RecomputeKind::kSelective);   // per layer, this rank
//
// Activation memory and FLOPs are derived from these ops; the closed forms of Korthikanti et al.
// (2022) and Narayanan et al. (SC21) are tests of the derivation, not the code path.
//
// In parts: the ops and their rules (models/op_graph.h), what is measured from a block
// (models/block_measures.h), both included here; the ops' builders (models/block_builder.h),
// the attention (models/attention.h) and the MLPs (models/mlp.h) the layers are built from.
#pragma once

#include <memory>
#include <vector>

#include "models/block_measures.h"
#include "models/model_spec.h"
#include "models/op_graph.h"
#include "models/training.h"

namespace parasim {

struct ModelGraph {
  Block embedding;
  Block dense;  // one dense transformer layer (a hybrid model's: only as its MTP layer)
  Block moe;    // one MoE layer (empty for dense models; a hybrid's only as its MTP layer)
  Block head;   // final norm, LM head, loss
  // One multi-token-prediction module's own ops (ModelSpec::mtp_depth > 0): the next tokens'
  // embedding lookup, the two norms and the projection; its layer is `moe` (or `dense`) and
  // its head `head`, whose weights it shares.
  Block mtp;
  // A hybrid stack's single-sublayer layers (ModelSpec::hybrid), those its pattern uses: a
  // Mamba-2 mixer, attention, a dense MLP, experts; each with its own norm and residual.
  Block mamba, attention, mlp, experts;
  const Block& mtp_layer() const { return moe.size() > 0 ? moe : dense; }
  // Each LayerKind's block, in its order.
  static constexpr Block ModelGraph::*kLayerBlocks[kLayerKinds] = {
      &ModelGraph::dense,     &ModelGraph::moe, &ModelGraph::mamba,
      &ModelGraph::attention, &ModelGraph::mlp, &ModelGraph::experts};
  // The block of layers of kind `k`.
  const Block& Layer(LayerKind k) const { return this->*kLayerBlocks[static_cast<int>(k)]; }
  // Every layer block, in LayerKind's order (empty where the model has none of that kind).
  std::vector<const Block*> Layers() const {
    std::vector<const Block*> out;
    for (Block ModelGraph::*b : kLayerBlocks) out.push_back(&(this->*b));
    return out;
  }
};

ModelGraph BuildModelGraph(const ModelSpec& model, const GraphShape& shape);
// The same graph, built once per (model, shape) and shared: a step's memory planner, layer
// lowering and FLOP count, and every layout of a sweep with the same rank shape, reuse it. A
// small cache per thread (no locks on the sweep's workers), compared by value.
std::shared_ptr<const ModelGraph> SharedModelGraph(const ModelSpec& model, const GraphShape& shape);

}  // namespace parasim
