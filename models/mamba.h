// A hybrid stack's Mamba-2 layer (ModelSpec::hybrid's M), added to a block being built
// (models/block_builder.h). Private to models/.
//
//   BlockBuilder bb("mamba_layer");
//   AddMamba(bb, model, shape, dims);
#pragma once

#include "models/block_builder.h"
#include "models/model_spec.h"
#include "models/op_graph.h"

namespace parasim::blocks {

// The norm fused into in_proj, in_proj, the causal conv1d, the chunked state-space scan (SSD),
// the gated RMSNorm, out_proj, dropout + residual; TP's collectives around the projections and,
// under CP, the all-to-alls that give each rank whole sequences of some heads.
void AddMamba(BlockBuilder& bb, const ModelSpec& m, const GraphShape& s, const Dims& d);

}  // namespace parasim::blocks
