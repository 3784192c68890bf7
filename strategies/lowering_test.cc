// The step planners one at a time, on a small A100 cluster: the context, the rank topology,
// the layer planner's chunks and buckets, and the data-parallel planner's policy.
#include "strategies/lowering.h"

#include <doctest/doctest.h>

#include "strategies/dp_lowering.h"
#include "strategies/layer_lowering.h"
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

}  // namespace
}  // namespace parasim
