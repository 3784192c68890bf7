// What is measured from a block against the closed forms of KNOWLEDGE.md: activation memory
// (Korthikanti et al. 2022) under each recompute mode, FLOPs (SC21).
#include "models/block_measures.h"

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "models/layer_graph.h"

namespace parasim {
namespace {

ModelSpec Gpt3() { return *LoadModelCatalog()->Find("gpt3-175b"); }

TEST_CASE("activation memory reproduces Korthikanti et al. 2022 within 2% (GPT-3 175B)") {
  ModelSpec m = Gpt3();
  const double s = 2048, b = 1, h = m.hidden, a = m.heads;
  struct Row {
    int t;
    bool sp;
    RecomputeKind rc;
    double formula;  // bytes per layer
  };
  const double sbh = s * b * h;
  for (Row r : {Row{1, false, RecomputeKind::kNone, sbh * (34 + 5 * a * s / h)},
                Row{8, false, RecomputeKind::kNone, sbh * (10 + 24.0 / 8 + 5 * a * s / (h * 8))},
                Row{8, true, RecomputeKind::kNone, sbh / 8 * (34 + 5 * a * s / h)},
                Row{8, false, RecomputeKind::kSelective, sbh * (10 + 24.0 / 8)},
                Row{8, true, RecomputeKind::kSelective, 34 * sbh / 8},
                Row{1, false, RecomputeKind::kFull, 2 * sbh},
                Row{8, true, RecomputeKind::kFull, 2 * sbh / 8}}) {
    CAPTURE(r.t);
    CAPTURE(r.sp);
    CAPTURE(static_cast<int>(r.rc));
    GraphShape shape{.micro_batch = 1,
                     .seq_len = 2048,
                     .tp = r.t,
                     .sp = r.sp,
                     .attention = AttentionKind::kStandard};
    ModelGraph g = BuildModelGraph(m, shape);
    CHECK(ActivationBytes(g.dense, r.rc) / r.formula == doctest::Approx(1.0).epsilon(0.02));
  }
}

TEST_CASE("model FLOPs reproduce 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) (SC21)") {
  ModelSpec m = Gpt3();
  for (int64_t B : {1, 8}) {
    GraphShape shape{.micro_batch = B, .seq_len = 2048};
    ModelGraph g = BuildModelGraph(m, shape);
    const double per_layer = ForwardFlops(g.dense) + BackwardFlops(g.dense);
    const double total = m.layers * per_layer + ForwardFlops(g.head) + BackwardFlops(g.head);
    const double s = 2048, l = m.layers, h = m.hidden, V = m.vocab;
    const double formula = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
    CHECK(total / formula == doctest::Approx(1.0).epsilon(1e-9));
  }
}

TEST_CASE("recompute selective-op: torchtitan keeps odd matmuls and attention, reruns the rest") {
  // Llama 2 70B, one layer of 4096 tokens. torchtitan issues 7 matmuls per layer: wq, wk, wv
  // (qkv_proj), wo (out_proj), w1, w3 (fc1, SwiGLU) and w2 (fc2); its policy keeps the 1st, 3rd,
  // 5th and 7th and the attention output, and reruns the rest.
  auto cat = LoadModelCatalog();
  const ModelSpec m = *cat->Find("llama2-70b");
  const ModelGraph g = BuildModelGraph(m, GraphShape{.micro_batch = 1, .seq_len = 4096});
  const double T = 4096, a = 2, h = 8192, kv = 1024, f = 28672;
  std::map<std::string, double> share;
  for (size_t i = 0; i < g.dense.size(); ++i) {
    const Op& op = g.dense.op(i);
    share[op.name] = RecomputeShare(op, RecomputeKind::kSelectiveOp);
  }
  CHECK(share.at("qkv_proj") == doctest::Approx(kv / (h + 2 * kv)));  // wk of wq, wk, wv
  CHECK(share.at("out_proj") == 1);
  CHECK(share.at("fc1") == doctest::Approx(0.5));  // w3 of w1, w3
  CHECK(share.at("fc2") == 0);
  CHECK(share.at("attention") == 0);
  CHECK(share.at("attn_norm") == 1);
  CHECK(share.at("swiglu") == 1);
  // Kept: the layer input; wq's, wv's, w1's and w2's outputs; the attention output and its
  // log-sum-exp (fp32, per head and token).
  const double kept = T * a * h + T * a * (h + kv + f + h) + T * a * h + 64 * T * 4;
  CHECK(ActivationBytes(g.dense, RecomputeKind::kSelectiveOp) == doctest::Approx(kept));
  CHECK(kept < 0.5 * ActivationBytes(g.dense, RecomputeKind::kNone));  // 0.46
  CHECK(kept > ActivationBytes(g.dense, RecomputeKind::kFull));
}

TEST_CASE("recompute deepseek: norms, MLA up-projections and SwiGLU rebuilt; SwiGLU input in FP8") {
  // DeepSeek-V3 secs. 3.2.3 and 3.3.2, on one MoE layer of 4096 tokens with EP64.
  auto cat = LoadModelCatalog();
  const ModelSpec m = *cat->Find("deepseek-v3");
  const GraphShape shape{.micro_batch = 1, .seq_len = 4096, .ep = 64, .fp8 = Fp8Recipe::kBlockwise};
  const ModelGraph g = BuildModelGraph(m, shape);
  std::vector<std::string> rerun;
  for (size_t i = 0; i < g.moe.size(); ++i) {
    if (Recomputes(g.moe.op(i), RecomputeKind::kDeepseek)) rerun.push_back(g.moe.op(i).name);
  }
  CHECK(rerun == std::vector<std::string>{"attn_norm", "q_norm", "q_up_proj", "kv_norm",
                                          "kv_up_proj", "rope", "moe_norm", "expert_swiglu",
                                          "shared_expert_swiglu"});
  // What the rebuilt ops produce is not kept: the normed inputs of q_down (7168), q_up (1536),
  // kv_up (512) and the shared expert (7168), cached as FP8 by their GEMMs, and the router's
  // (7168, bf16); Q and K (128 x 192) and V (128 x 128); the SwiGLU outputs (8 x 2048 per
  // routed token and 2048 per token in the shared expert, FP8 for the fc2s). The SwiGLU inputs
  // (8 x 2 x 2048 and 2 x 2048) are kept as FP8.
  const double T = 4096, e = Fp8ElementBytes(Fp8Recipe::kBlockwise);
  // Token copies this rank's 4 experts take: the busiest rank's (a GEMM's rows are rounded up
  // per expert, the copies it holds are not).
  const double routed = T * 8 * m.moe.BusiestRankLoad(T, 64);
  const double dropped = T * e * (7168 + 1536 + 512 + 7168) + T * 2 * 7168 +
                         T * 2 * 128 * (192 + 192 + 128) + (routed + T) * 2048 * e;
  const double swiglu_in = (routed + T) * 2 * 2048 * 2;
  CHECK(ActivationBytes(g.moe, RecomputeKind::kDeepseek) ==
        doctest::Approx(ActivationBytes(g.moe, RecomputeKind::kNone) - dropped -
                        swiglu_in * (1 - e / 2)));
  // Without FP8 the SwiGLU input stays 16-bit.
  const ModelGraph g16 =
      BuildModelGraph(m, GraphShape{.micro_batch = 1, .seq_len = 4096, .ep = 64});
  double kept16 = 0, none16 = ActivationBytes(g16.moe, RecomputeKind::kNone);
  for (size_t i = 0; i < g16.moe.size(); ++i) {
    for (const SavedTensor& t : g16.moe.op(i).saved) kept16 += t.bytes * t.deepseek;
  }
  CHECK(ActivationBytes(g16.moe, RecomputeKind::kDeepseek) == doctest::Approx(kept16));
  CHECK(kept16 < 0.6 * none16);  // 1.01 of 1.87 GB
}

}  // namespace
}  // namespace parasim
