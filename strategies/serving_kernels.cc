#include "strategies/serving_kernels.h"

#include <algorithm>
#include <cmath>

#include "models/layer_graph.h"

namespace parasim {

ServeFormats ServeFormatsOf(const ServingPrecision& p, const GpuSpec& g) {
  ServeFormats f;
  f.weight_bytes = ServeDtypeBytes(p.weights);
  f.input_bytes = ServeDtypeBytes(p.activations);
  f.kv_bytes = ServeDtypeBytes(p.kv);
  // A GEMM runs at the rate of the wider of its operands' formats: tensor cores take both in
  // one format, so the narrower is widened (FP8 activations beside 16-bit weights run at the
  // 16-bit rate, FP4 activations beside FP8 weights at the FP8 rate; it had followed the
  // activations alone).
  const ServeDtype wider =
      ServeDtypeBytes(p.weights) > ServeDtypeBytes(p.activations) ? p.weights : p.activations;
  switch (wider) {
    case ServeDtype::kBf16:
    case ServeDtype::kFp16:
      f.compute = Dtype::kBf16;
      break;
    case ServeDtype::kFp8:
      f.compute = Dtype::kFp8;
      break;
    case ServeDtype::kFp4:
      f.compute = Dtype::kFp8;
      f.peak_scale = g.mxfp8 ? 2.0 : 1.0;  // the header's datasheet ratio
      break;
  }
  return f;
}

bool QuantisedGemm(const Op& op) {
  return op.kind == OpKind::kGemm && op.name != "router" && op.name != "lm_head";
}

Duration ServeGemmTime(const CostModel& cost16, const CostModel& low, const ServeFormats& f,
                       const Op& op, double rows, double touched) {
  if (rows <= 0 || op.n <= 0 || op.k <= 0 || touched <= 0) return Duration::Zero();
  const ServeGemmShape g = ServeGemmShapeOf(op, rows, touched);
  const CostModel& cm = g.quantised ? low : cost16;
  const double n = static_cast<double>(op.n), k = static_cast<double>(op.k);
  const Flops flops(2.0 * rows * n * k * touched);
  const double w = g.quantised ? f.weight_bytes : 2.0;
  const double in = g.quantised ? f.input_bytes : 2.0;
  const Bytes bytes(w * k * n * touched + (in * k + f.output_bytes * n) * rows * touched);
  const bool weight_only = g.quantised && f.weight_only();
  const Duration tiled =
      cm.RooflineTime(g.m, g.n, g.k, flops, bytes, g.quantised ? f.peak_scale : 1.0, !weight_only);
  if (!weight_only) return tiled;
  // A weight-only GEMM of a few rows runs as a GEMV on the CUDA cores, dequantising each weight
  // as it streams past (TensorRT-LLM's weight-only batched GEMV, Marlin), bound by the HBM read
  // rather than by tensor-core tiles its rows do not fill: the faster of the two, the GEMV's
  // arithmetic at the fp32 vector rate (the datasheet's, a lower bound on the kernels' FP16
  // FMAs). The tile curve alone priced W4A16 decode of Llama 3 70B on a B200 at one sequence
  // 30% above its weights' read (9.68 ms against 7.33).
  const GpuSpec& gpu = cm.cluster().gpu;
  const FlopRate vector = gpu.Peak(Dtype::kFp32) * gpu.sustained_factor;
  if (vector.flops_per_second() <= 0) return tiled;
  const Duration gemv = Max(ComputeTime(flops, vector), cm.MemoryTime(bytes)) + cm.Launch();
  return Min(tiled, gemv);
}

ServeGemmShape ServeGemmShapeOf(const Op& op, double rows, double touched) {
  // A batched GEMM fills the GPU like one GEMM with its products' rows stacked (as
  // CostModel::GemmTime takes it); the shape efficiency is the cost model's, at whole rows.
  return {std::max<int64_t>(1, std::llround(std::ceil(rows * touched))), op.n, op.k,
          QuantisedGemm(op)};
}

double TouchedExperts(double local, int experts, int top_k, double tokens) {
  if (experts <= 0 || tokens <= 0) return 0;
  const double p = std::min(1.0, static_cast<double>(top_k) / experts);
  return local * (1 - std::pow(1 - p, tokens));
}

double BusiestTouchedExperts(int local, int experts, int top_k, double tokens, int ranks) {
  if (local <= 0 || experts <= 0 || tokens <= 0) return 0;
  const double q = TouchedExperts(1, experts, top_k, tokens);
  if (q <= 0) return 0;
  if (ranks <= 1 || q >= 1) return local * q;
  // E[max] = sum over j < local of P(max > j) = 1 - P(count <= j)^ranks, the binomial's terms
  // in logarithms ((1 - q)^local underflows where hundreds of experts are nearly all reached).
  const double n = local, lq = std::log(q), lp = std::log1p(-q), ln_n = std::lgamma(n + 1);
  double cdf = 0, expected = 0;
  for (int j = 0; j < local; ++j) {
    cdf += std::exp(ln_n - std::lgamma(j + 1.0) - std::lgamma(n - j + 1) + j * lq + (n - j) * lp);
    expected += 1 - std::pow(std::min(1.0, cdf), ranks);
  }
  return expected;
}

Duration ServeAttentionTime(const CostModel& cost16, const AttentionWork& w) {
  if (w.pairs <= 0 && w.bytes <= 0) return Duration::Zero();
  return cost16.AttentionTime(Flops(w.pairs * w.flops_per_pair), Bytes(w.bytes),
                              /*backward=*/false, /*fused=*/true);
}

double KvBytesPerTokenLayer(const ModelSpec& m, int attention_tp, double kv_bytes) {
  if (m.mla.enabled()) {
    return static_cast<double>(m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) * kv_bytes;
  }
  const double kv_local = std::max(1.0, static_cast<double>(m.kv()) / attention_tp);
  return 2 * kv_local * static_cast<double>(m.hd()) * kv_bytes;
}

// Bucket token counts: every count to 64, then 1/16 apart (an iteration's replayed chain is
// interpolated between two of them; the chain's time is near linear in tokens between).
namespace {
constexpr int64_t kExactBuckets = 64;
constexpr double kBucketStep = 17.0 / 16.0;
constexpr int64_t kMaxBucketTokens = int64_t{1} << 24;
}  // namespace

std::vector<int64_t> ServingBucketGrid() {
  std::vector<int64_t> g;
  for (int64_t t = 1; t <= kExactBuckets; ++t) g.push_back(t);
  double x = static_cast<double>(kExactBuckets);
  while (g.back() < kMaxBucketTokens) {
    x *= kBucketStep;
    g.push_back(std::max(g.back() + 1, static_cast<int64_t>(std::llround(x))));
  }
  return g;
}

// Layers split as evenly as they go, the first stages taking one more where they do not divide.
std::vector<int> SplitLayers(int layers, int pp) {
  std::vector<int> out(static_cast<size_t>(pp), layers / pp);
  for (int i = 0; i < layers % pp; ++i) ++out[static_cast<size_t>(i)];
  return out;
}

// The op of `b` named `name`, or null.
const Op* FindOp(const Block& b, std::string_view name) {
  for (size_t i = 0; i < b.size(); ++i) {
    if (b.op(i).name == name) return &b.op(i);
  }
  return nullptr;
}

// The layer graph's shape for `rank_tokens` tokens on one rank of a serving replica.
GraphShape ShapeFor(int64_t rank_tokens, int tp, int ep, int etp) {
  GraphShape s;
  s.micro_batch = 1;
  s.seq_len = rank_tokens;
  s.tp = tp;
  s.ep = ep;
  s.etp = etp;
  s.sp = false;
  s.expert_sort = false;  // vLLM's and TensorRT-LLM's fused MoE sort the tokens once
  return s;
}

}  // namespace parasim
