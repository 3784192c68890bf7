// The rules read off one op: recompute by mode, FP8 bytes by recipe, the collectives' names.
#include "models/op_graph.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

TEST_CASE("collectives and groups have their names") {
  CHECK(CommName(CommKind::kNone) == "none");
  CHECK(CommName(CommKind::kAllReduce) == "all-reduce");
  CHECK(CommName(CommKind::kReduceScatter) == "reduce-scatter");
  CHECK(CommName(CommKind::kAllGather) == "all-gather");
  CHECK(CommName(CommKind::kAllToAll) == "all-to-all");
  CHECK(GroupName(GroupKind::kTp) == "tp");
  CHECK(GroupName(GroupKind::kEtp) == "etp");
}

TEST_CASE("an FP8 element is one byte and its recipe's share of a scale") {
  CHECK(Fp8ElementBytes(Fp8Recipe::kTensorwise) == 1.0);
  CHECK(Fp8ElementBytes(Fp8Recipe::kBlockwise) == 1.0 + 4.0 / 128);  // fp32 per 128 values
  CHECK(Fp8ElementBytes(Fp8Recipe::kMxfp8) == 1.0 + 1.0 / 32);       // E8M0 per 32 values
}

TEST_CASE("which ops each recompute mode reruns, and how much of each") {
  Op gemm;  // a fused matmul of which selective-op reruns a third
  gemm.kind = OpKind::kGemm;
  gemm.op_rerun = 1.0 / 3;
  Op core;  // the attention core: selective drops it, selective-op keeps its output
  core.kind = OpKind::kAttention;
  core.in_attention_core = true;
  core.op_rerun = 0;
  Op norm;  // deepseek rebuilds norms from their inputs
  norm.deepseek_recompute = true;
  for (const Op* op : {&gemm, &core, &norm}) {
    CHECK_FALSE(Recomputes(*op, RecomputeKind::kNone));
    CHECK(Recomputes(*op, RecomputeKind::kFull));
    CHECK(RecomputeShare(*op, RecomputeKind::kFull) == 1.0);
    CHECK(RecomputeShare(*op, RecomputeKind::kNone) == 0.0);
  }
  CHECK(Recomputes(core, RecomputeKind::kSelective));
  CHECK_FALSE(Recomputes(gemm, RecomputeKind::kSelective));
  CHECK(Recomputes(norm, RecomputeKind::kDeepseek));
  CHECK_FALSE(Recomputes(core, RecomputeKind::kDeepseek));
  CHECK(RecomputeShare(gemm, RecomputeKind::kSelectiveOp) == doctest::Approx(1.0 / 3));
  CHECK(RecomputeShare(core, RecomputeKind::kSelectiveOp) == 0.0);
  CHECK(RecomputeShare(norm, RecomputeKind::kSelectiveOp) == 1.0);  // an op it has no say on
}

}  // namespace
}  // namespace parasim
