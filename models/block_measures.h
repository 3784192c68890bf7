// What is measured from one block of the layer graph on this rank (models/layer_graph.h): the
// bytes it saves for backward under each recompute mode, its ops' working memory, its FLOPs,
// its parameters.
//
//   ModelGraph g = BuildModelGraph(model, shape);
//   double act = ActivationBytes(g.dense, RecomputeKind::kSelective);   // per layer, this rank
//   double fwd = ForwardFlops(g.dense), params = BlockParams(g.moe, /*experts_only=*/true);
#pragma once

#include "models/op.h"
#include "models/training.h"

namespace parasim {

// Bytes saved for backward by one block on this rank under a recompute mode.
double ActivationBytes(const Block& b, RecomputeKind recompute);
// Bytes a split backward's weight-gradient pass (W) still needs after the input-gradient pass:
// the inputs its GEMMs saved (Qi et al. 2024's M_W).
double WeightGradBytes(const Block& b);
// The most working memory one of the block's ops holds beside the saved tensors while it runs
// (Op::transient): what a stage needs on top of its activations at that op.
double TransientBytes(const Block& b);
// Sum of forward (backward) matmul FLOPs of one block on this rank.
double ForwardFlops(const Block& b);
double BackwardFlops(const Block& b);
double BlockParams(const Block& b, bool experts_only = false);
// Of those, the weights of the block's FP8 GEMMs (Op::fp8: every Linear but the router under
// precision fp8; none otherwise).
double Fp8GemmParams(const Block& b, bool experts_only = false);
// LoRA adapter parameters of a block on this rank: rank r on every linear layer but the router
// (A: in x r, B: r x out; Hu et al. 2021); `experts_only`: the routed experts' alone.
double LoraParams(const Block& b, int r, bool experts_only = false);

}  // namespace parasim
