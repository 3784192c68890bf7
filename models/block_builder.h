// The builders the layer graph's blocks are made with (models/layer_graph.cc, attention.h,
// mlp.h): a block built op by op, the rank's dimensions, the common ops (a GEMM, a memory-bound
// pass, a norm, dropout and residual), the tensor-parallel collectives around them, and the
// marks a finished layer gets (selective-op recompute, FP8). Private to models/.
//
//   const Dims d = MakeDims(model, shape);
//   BlockBuilder bb("dense_layer");
//   const Vertex in = bb.Add(Norm("attn_norm", model, d));
//   bb.Add(Gemm("qkv_proj", tokens, model.hidden, cols, params));   // after the norm
//   bb.Add(DropoutAdd("attn_residual", d), {bb.last(), in});         // after both
//   Block layer = bb.Finish();                                        // in topological order
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "models/model_spec.h"
#include "models/op_graph.h"

namespace parasim::blocks {

using Vertex = OpGraph::vertex_descriptor;

// Builds a block op by op; `Add` links the new op after `after` (default: the previous op).
class BlockBuilder {
 public:
  explicit BlockBuilder(std::string name) { block_.name = std::move(name); }
  Vertex Add(Op op, std::vector<Vertex> after = {}) {
    Vertex v = boost::add_vertex(std::move(op), block_.graph);
    if (after.empty() && has_last_) after.push_back(last_);
    for (Vertex a : after) boost::add_edge(a, v, block_.graph);
    last_ = v;
    has_last_ = true;
    return v;
  }
  Vertex last() const { return last_; }
  // The block, its ops in topological (forward) order.
  Block Finish();

 private:
  Block block_;
  Vertex last_ = 0;
  bool has_last_ = false;
};

// The dimensions of this rank's shard of a micro-batch.
struct Dims {
  double T;      // tokens of this rank's micro-batch (b * s / cp)
  double T_out;  // tokens outside the TP region (T / t with SP, else T)
  double h;
  double a;  // bytes per activation element
  int t;
  bool sp;
  bool dropout;
};
Dims MakeDims(const ModelSpec& m, const GraphShape& s);

// `batch` (m x k) * (k x n) products holding `params` parameters; backward twice the FLOPs.
Op Gemm(std::string name, int64_t m, int64_t k, int64_t n, double params, int64_t batch = 1);
// A memory-bound op moving `fwd_bytes` forward and `bwd_bytes` backward.
Op Elementwise(std::string name, double fwd_bytes, double bwd_bytes);
// An MLP's activation over `elements` outputs, forward and backward (ElementMath::kActivation).
void Activation(Op* op, double elements);
// A norm over `tokens` rows of `cols`: reads x, writes y; backward reads x, dy, writes dx
// (Korthikanti: input saved, 2sbh).
Op NormOver(const std::string& name, const ModelSpec& m, const Dims& d, double tokens, double cols);
// The block's norm over the hidden size (sharded over TP with SP).
Op Norm(const std::string& name, const ModelSpec& m, const Dims& d);
// Dropout (where the model has it) and the residual add, outside the TP region.
Op DropoutAdd(const std::string& name, const Dims& d);

// The collective that enters a TP region (Megatron's "f"; with SP an all-gather) after `op`.
// Its backward collective (all-reduce, or reduce-scatter with SP) reduces the input gradient of
// the column-parallel Linear that follows: on `linear` when given, run beside its weight
// gradient (CommSpec::beside_wgrad), else on `op`, blocking. The input is `widths` hidden sizes
// wide (MTP's projection takes two halves concatenated).
void EnterTp(Op* op, const Dims& d, Op* linear = nullptr, double widths = 1);
// The collective that leaves a TP region (Megatron's "g"; with SP a reduce-scatter).
void LeaveTp(Op* op, const Dims& d);

// FP8 training runs a layer's Linears as FP8 GEMMs and keeps their saved inputs as the FP8 casts
// (Transformer Engine's Linear saves its input's cast for the weight gradient; DeepSeek-V3
// caches FP8 activations for the backward of Linear, Sec. 3.3.3). The MoE router stays in
// 16-bit (DeepSeek-V3 keeps the gating module in higher precision), as do the embedding and the
// LM head, which are not layers' Linears.
void MarkFp8(Block* b, const GraphShape& s, const Dims& d);
// torchtitan's op-level selective checkpointing of a layer (recompute: selective-op): its
// policy saves the outputs of aten.mm calls, but every second one (counted per layer from 1),
// and of scaled-dot-product attention (torchtitan/distributed/activation_checkpoint.py,
// _ops_sac_save and the mm_count_key rule). Every matmul of the layer counts, in order; the
// attention core marks itself (AttentionCore).
void MarkSelectiveOp(Block* b, const Dims& d);

}  // namespace parasim::blocks
