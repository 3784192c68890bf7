// The step planners one at a time, on a small A100 cluster: the context, the rank topology,
// the layer planner's chunks and buckets, and the data-parallel planner's policy.
#include "strategies/lowering.h"

#include <doctest/doctest.h>

#include <tuple>

#include "models/layer_graph.h"
#include "strategies/dp_lowering.h"
#include "strategies/layer_lowering.h"
#include "strategies/memory.h"
#include "strategies/step_kernels.h"
#include "strategies/step_test_bench.h"
#include "strategies/topology.h"

namespace parasim {
namespace {

using testing::Bench;

struct Planners {
  StepOptions options;  // first: the context keeps a reference
  LoweredStep out;
  LoweringContext ctx;
  RankTopology topo;
  LayerLowering layers;
  DataParallelLowering dp;
  Planners(Bench& b, StepOptions o)
      : options(o),
        ctx(b.model, b.t, b.l, b.cluster, options, &out),
        topo(ctx),
        layers(ctx, topo),
        dp(ctx, topo, layers) {
    layers.BuildTimes();
    ctx.InternCategoryLabels();
    layers.BuildChunks();
    topo.Build();
  }
};

TEST_CASE("context: micro-batches, chunks, group shapes and one cost key per duration") {
  Bench b(16);
  b.l.tp = 2;
  b.l.pp = 2;
  b.l.dp = 4;
  b.l.schedule = kScheduleInterleaved;
  b.l.virtual_stages = 2;
  b.t.global_batch = 32;
  LoweredStep out;
  StepOptions o;
  LoweringContext ctx(b.model, b.t, b.l, b.cluster, o, &out);
  CHECK(ctx.micro_batches == 8);
  CHECK(ctx.chunks == 2);
  CHECK(ctx.groups[static_cast<int>(GroupKind::kTp)].size == 2);
  CHECK(ctx.groups[static_cast<int>(GroupKind::kDp)].size == 4);
  CHECK(ctx.dp_comm);
  CHECK(ctx.Key(Duration::Seconds(1)) == ctx.Key(Duration::Seconds(1)));
  CHECK(ctx.Key(Duration::Seconds(1)) != ctx.Key(Duration::Seconds(2)));
}

TEST_CASE("topology: one replica per stage by default, every TP x DP rank with --full") {
  Bench b(8);
  b.l.tp = 2;
  b.l.pp = 2;
  b.l.dp = 2;
  b.t.global_batch = 8;
  {
    Planners pl(b, {});
    CHECK(pl.out.replicas == 1);
    CHECK(pl.out.stage_rank.size() == 2);
    CHECK(pl.topo.group(static_cast<int>(GroupKind::kTp), 0).size() == 1);
  }
  StepOptions full;
  full.full = true;
  Planners pl(b, full);
  CHECK(pl.out.replicas == 4);
  CHECK(pl.topo.stage(1).size() == 4);
  // TP innermost: replicas 0 and 1 form a TP group, 0 and 2 a DP group.
  CHECK(pl.topo.group(static_cast<int>(GroupKind::kTp), 0) == std::vector<int>{0, 1});
  CHECK(pl.topo.group(static_cast<int>(GroupKind::kDp), 0) == std::vector<int>{0, 2});
}

TEST_CASE("layers: chunks hold every layer once, embedding first and head last") {
  Bench b(4);
  b.l.pp = 2;
  b.l.dp = 2;
  b.l.schedule = kScheduleInterleaved;
  b.l.virtual_stages = 2;
  b.t.global_batch = 8;
  Planners pl(b, {});
  int layers = 0;
  for (int s = 0; s < 2; ++s) {
    for (const Chunk& ch : pl.layers.chunks(s)) {
      for (const Piece& p : ch.pieces) layers += p.layer ? 1 : 0;
      // Buckets cover the chunk's pieces in order, without gaps.
      int next = 0;
      for (auto [a, e] : ch.segments) {
        CHECK(a == next);
        next = e;
      }
      CHECK(next == static_cast<int>(ch.pieces.size()));
    }
  }
  CHECK(layers == b.model.layers);
  CHECK_FALSE(pl.layers.chunk(0, 0).pieces.front().layer);  // embedding
  CHECK_FALSE(pl.layers.chunk(1, 1).pieces.back().layer);   // head
}

TEST_CASE("multi-token prediction: after the head, its module, one more layer and the head again") {
  // DeepSeek-V3 sec. 2.2 with D = 1: M [norm(h); norm(emb)] (d x 2d), a transformer layer and
  // the shared output head.
  Bench b(2);
  b.l.pp = 2;
  b.t.global_batch = 4;
  const SequenceFlops base = FlopsPerSequence(b.model, b.t);
  const MemoryReport base_mem = EstimateMemory(b.model, b.t, b.l, b.cluster);
  b.model.mtp_depth = 1;
  Planners pl(b, {});
  const Chunk& last = pl.layers.chunk(1, 0);
  const size_t n = last.pieces.size();
  REQUIRE(n >= 4);
  CHECK(last.pieces[n - 2].layer);
  CHECK_FALSE(last.pieces[n - 1].layer);
  CHECK(last.pieces[n - 1].dense == 0);  // the head's weights are shared
  const double h = static_cast<double>(b.model.hidden);
  // Projection and norms, and (untied, on a stage apart from stage 0) its own input embedding,
  // as Megatron-Core builds it for the MTP stage.
  REQUIRE_FALSE(b.model.tied_embeddings);
  const double table = static_cast<double>(b.model.vocab) * h / b.l.tp;
  CHECK(last.pieces[n - 3].dense == doctest::Approx(2 * h * h + 2 * h + table));
  // Its FLOPs: the projection (2 T 2h h forward, twice that backward), a layer and the head.
  const auto g = SharedModelGraph(b.model, RankShape(b.t, b.l));
  const double T = static_cast<double>(b.t.seq_len);
  const SequenceFlops f = FlopsPerSequence(b.model, b.t);
  CHECK(f.model - base.model ==
        doctest::Approx(3 * 2 * T * 2 * h * h + ForwardFlops(g->dense) + BackwardFlops(g->dense) +
                        ForwardFlops(g->head) + BackwardFlops(g->head)));
  // The memory planner puts its parameters and activations on the head's stage.
  const MemoryReport mem = EstimateMemory(b.model, b.t, b.l, b.cluster);
  CHECK(mem.stages[0].params == doctest::Approx(base_mem.stages[0].params));
  CHECK(mem.stages[1].params == doctest::Approx(base_mem.stages[1].params + 2 * h * h + 2 * h +
                                                table + BlockParams(g->dense)));
  CHECK(mem.stages[1].activations_bytes > base_mem.stages[1].activations_bytes);
}

TEST_CASE("data parallel: ZeRO 3 gathers per layer and reduces every micro-batch") {
  Bench b(8);
  b.l.dp = 8;
  b.t.global_batch = 32;
  b.l.zero = 3;
  Planners z3(b, {});
  CHECK(z3.dp.GathersPerLayer());
  CHECK_FALSE(z3.dp.GathersAtStart());
  CHECK(z3.dp.Reduces(0));
  // FSDP wraps each layer: one bucket per piece.
  const Chunk& ch = z3.layers.chunk(0, 0);
  CHECK(ch.segments.size() == ch.pieces.size());
  b.l.zero = 1;
  Planners z1(b, {});
  CHECK(z1.dp.GathersAtStart());
  CHECK_FALSE(z1.dp.Reduces(0));  // after accumulation: the last micro-batch only
  CHECK(z1.dp.Reduces(z1.ctx.micro_batches - 1));
}

TEST_CASE("data parallel: grad_reduce moves the reductions to every micro-batch or the last") {
  Bench b(8);
  b.l.dp = 8;
  b.t.global_batch = 32;
  for (int zero : {0, 1, 2, 3}) {
    CAPTURE(zero);
    b.l.zero = zero;
    for (auto gr :
         {Layout::GradReduce::kAuto, Layout::GradReduce::kMicroBatch, Layout::GradReduce::kStep}) {
      b.l.grad_reduce = gr;
      Planners p(b, {});
      const int64_t m = p.ctx.chunk_micro_batches;
      REQUIRE(m == 4);
      const bool every =
          gr == Layout::GradReduce::kMicroBatch || (gr == Layout::GradReduce::kAuto && zero >= 2);
      for (int64_t mb = 0; mb < m; ++mb) CHECK(p.dp.Reduces(mb) == (every || mb == m - 1));
      // ZeRO 3 still gathers every layer's parameters before each unit.
      CHECK(p.dp.GathersPerLayer() == (zero == 3));
    }
  }
}

TEST_CASE("fp8_param_gather: the all-gathers carry the FP8 GEMMs' weights a byte each") {
  Bench b(8);
  b.Hardware("h100-sxm5-80gb", "nvlink4-h100", "ib-ndr-400g");
  b.OneGpuANode();  // the gathers cross the network: their bytes set their time
  b.l.dp = 8;
  b.l.zero = 1;
  b.t.global_batch = 8;
  b.t.precision = Dtype::kFp8;
  auto times = [&](bool gather) {
    Planners pl(b, {});
    const Chunk& ch = pl.layers.chunk(0, 0);
    const int n = static_cast<int>(ch.pieces.size());
    // The layers alone (the embedding and the LM head stay 16-bit), and what they hold.
    double all = 0, fp8 = 0;
    for (int i = 1; i < n - 1; ++i) {
      all += ch.pieces[i].dense;
      fp8 += ch.pieces[i].fp8_dense;
    }
    return std::tuple{pl.dp.IssuedTime(ch, 1, n - 1, gather), all, fp8};
  };
  const auto [g16, all, none] = times(true);
  const Duration r16 = std::get<0>(times(false));
  CHECK(none == 0);
  b.t.fp8_param_gather = true;
  const auto [g8, all8, fp8] = times(true);
  // Every Linear of Llama 2 7B's 32 layers (4 h^2 + 3 h ffn), not its norms.
  CHECK(fp8 == doctest::Approx(32 * (4.0 * 4096 * 4096 + 3.0 * 4096 * 11008)).epsilon(1e-9));
  CHECK(all8 == all);
  // Bytes (2 all - fp8) against 2 all: a bandwidth-bound ring's time within its latency.
  CHECK(g8.seconds() / g16.seconds() == doctest::Approx(1 - fp8 / (2 * all)).epsilon(0.01));
  CHECK(std::get<0>(times(false)) == r16);  // the reductions carry the gradients as before
  // MXFP8 weights go as bf16 (Megatron-Core quantizes them after the gather).
  b.t.fp8_recipe = Fp8Recipe::kMxfp8;
  CHECK(std::get<0>(times(true)) == g16);
}

TEST_CASE(
    "FP8 recipes: the layers' Linears run FP8 GEMMs with their casts; the rest stays 16-bit") {
  Bench b(8);
  b.Hardware("h100-sxm5-80gb", "nvlink4-h100", "ib-ndr-400g");
  b.l.dp = 8;
  b.t.global_batch = 8;
  auto phases = [&](Phase ph) {
    Planners pl(b, {});
    return pl.layers.PhaseCompute(pl.layers.chunk(0, 0), ph);
  };
  const Duration f16 = phases(Phase::kF), b16 = phases(Phase::kB);
  b.t.precision = Dtype::kFp8;
  const auto graph = SharedModelGraph(b.model, RankShape(b.t, b.l));
  const CostModel fp8(b.cluster, Dtype::kFp8), bf16(b.cluster, Dtype::kBf16);
  int fp8_ops = 0;
  for (size_t i = 0; i < graph->dense.size(); ++i) {
    const Op& op = graph->dense.op(i);
    CHECK(op.fp8 == (op.kind == OpKind::kGemm));
    fp8_ops += op.fp8;
  }
  CHECK(fp8_ops == 4);                 // qkv, out, fc1 (gate and up), fc2
  CHECK_FALSE(graph->head.op(1).fp8);  // lm_head
  for (Fp8Recipe r : {Fp8Recipe::kTensorwise, Fp8Recipe::kBlockwise, Fp8Recipe::kMxfp8}) {
    CAPTURE(Fp8RecipeName(r));
    b.t.fp8_recipe = r;
    // Every layer's Linears move from the bf16 GEMM to the FP8 GEMM plus the recipe's casts
    // (read 2 bytes, write the FP8 bytes per element); embedding, attention, the memory-bound
    // ops and the LM head cost what they cost in bf16.
    Duration want_f = f16, want_b = b16;
    const double e = Fp8ElementBytes(r);
    auto cast = [&](double bytes) { return fp8.MemoryTime(Bytes(bytes)) + fp8.Launch(); };
    for (size_t i = 0; i < graph->dense.size(); ++i) {
      const Op& op = graph->dense.op(i);
      if (!op.fp8) continue;
      const double x = static_cast<double>(op.m) * op.k, g = static_cast<double>(op.m) * op.n;
      // Tensorwise: cast and transpose; MXFP8: rowwise and columnwise copies with their scales;
      // blockwise: 1x128 forward, both tilings of the gradient, the input re-cast per 128x1.
      Duration df = r == Fp8Recipe::kTensorwise ? cast(4 * x)
                    : r == Fp8Recipe::kMxfp8    ? cast((2 + 2 * e) * x)
                                                : cast((2 + e) * x);
      Duration db = r == Fp8Recipe::kTensorwise ? cast(4 * g)
                    : r == Fp8Recipe::kMxfp8    ? cast((2 + 2 * e) * g)
                                                : cast((2 + 2 * e) * g) + cast(2 * e * x);
      for (const GemmCall& c : TrainingGemms(op, false)) {
        Duration fp = fp8.GemmTime(c.m, c.n, c.k, c.batch);
        // Blockwise weight gradients at 0.70 of the forward's rate (DeepSeek-V3's trace).
        if (c.pass == 'W' && r == Fp8Recipe::kBlockwise) fp = fp * (1 / 0.70);
        const Duration d = fp - bf16.GemmTime(c.m, c.n, c.k, c.batch);
        (c.pass == 'F' ? df : db) += d;
      }
      want_f += df * static_cast<double>(b.model.layers);
      want_b += db * static_cast<double>(b.model.layers);
    }
    CHECK(phases(Phase::kF).seconds() == doctest::Approx(want_f.seconds()).epsilon(1e-9));
    CHECK(phases(Phase::kB).seconds() == doctest::Approx(want_b.seconds()).epsilon(1e-9));
    CHECK(phases(Phase::kF) < f16 * 0.8);  // a 7B layer's GEMMs dominate: FP8 pays off
  }
}

TEST_CASE("FP8 memory: Linear inputs cached as E4M3 (and scales); bf16 moments; fp32 gradients") {
  Bench b(8);
  b.l.dp = 8;
  const auto g16 = SharedModelGraph(b.model, RankShape(b.t, b.l));
  double gemm_saved = 0;
  for (size_t i = 0; i < g16->dense.size(); ++i) {
    if (g16->dense.op(i).kind != OpKind::kGemm) continue;
    for (const SavedTensor& t : g16->dense.op(i).saved) gemm_saved += t.bytes;
  }
  REQUIRE(gemm_saved > 0);
  const double a16 = ActivationBytes(g16->dense, RecomputeKind::kNone);
  b.t.precision = Dtype::kFp8;
  for (Fp8Recipe r : {Fp8Recipe::kTensorwise, Fp8Recipe::kBlockwise, Fp8Recipe::kMxfp8}) {
    b.t.fp8_recipe = r;
    const auto g8 = SharedModelGraph(b.model, RankShape(b.t, b.l));
    const double a8 = ActivationBytes(g8->dense, RecomputeKind::kNone);
    CHECK(a8 == doctest::Approx(a16 - gemm_saved * (1 - Fp8ElementBytes(r) / 2)));
    // Full recompute keeps only the layer's input, which is no Linear's: 16-bit either way.
    CHECK(ActivationBytes(g8->dense, RecomputeKind::kFull) ==
          doctest::Approx(ActivationBytes(g16->dense, RecomputeKind::kFull)));
  }
  CHECK(Fp8ElementBytes(Fp8Recipe::kBlockwise) == doctest::Approx(1 + 4.0 / 128));
  CHECK(Fp8ElementBytes(Fp8Recipe::kMxfp8) == doctest::Approx(1 + 1.0 / 32));  // E8M0 per 32
  // DeepSeek-V3's states: bf16 weights, fp32 gradients and master weights, bf16 moments.
  b.t.grad_dtype = Dtype::kFp32;
  b.t.moments = Dtype::kBf16;
  const StateBytes s = StateBytesPerParam(b.t);
  CHECK(s.weights == 2);
  CHECK(s.grads == 4);
  CHECK(s.optimizer == 8);  // master 4 + m 2 + v 2
  b.t.moments = Dtype::kFp32;
  CHECK(StateBytesPerParam(b.t).optimizer == 12);
}

}  // namespace
}  // namespace parasim
