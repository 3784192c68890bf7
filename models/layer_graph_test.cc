// The layer graph's derivations against the closed forms of KNOWLEDGE.md.
#include "models/layer_graph.h"

#include <doctest/doctest.h>
#include <fmt/core.h>

#include <cmath>
#include <map>
#include <string>

namespace parasim {
namespace {

ModelSpec Gpt3() {
  auto cat = LoadModelCatalog();
  return *cat->Find("gpt3-175b");
}

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

TEST_CASE("tensor parallelism divides layer FLOPs and parameters; graph is a DAG in order") {
  ModelSpec m = Gpt3();
  ModelGraph g1 = BuildModelGraph(m, GraphShape{.tp = 1});
  ModelGraph g8 = BuildModelGraph(m, GraphShape{.tp = 8});
  CHECK(ForwardFlops(g8.dense) * 8 == doctest::Approx(ForwardFlops(g1.dense)));
  // Norm parameters are replicated over TP, so the ratio is just under 8.
  CHECK(BlockParams(g1.dense) / BlockParams(g8.dense) == doctest::Approx(8).epsilon(0.001));
  CHECK(g1.dense.op(0).name == "attn_norm");
  CHECK(g1.dense.op(g1.dense.size() - 1).name == "mlp_residual");
}

TEST_CASE(
    "TP communication per layer: 4 all-reduces of b s h, i.e. 8bsh(t-1)/t elements on the ring") {
  ModelSpec m = Gpt3();
  const int t = 8;
  ModelGraph g = BuildModelGraph(m, GraphShape{.micro_batch = 1, .seq_len = 2048, .tp = t});
  double ring_bytes = 0;
  int collectives = 0;
  for (size_t i = 0; i < g.dense.size(); ++i) {
    for (const CommSpec* c : {&g.dense.op(i).fwd_comm, &g.dense.op(i).bwd_comm}) {
      if (c->kind == CommKind::kAllReduce) {
        ring_bytes += 2.0 * (t - 1) / t * c->bytes;
        ++collectives;
      }
    }
  }
  CHECK(collectives == 4);
  const double bsh = 2048.0 * m.hidden;
  CHECK(ring_bytes / 2 == doctest::Approx(8 * bsh * (t - 1) / t));  // in 2-byte elements
}

TEST_CASE("MoE: experts sharded by EP, active compute follows top_k") {
  auto cat = LoadModelCatalog();
  ModelSpec m = *cat->Find("mixtral-8x7b");
  ModelGraph g1 = BuildModelGraph(m, GraphShape{.ep = 1});
  ModelGraph g8 = BuildModelGraph(m, GraphShape{.ep = 8});
  CHECK(BlockParams(g1.moe, true) / BlockParams(g8.moe, true) == doctest::Approx(8));
  // Expert FLOPs per token are top_k dense MLPs whatever the EP degree.
  double e1 = 0, e8 = 0;
  for (size_t i = 0; i < g1.moe.size(); ++i) {
    if (g1.moe.op(i).expert) e1 += g1.moe.op(i).fwd_flops.flops();
    if (g8.moe.op(i).expert) e8 += g8.moe.op(i).fwd_flops.flops();
  }
  const double T = 2048;
  CHECK(e1 == doctest::Approx(2 * T * 3 * 2.0 * 4096 * 14336).epsilon(0.001));
  // With EP the busiest rank's share sets the pace: its expected load from the routing draw.
  CHECK(e8 == doctest::Approx(e1 * m.moe.BusiestRankLoad(T, 8)).epsilon(0.001));
  CHECK(m.moe.BusiestRankLoad(T, 8) > 1.01);
  bool a2a = false;
  for (size_t i = 0; i < g8.moe.size(); ++i)
    a2a |= g8.moe.op(i).fwd_comm.kind == CommKind::kAllToAll;
  CHECK(a2a);
}

TEST_CASE("MoE under TP: the all-to-all dispatcher's collectives, with and without folding") {
  // Megatron-Core's MoEAlltoAllTokenDispatcher: each rank routes its sequence-parallel shard,
  // all-to-alls it over EP, and where etp > 1 all-gathers the arrivals over the expert-TP group
  // (reduce-scatter on the way back); no TP collective surrounds the routed experts.
  auto cat = LoadModelCatalog();
  ModelSpec m = *cat->Find("mixtral-8x7b");
  const GraphShape base{.micro_batch = 1, .seq_len = 4096, .tp = 2, .sp = true, .ep = 4};
  GraphShape fold = base;
  fold.etp = 1;
  const ModelGraph tp2 = BuildModelGraph(m, base), etp1 = BuildModelGraph(m, fold);
  struct Comms {
    std::map<std::string, double> bytes;  // "fwd all-to-all ep" -> bytes, summed
    double expert_flops = 0, expert_params = 0;
    int64_t router_rows = 0;
  };
  auto comms = [](const Block& b) {  // the MoE MLP's ops, after the layer's attention
    Comms c;
    bool mlp = false;
    for (size_t i = 0; i < b.size(); ++i) {
      const Op& op = b.op(i);
      mlp |= op.name == "moe_norm";
      if (!mlp) continue;
      for (auto [dir, spec] : {std::pair{"fwd", op.fwd_comm}, std::pair{"bwd", op.bwd_comm}}) {
        if (spec.kind == CommKind::kNone) continue;
        c.bytes[fmt::format("{} {} {}", dir, CommName(spec.kind), GroupName(spec.group))] +=
            spec.bytes;
      }
      if (op.expert) {
        c.expert_flops += op.fwd_flops.flops();
        c.expert_params += op.params;
      }
      if (op.name == "router") c.router_rows = op.m;
    }
    return c;
  };
  const Comms a = comms(tp2.moe), f = comms(etp1.moe);
  const double T = 4096, h = m.hidden, k = m.moe.top_k;
  // The router sees this rank's shard of the sequence, T / tp, in both.
  CHECK(a.router_rows == 2048);
  CHECK(f.router_rows == 2048);
  // Both all-to-alls of the combine are there (a TP reduce-scatter once took their place).
  const double load2 = m.moe.BusiestRankLoad(T, 4), load1 = m.moe.BusiestRankLoad(T / 2, 4);
  CHECK(a.bytes.at("fwd all-to-all ep") == doctest::Approx(2 * (T / 2) * k * h * 2 * load2));
  CHECK(a.bytes.at("bwd all-to-all ep") == doctest::Approx(2 * (T / 2) * k * h * 2 * load2));
  // ETP2 gathers the pair's copies, T x top_k tokens, and reduce-scatters them back.
  CHECK(a.bytes.at("fwd all-gather etp") == doctest::Approx(T * k * h * 2 * load2));
  CHECK(a.bytes.at("fwd reduce-scatter etp") == doctest::Approx(T * k * h * 2 * load2));
  CHECK(a.bytes.at("bwd all-gather etp") == doctest::Approx(T * k * h * 2 * load2));
  CHECK(a.bytes.at("bwd reduce-scatter etp") == doctest::Approx(T * k * h * 2 * load2));
  CHECK(a.bytes.count("fwd all-gather tp") == 0);
  CHECK(a.bytes.count("fwd reduce-scatter tp") == 0);
  // Folded (ETP1): the all-to-alls alone, each expert whole on its rank.
  CHECK(f.bytes.size() == 2);
  CHECK(f.bytes.at("fwd all-to-all ep") == doctest::Approx(2 * (T / 2) * k * h * 2 * load1));
  CHECK(f.expert_params == doctest::Approx(2 * a.expert_params));
  // The same expert FLOPs per rank: half the tokens through whole experts.
  CHECK(f.expert_flops == doctest::Approx(a.expert_flops * load1 / load2).epsilon(0.001));
  // TP without SP (every TP rank holds the same tokens), no EP: one TP region, as a dense MLP's,
  // its input's gradient and its combined output all-reduced.
  GraphShape no_sp = base;
  no_sp.sp = false;
  no_sp.ep = 1;
  const Comms r = comms(BuildModelGraph(m, no_sp).moe);
  CHECK(r.bytes.size() == 2);
  CHECK(r.bytes.at("fwd all-reduce tp") == doctest::Approx(T * h * 2));
  CHECK(r.bytes.at("bwd all-reduce tp") == doctest::Approx(T * h * 2));
  CHECK(r.router_rows == 4096);
  // Shared experts stay a dense TP MLP: their input gathered over TP, output reduce-scattered.
  ModelSpec ds = *cat->Find("deepseek-v3");
  GraphShape dsf = fold;
  dsf.ep = 8;
  const Comms s = comms(BuildModelGraph(ds, dsf).moe);
  CHECK(s.bytes.at("fwd all-gather tp") == doctest::Approx(T * ds.hidden * 2));
  CHECK(s.bytes.at("fwd reduce-scatter tp") == doctest::Approx(T * ds.hidden * 2));
  CHECK(s.bytes.count("fwd all-gather etp") == 0);
}

TEST_CASE(
    "local attention: flash computes the tiles of each layer's window, averaged over layers") {
  auto cat = LoadModelCatalog();
  // GPT-OSS: a 128-key sliding window on every other layer. At 4,096 tokens a windowed layer
  // computes 2 key tiles of 128 per query tile, 2 x 128 / 4096 of the matrix; a full layer half.
  const ModelSpec oss = *cat->Find("gpt-oss-120b");
  CHECK(FlashComputedShare(oss, 4096) == doctest::Approx((0.5 + 256.0 / 4096) / 2));
  // Llama 4 Maverick: 8,192-token chunks on three layers of four; at 8K a chunk is the whole
  // sequence, at 128K each layer's chunks hold (8192 + 128) / (2 x 131072) of it.
  const ModelSpec l4 = *cat->Find("llama4-maverick");
  CHECK(FlashComputedShare(l4, 8192) == 0.5);
  CHECK(FlashComputedShare(l4, 131072) ==
        doctest::Approx((12 * 0.5 + 36 * (8192.0 + 128) / (2 * 131072)) / 48));
  // Without a window, or where the window holds the sequence: causal, half.
  CHECK(FlashComputedShare(Gpt3(), 2048) == 0.5);
  CHECK(FlashComputedShare(oss, 128) == 0.5);
  // The layer graph's attention core carries it under flash attention; standard attention
  // materialises every score.
  GraphShape flash{.micro_batch = 1, .seq_len = 4096, .ep = 8};
  const ModelGraph g = BuildModelGraph(oss, flash);
  GraphShape standard = flash;
  standard.attention = AttentionKind::kStandard;
  const ModelGraph g_std = BuildModelGraph(oss, standard);
  for (size_t i = 0; i < g.moe.size(); ++i) {
    if (g.moe.op(i).kind != OpKind::kAttention) continue;
    CHECK(g.moe.op(i).causal_fraction == FlashComputedShare(oss, 4096));
    CHECK(g_std.moe.op(i).causal_fraction == 1.0);
  }
}

TEST_CASE("MLA (DeepSeek-V3): the layer graph's parameters and core FLOPs follow the spec") {
  auto cat = LoadModelCatalog();
  const ModelSpec m = *cat->Find("deepseek-v3");
  ModelGraph g = BuildModelGraph(m, GraphShape{.micro_batch = 1, .seq_len = 4096});
  // Dense layer: MLA 187.1M (q 7168x1536 + 1536 + 1536x128x192; kv 7168x576 + 512 +
  // 512x128x256; out 128x128x7168) + SwiGLU 3 x 7168 x 18432 + two norms.
  const double mla = 7168.0 * 1536 + 1536 + 1536.0 * 128 * 192 + 7168.0 * 576 + 512 +
                     512.0 * 128 * 256 + 128.0 * 128 * 7168;
  CHECK(mla == doctest::Approx(187107328));
  CHECK(BlockParams(g.dense) == doctest::Approx(mla + 3.0 * 7168 * 18432 + 2 * 7168));
  CHECK(CountParams(m).per_dense_layer == doctest::Approx(BlockParams(g.dense)));
  // The core: Q and K of 128 + 64 per head, V of 128: 2 T s (192 + 128) per head.
  double core = 0;
  for (size_t i = 0; i < g.dense.size(); ++i) {
    if (g.dense.op(i).kind == OpKind::kAttention) core += g.dense.op(i).fwd_flops.flops();
  }
  CHECK(core == doctest::Approx(2.0 * 4096 * 4096 * (192 + 128) * 128));
  // Split by heads over TP: the up- and output projections shrink 8x, the down ones stay.
  ModelGraph g8 = BuildModelGraph(m, GraphShape{.micro_batch = 1, .seq_len = 4096, .tp = 8});
  const double down = 7168.0 * 1536 + 1536 + 7168.0 * 576 + 512;
  CHECK(BlockParams(g8.dense) ==
        doctest::Approx(down + (mla - down) / 8 + 3.0 * 7168 * 18432 / 8 + 2 * 7168));
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

TEST_CASE("cross-entropy: Megatron-LM's passes over the vocab-parallel logits") {
  // The unfused vocab_parallel_cross_entropy on the caller's fp32 cast of the logits, as a list
  // of kernels with the bytes each reads and writes per logit.
  struct Pass {
    const char* what;
    double read, written;
  };
  auto per_logit = [](std::initializer_list<Pass> passes) {
    double sum = 0;
    for (const Pass& p : passes) sum += p.read + p.written;
    return sum;
  };
  auto cat = LoadModelCatalog();
  const ModelSpec m = *cat->Find("gpt3-175b");
  for (double a : {2.0, 4.0}) {
    CAPTURE(a);
    const bool cast = a < 4;  // .float() returns fp32 logits themselves
    const double fwd = per_logit({{"cast to fp32", cast ? a : 0.0, cast ? 4.0 : 0.0},
                                  {"max", 4, 0},
                                  {"subtract max", 4, 4},
                                  {"exp", 4, 4},
                                  {"sum", 4, 0},
                                  {"divide by sum", 4, 4}});
    const double bwd = per_logit(
        {{"scale by loss gradient", 4, 4}, {"cast back", cast ? 4.0 : 0.0, cast ? a : 0.0}});
    const GraphShape shape{.micro_batch = 2, .seq_len = 2048, .tp = 8, .act_bytes = a};
    const ModelGraph g = BuildModelGraph(m, shape);
    const double logits = 2.0 * 2048 * m.vocab / 8;  // this TP rank's share of the vocabulary
    const Op* loss = nullptr;
    for (size_t i = 0; i < g.head.size(); ++i) {
      if (g.head.op(i).name == "cross_entropy") loss = &g.head.op(i);
    }
    REQUIRE(loss != nullptr);
    CHECK(loss->fwd_bytes.bytes() == doctest::Approx(fwd * logits));
    CHECK(loss->bwd_bytes.bytes() == doctest::Approx(bwd * logits));
    // The fp32 softmax is what the backward keeps.
    REQUIRE(loss->saved.size() == 1);
    CHECK(loss->saved[0].bytes == doctest::Approx(4 * logits));
  }
}

TEST_CASE(
    "memory-bound ops say what per-element work the SMs do: norms, activations, dropout, loss") {
  // docs/MODEL.md, "Element-wise kernels on Hopper": the kernels whose pace the SMs set on an
  // H200 (and on an H100 at its HBM's limit) carry their elements and kind; the rest stream.
  auto cat = LoadModelCatalog();
  const ModelSpec m = *cat->Find("gpt3-1.3b");  // GeLU, LayerNorm, dropout
  const GraphShape shape{.micro_batch = 2, .seq_len = 2048, .tp = 1, .act_bytes = 2};
  const ModelGraph g = BuildModelGraph(m, shape);
  const double tokens = 2.0 * 2048;
  std::map<std::string, const Op*> ops;
  for (const Block* b : {&g.dense, &g.head}) {
    for (size_t i = 0; i < b->size(); ++i) ops[b->op(i).name] = &b->op(i);
  }
  REQUIRE(ops.count("attn_norm"));
  CHECK(ops["attn_norm"]->fwd_math == ElementMath::kNorm);
  CHECK(ops["attn_norm"]->bwd_math == ElementMath::kStream);
  CHECK(ops["attn_norm"]->elements == tokens * m.hidden);
  REQUIRE(ops.count("gelu"));
  CHECK(ops["gelu"]->fwd_math == ElementMath::kActivation);
  CHECK(ops["gelu"]->bwd_math == ElementMath::kActivation);
  CHECK(ops["gelu"]->elements == tokens * m.ffn());
  REQUIRE(ops.count("mlp_residual"));
  CHECK(ops["mlp_residual"]->fwd_math == ElementMath::kDropout);
  CHECK(ops["mlp_residual"]->bwd_math == ElementMath::kStream);
  // Megatron-LM's unfused loss on 16-bit logits: of 38 bytes a logit forward, the cast (6) and
  // the in-place subtraction and division (8 each) are PyTorch's unvectorized kernels; of 14
  // backward, the in-place scaling (8).
  REQUIRE(ops.count("cross_entropy"));
  const Op& loss = *ops["cross_entropy"];
  const double logits = tokens * m.vocab;
  CHECK(loss.fwd_math == ElementMath::kLossPasses);
  CHECK(loss.elements == logits);
  CHECK(loss.fwd_sm_passes == 3);
  CHECK(loss.fwd_sm_bytes == doctest::Approx(22 * logits));
  CHECK(loss.bwd_sm_passes == 1);
  CHECK(loss.bwd_sm_bytes == doctest::Approx(8 * logits));
  CHECK(loss.fwd_bytes.bytes() == doctest::Approx(38 * logits));
  // A model without dropout adds its residual as a plain stream.
  const ModelGraph llama = BuildModelGraph(*cat->Find("llama3-8b"), shape);
  for (size_t i = 0; i < llama.dense.size(); ++i) {
    const Op& op = llama.dense.op(i);
    if (op.name == "mlp_residual") CHECK(op.fwd_math == ElementMath::kStream);
    if (op.name == "swiglu") CHECK(op.fwd_math == ElementMath::kActivation);
  }
}

TEST_CASE("fused cross-entropy: one read of the logits forward, a read and a write backward") {
  // training.cross_entropy: fused, Transformer Engine's parallel_cross_entropy: the online
  // softmax reads each logit once in its own type; the backward rewrites them as the gradient.
  auto cat = LoadModelCatalog();
  const ModelSpec m = *cat->Find("llama3-70b");
  for (double a : {2.0, 4.0}) {
    CAPTURE(a);
    GraphShape shape{.micro_batch = 1, .seq_len = 8192, .tp = 4, .act_bytes = a};
    shape.fused_cross_entropy = true;
    const ModelGraph fused = BuildModelGraph(m, shape);
    shape.fused_cross_entropy = false;
    const ModelGraph unfused = BuildModelGraph(m, shape);
    const double logits = 8192.0 * m.vocab / 4;
    auto loss_of = [](const ModelGraph& g) -> const Op* {
      for (size_t i = 0; i < g.head.size(); ++i) {
        if (g.head.op(i).name == "cross_entropy") return &g.head.op(i);
      }
      return nullptr;
    };
    const Op* f = loss_of(fused);
    const Op* u = loss_of(unfused);
    REQUIRE(f != nullptr);
    REQUIRE(u != nullptr);
    CHECK(f->fwd_bytes.bytes() == doctest::Approx(a * logits));
    CHECK(f->bwd_bytes.bytes() == doctest::Approx(2 * a * logits));
    REQUIRE(f->saved.size() == 1);
    CHECK(f->saved[0].bytes == doctest::Approx(a * logits));
    // Against the unfused passes on fp32: 38 and 14 bytes a 16-bit logit, 32 and 8 an fp32 one.
    CHECK(u->fwd_bytes.bytes() / f->fwd_bytes.bytes() == doctest::Approx(a < 4 ? 19 : 8));
    CHECK(u->saved[0].bytes / f->saved[0].bytes == doctest::Approx(4 / a));
    // Nothing else in the graph changes.
    CHECK(fused.dense.size() == unfused.dense.size());
    CHECK(fused.head.size() == unfused.head.size());
  }
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
                                          "kv_up_proj", "rope", "moe_norm", "expert_swiglu"});
  // What the rebuilt ops produce is not kept: the normed inputs of q_down (7168), q_up (1536),
  // kv_up (512) and the shared expert (7168), cached as FP8 by their GEMMs, and the router's
  // (7168, bf16); Q and K (128 x 192) and V (128 x 128); the SwiGLU output (8 x 2048 per
  // routed token, FP8 for expert_fc2). The SwiGLU input (8 x 2 x 2048) is kept as FP8.
  const double T = 4096, e = Fp8ElementBytes(Fp8Recipe::kBlockwise);
  // Token copies this rank's 4 experts take: the busiest rank's, rounded up per expert.
  const double routed = 4 * std::ceil(T * 8 / 4 * m.moe.BusiestRankLoad(T, 64));
  const double dropped = T * e * (7168 + 1536 + 512 + 7168) + T * 2 * 7168 +
                         T * 2 * 128 * (192 + 192 + 128) + routed * 2048 * e;
  const double swiglu_in = routed * 2 * 2048 * 2;
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

namespace parasim {
namespace {

TEST_CASE("the model graph is built once per (model, shape) and shared") {
  const ModelSpec m = *LoadModelCatalog()->Find("gpt3-175b");
  GraphShape s;
  s.tp = 8;
  const auto a = SharedModelGraph(m, s);
  CHECK(SharedModelGraph(m, s) == a);  // the same graph object
  GraphShape wider = s;
  wider.micro_batch = 2;
  const auto b = SharedModelGraph(m, wider);
  CHECK(b != a);
  CHECK(ForwardFlops(b->dense) == doctest::Approx(2 * ForwardFlops(a->dense)));
  ModelSpec other = m;
  other.layers = 2;  // another model with the same id is another graph
  CHECK(SharedModelGraph(other, s) != a);
  CHECK(ForwardFlops(a->dense) == ForwardFlops(BuildModelGraph(m, s).dense));
}

}  // namespace
}  // namespace parasim
