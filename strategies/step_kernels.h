// What one rank's step computes, read from the layer graph: the GEMMs the cost model prices per
// op (forward, input gradient, weight gradient), the kernels that run the attention core, the
// distinct kernels of a step for `parasim calibrate --scenario`, and the model and recompute
// FLOPs per sequence.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hardware/cost_model.h"
#include "hardware/spec.h"
#include "models/model_spec.h"
#include "models/op.h"
#include "models/training.h"
#include "strategies/layout.h"

namespace parasim {

// The kernels Transformer Engine runs a training attention core with (its get_attention_backend,
// transformer_engine/pytorch/attention/dot_product_attention/utils.py, and the fused backend's
// rules, transformer_engine/common/fused_attn/fused_attn.cpp, at 2.17.1 as Megatron-LM's CI pins
// it): cuDNN's fused attention, except on compute capability 10 and above (Blackwell) under
// deterministic training with dropout, which cuDNN's deterministic backward does not take (no
// cuDNN version, 9.18.1 on: "is_training && deterministic && ... dropout == 0.0"; before that
// none on Blackwell); FlashAttention 3 runs on Hopper alone and 4 takes no dropout, so
// FlashAttention 2's kernels run it (its >= 2.4.1 backward is deterministic). The materialised
// softmax where the scenario states it.
// Not separated: sliding-window layers with dropout, which no cuDNN version runs (FlashAttention 2
// on every GPU; the window is priced as an average over layers), and `--attention-backend flash`.
AttentionKernel TrainingAttentionKernel(const Training& t, const ModelSpec& m, const GpuSpec& g);

// The GEMMs the cost model prices for one GEMM op: (m, n, k, batch) of the forward, the input
// gradient and (unless the weights are frozen) the weight gradient.
struct GemmCall {
  char pass;  // 'F', 'B' (input gradient), 'W' (weight gradient)
  int64_t m, n, k, batch;
};
std::vector<GemmCall> TrainingGemms(const Op& op, bool frozen);

// The kernels one rank's step runs: every GEMM shape the cost model looks up (rows x batch,
// cols, depth), distinct and in first-use order, and the attention core's shape (per
// micro-batch).
struct StepKernels {
  struct Gemm {
    int64_t m = 0, n = 0, k = 0;
    std::string op;  // "F attention.qkv", "B mlp.fc1", "W mlp.fc1"
  };
  std::vector<Gemm> gemms;
  int64_t attention_batch = 0;  // micro-batch x local heads
  int64_t attention_seq = 0;    // local query length (seq / cp)
  int64_t attention_head_dim = 0;
  Dtype dtype = Dtype::kBf16;
};
StepKernels StepKernelsOf(const ModelSpec& model, const Training& training, const Layout& layout);

// Model FLOPs of one sequence (forward + backward, no recompute) and the extra FLOPs that
// recompute adds, derived from the layer graph. With `layout`, recompute covers the layers
// RecomputedLayers names (training.recompute_layers per chunk); without, every layer.
struct SequenceFlops {
  double model = 0;
  double recompute = 0;
};
SequenceFlops FlopsPerSequence(const ModelSpec& model, const Training& training,
                               const Layout* layout = nullptr);

}  // namespace parasim
