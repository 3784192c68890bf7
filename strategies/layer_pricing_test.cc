// Layer pricing tests: every op of a block priced in each phase with its collectives; a
// separate gradient-accumulation pass lengthens the weight gradients of the ops with weights
// only; FP8's casts lengthen its GEMMs; QLoRA dequantises the layers' weights; node-limited
// routing shares an all-to-all's bytes.
#include "strategies/layer_pricing.h"

#include <doctest/doctest.h>

#include <cmath>

#include "models/layer_graph.h"
#include "strategies/memory.h"
#include "strategies/step_test_bench.h"

namespace parasim {
namespace {

using testing::Bench;

// The dense layer (or the LM head) of `b`'s model priced for its layout.
BlockTime PriceDense(const Bench& b, bool head = false) {
  StepOptions options;
  LoweredStep out;
  LoweringContext ctx(b.model, b.t, b.l, b.cluster, options, &out);
  const auto graph = SharedModelGraph(b.model, RankShape(b.t, b.l));
  const Block& block = head ? graph->head : graph->dense;
  BlockTime bt;
  LayerPricer(ctx).Price(block, &bt);
  REQUIRE(bt.ops.size() == block.size());
  return bt;
}

TEST_CASE("a dense layer: every op priced forward and backward, TP collectives on some") {
  Bench b(8);
  b.l.tp = 2;
  b.l.dp = 4;
  b.l.sp = true;
  const BlockTime bt = PriceDense(b);
  int with_comm = 0;
  for (const OpTime& op : bt.ops) {
    CHECK(op.fwd > Duration::Zero());
    CHECK(op.bwd > Duration::Zero());
    CHECK(op.wgrad <= op.bwd);
    if (op.fwd_comm > Duration::Zero() || op.bwd_comm > Duration::Zero()) {
      ++with_comm;
      CHECK((op.fwd_group == GroupKind::kTp || op.bwd_group == GroupKind::kTp));
    }
  }
  CHECK(with_comm >= 2);  // SP's all-gathers and reduce-scatters around attention and MLP
  // Without TP there is nothing to communicate inside the layer.
  b.l.tp = 1;
  b.l.dp = 8;
  b.l.sp = false;
  for (const OpTime& op : PriceDense(b).ops) {
    CHECK(op.fwd_comm == Duration::Zero());
    CHECK(op.bwd_comm == Duration::Zero());
  }
}

TEST_CASE("a separate accumulation pass lengthens the weight gradients of ops with weights") {
  Bench b(8);
  b.l.dp = 8;
  b.t.grad_accumulation = GradAccumulation::kFused;
  const BlockTime fused = PriceDense(b);
  b.t.grad_accumulation = GradAccumulation::kSeparate;
  const BlockTime separate = PriceDense(b);
  int longer = 0;
  for (size_t i = 0; i < fused.ops.size(); ++i) {
    CHECK(separate.ops[i].fwd == fused.ops[i].fwd);
    // The pass is part of every backward with weights (a norm's too), and of a GEMM's W.
    const Duration in_w = separate.ops[i].wgrad - fused.ops[i].wgrad;
    const Duration in_b = separate.ops[i].bwd - fused.ops[i].bwd;
    CHECK(in_b >= in_w);
    CHECK((in_w == Duration::Zero() || in_w == in_b));
    longer += in_w > Duration::Zero() ? 1 : 0;
  }
  CHECK(longer >= 4);  // QKV, the attention's output, the MLP's Linears
}

TEST_CASE("FP8 training: Linears faster in FP8, with their casts") {
  Bench b(8);
  b.Hardware("h100-sxm5-80gb", "nvlink4-h100", "ib-ndr-400g");
  b.l.dp = 8;
  const BlockTime bf16 = PriceDense(b);
  b.t.precision = Dtype::kFp8;
  const BlockTime fp8 = PriceDense(b);
  Duration gemm16, gemm8;
  for (size_t i = 0; i < bf16.ops.size(); ++i) {
    gemm16 += bf16.ops[i].wgrad;
    gemm8 += fp8.ops[i].wgrad;
  }
  CHECK(gemm8 < gemm16);
}

TEST_CASE("QLoRA dequantises the layers' 4-bit Linears before each use, not the 16-bit LM head") {
  Bench b(8);
  b.l.dp = 8;
  auto price = [&b](FinetuneKind f, bool head) {
    b.t.finetune = f;
    Duration fwd;
    for (const OpTime& op : PriceDense(b, head).ops) fwd += op.fwd;
    return fwd;
  };
  CHECK(price(FinetuneKind::kQlora, false) > price(FinetuneKind::kLora, false));
  CHECK(price(FinetuneKind::kQlora, true) == price(FinetuneKind::kLora, true));
}

TEST_CASE("node-limited routing: a token crosses the network once per node, to at most M nodes") {
  MoeSpec e;
  e.experts = 256;
  e.top_k = 8;
  GroupPlacement g{64, 8};               // EP64 over 8 nodes
  CHECK(NodeLimitedShare(e, g) == 1.0);  // no limit: every routed copy on its own
  e.node_limit = 4;                      // DeepSeek-V3: 4 of the 8 nodes, one copy each
  CHECK(NodeLimitedShare(e, g) == doctest::Approx(0.5));
  // Unlimited but sent once per node: the expected distinct nodes of 8 picks among 8.
  e.node_limit = 8;
  CHECK(NodeLimitedShare(e, g) == doctest::Approx(8 * (1 - std::pow(7.0 / 8, 8)) / 8));
  e.node_limit = 4;
  CHECK(NodeLimitedShare(e, GroupPlacement{8, 8}) == 1.0);  // one node: nothing crosses
}

TEST_CASE(
    "Transformer Engine's attention kernels: FlashAttention 2 on Blackwell when deterministic "
    "training drops out") {
  Bench b(8, "gpt3-13b");  // a GELU model: it drops out where the scenario does not say
  b.Hardware("gb200", "nvlink5", "ib-ndr-400g");
  b.l.dp = 8;
  const GpuSpec& g = b.cluster.gpu;
  auto kernel = [&b, &g] { return TrainingAttentionKernel(b.t, b.model, g); };
  CHECK(kernel() == AttentionKernel::kFused);  // not deterministic: cuDNN's
  b.t.deterministic = true;
  CHECK(kernel() == AttentionKernel::kFlash2);  // GELU's dropout, deterministic, compute 10.0
  b.t.attention_dropout = 0;
  CHECK(kernel() == AttentionKernel::kFused);  // no dropout: cuDNN's deterministic backward
  b.t.attention_dropout = 0.1;
  CHECK(kernel() == AttentionKernel::kFlash2);
  b.t.transformer_engine = false;
  CHECK(kernel() == AttentionKernel::kFused);  // not Transformer Engine's choice to make
  b.t.transformer_engine = true;
  b.t.attention = AttentionKind::kStandard;
  CHECK(kernel() == AttentionKernel::kStandard);
  b.t.attention = AttentionKind::kFlash;
  // Hopper runs cuDNN's deterministic backward with dropout (fused_attn.cpp: sm_arch_ < 100).
  CHECK(TrainingAttentionKernel(b.t, b.model, *b.hw.FindGpu("h100-sxm5-80gb")) ==
        AttentionKernel::kFused);
  // A SwiGLU model drops out only where the scenario says so.
  const ModelSpec llama = *b.models.Find("llama2-7b");
  b.t.attention_dropout = -1;
  CHECK(TrainingAttentionKernel(b.t, llama, g) == AttentionKernel::kFused);
  b.t.attention_dropout = 0.1;
  CHECK(TrainingAttentionKernel(b.t, llama, g) == AttentionKernel::kFlash2);

  // Priced: the attention core's passes at FlashAttention 2's rates (about 3x the fused ones'
  // FLOP time on a GB200, beside the deterministic NaN fill both pay), every other op as before.
  b.t.attention_dropout = -1;
  const BlockTime fa2 = PriceDense(b);
  b.t.attention_dropout = 0;
  const BlockTime fused = PriceDense(b);
  const Block& block = SharedModelGraph(b.model, RankShape(b.t, b.l))->dense;
  int cores = 0;
  for (size_t i = 0; i < block.size(); ++i) {
    CAPTURE(block.op(i).name);
    if (block.op(i).kind == OpKind::kAttention) {
      ++cores;
      CHECK(fa2.ops[i].fwd > fused.ops[i].fwd * 1.5);
      CHECK(fa2.ops[i].bwd > fused.ops[i].bwd * 1.5);
    } else {
      CHECK(fa2.ops[i].fwd == fused.ops[i].fwd);
      CHECK(fa2.ops[i].bwd == fused.ops[i].bwd);
    }
  }
  CHECK(cores == 1);
}

}  // namespace
}  // namespace parasim
