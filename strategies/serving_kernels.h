// The kernels of one serving iteration priced on one GPU: the layer graph's GEMMs with a served
// model's number formats (weights in their own format, activations in theirs, read and written
// by the GEMM itself, as TensorRT-LLM and vLLM fuse the quantisation into the kernel before),
// the experts a batch actually touches, and the attention over each sequence's own context. The
// rates are the cost model's (hardware/cost_model.h): the GEMM's roofline, its shape efficiency
// and the sustained factor, the attention's efficiency, the HBM's; nothing here is fitted.
//
//   ServeFormats f = ServeFormatsOf(precision, cluster.gpu);
//   Duration t = ServeGemmTime(cost16, cost_low, f, op, rows, touched);
//   Duration a = ServeAttentionTime(cost16, AttentionWork{...});
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "hardware/cost_model.h"
#include "models/model_spec.h"
#include "models/op.h"
#include "strategies/serving_spec.h"

namespace parasim {

// What the precision means for a GEMM on a GPU: the bytes of its weights and of its input, and
// the tensor-core rate it runs at (its activations' format: a weight-only format computes in
// the activations'). FP4 runs on Blackwell's block-scaled tensor cores at twice the FP8 rate
// (DGX B200 datasheet: 144 PFLOP/s FP4 against 72 PFLOP/s FP8, both sparse, over 8 GPUs),
// which the catalog marks by `mxfp8` (block-scaled MMA, CUTLASS's kind::mxf8f6f4 and
// kind::mxf4nvf4 on SM100).
struct ServeFormats {
  double weight_bytes = 2;  // per quantised weight
  double input_bytes = 2;   // per element of a quantised GEMM's input
  double output_bytes = 2;  // GEMMs write 16-bit outputs
  double kv_bytes = 2;      // per KV-cache element
  double peak_scale = 1;    // the GEMM rate over the catalog's peak of `compute`
  Dtype compute = Dtype::kBf16;
  // Weights narrower than the activations (fp8 or fp4 weights beside 16-bit activations, fp4
  // beside fp8): a weight-only format, whose GEMMs read fewer bytes than a calibration's GEMM of
  // the compute format measured, so they keep the shape curve (CostModel::GemmEfficiency).
  bool weight_only() const { return weight_bytes < input_bytes; }
};
ServeFormats ServeFormatsOf(const ServingPrecision& p, const GpuSpec& g);

// The linears a served model quantises: every GEMM of a transformer layer but the MoE router,
// and not the LM head (as TensorRT-LLM's FP8 and NVFP4 recipes and ModelOpt leave the router, the
// embedding and the LM head in 16 bits; closed/NVIDIA/documentation/calibration.md of MLPerf
// Inference v4.1).
bool QuantisedGemm(const Op& op);

// One GEMM op of the layer graph for this iteration: `rows` of its input per product (the op's
// m, or for the routed experts the tokens each expert receives) and `touched` of its `batch`
// products whose weights are read (the experts the batch reaches; batch otherwise). `low` is the
// cost model of the quantised rate (fp8 for fp8 and fp4), `cost16` the 16-bit one.
Duration ServeGemmTime(const CostModel& cost16, const CostModel& low, const ServeFormats& f,
                       const Op& op, double rows, double touched);

// The GEMM that ServeGemmTime prices for the same arguments: its products' rows stacked (m),
// the op's n and k, and whether it runs at the quantised rate. What `parasim calibrate
// --scenario` times for a serving scenario is this list, so its measured shapes are the ones the
// replay asks the cost model for.
struct ServeGemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool quantised = false;
};
ServeGemmShape ServeGemmShapeOf(const Op& op, double rows, double touched);

// The experts of `local` on a rank that `tokens` tokens reach when each picks top_k of
// `experts` at random: local x (1 - (1 - top_k / experts)^tokens).
double TouchedExperts(double local, int experts, int top_k, double tokens);
// The most of them on any of `ranks` ranks of `local` experts each: the expected maximum of
// `ranks` counts, each binomial over the local experts with TouchedExperts's chance (a
// step of the replica waits for its busiest rank, which at a few tokens reads several times
// the mean's experts: Mixtral on EP8 at one token, 1 against 0.25; DeepSeek-V3 on EP8, 2.6x).
double BusiestTouchedExperts(int local, int experts, int top_k, double tokens, int ranks);

// One attention kernel's work on one rank: `pairs` query-key pairs (causal within a prompt's
// chunk), `flops_per_pair` (QK^T and AV over the rank's heads), the HBM bytes of its queries,
// outputs and the KV it reads.
struct AttentionWork {
  double pairs = 0;
  double flops_per_pair = 0;
  double bytes = 0;
};
// Fused attention at the cost model's efficiency (16-bit tensor cores) or its HBM traffic,
// whichever is longer; zero without work.
Duration ServeAttentionTime(const CostModel& cost16, const AttentionWork& w);

// Bytes of KV cache one token holds on one GPU per layer: K and V of the rank's KV heads
// (GQA: at least one head per rank, replicated when TP exceeds the KV heads), or MLA's latent
// and decoupled RoPE key (DeepSeek-V3: kv_lora_rank + qk_rope_head_dim), which every TP rank
// holds whole.
double KvBytesPerTokenLayer(const ModelSpec& m, int attention_tp, double kv_bytes);

// Token counts whose stage chains are replayed (every count to 64, then 1/16 apart, to 2^24);
// an iteration's chain is interpolated between two of them.
std::vector<int64_t> ServingBucketGrid();
// `layers` over `pp` stages as evenly as they go, the first stages one more where they do not
// divide.
std::vector<int> SplitLayers(int layers, int pp);
// The op of `b` named `name`, or null.
const Op* FindOp(const Block& b, std::string_view name);
// The layer graph's shape for `rank_tokens` tokens on a serving rank: one sequence of them,
// TP without SP, the experts over `ep` (of width `etp`), sorted once by the fused MoE kernel.
GraphShape ShapeFor(int64_t rank_tokens, int tp, int ep, int etp);

}  // namespace parasim
