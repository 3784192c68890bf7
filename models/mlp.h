// The MLP of a transformer layer, added to a block being built (models/block_builder.h): a dense
// MLP (GELU or SwiGLU), or a mixture of experts with Megatron-Core's all-to-all dispatcher
// (router, dispatch, the experts, combine, shared experts), each with its norm, dropout and
// residual add and the tensor-parallel collectives around them. Private to models/.
//
//   AddAttention(bb, model, shape, dims);   // models/attention.h
//   model.is_moe() ? AddMoeMlp(bb, model, shape, dims) : AddDenseMlp(bb, model, dims, model.ffn());
#pragma once

#include <cstdint>

#include "models/block_builder.h"
#include "models/model_spec.h"
#include "models/op_graph.h"

namespace parasim::blocks {

// Norm, fc1 (GELU, or SwiGLU's gate and up projections), the activation, fc2, dropout + residual,
// over `ffn` hidden units split over TP.
void AddDenseMlp(BlockBuilder& bb, const ModelSpec& m, const Dims& d, int64_t ffn);
// Norm, router, dispatch, the routed experts, combine, the shared experts, dropout + residual.
void AddMoeMlp(BlockBuilder& bb, const ModelSpec& m, const GraphShape& s, const Dims& d);

}  // namespace parasim::blocks
