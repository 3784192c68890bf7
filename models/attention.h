// The attention of a transformer layer, added to a block being built (models/block_builder.h):
// norm, the Q, K and V projections (or DeepSeek-V3's multi-head latent attention), RoPE, the
// core (flash or standard, with context parallelism's K and V exchange), the output projection,
// dropout and the residual add, with the tensor-parallel collectives around them.
// Private to models/.
//
//   BlockBuilder bb("dense_layer");
//   AddAttention(bb, model, shape, MakeDims(model, shape));
//   AddDenseMlp(bb, model, dims, model.ffn());   // models/mlp.h
#pragma once

#include "models/block_builder.h"
#include "models/model_spec.h"
#include "models/op_graph.h"

namespace parasim::blocks {

// Attention sub-block: norm, QKV, core, output projection, dropout + residual.
void AddAttention(BlockBuilder& bb, const ModelSpec& m, const GraphShape& s, const Dims& d);

// The attention core: QK^T and AV over the full key length (CP: keys gathered from the ring),
// for `heads` local heads with Q and K of `qk` and V of `v` dimensions per head, and K and V
// of `k_cols` and `v_cols` columns per token (fewer with GQA).
Op AttentionCore(const ModelSpec& m, const GraphShape& s, const Dims& d, double heads, double qk,
                 double v, double k_cols, double v_cols);

}  // namespace parasim::blocks
