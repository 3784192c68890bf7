#include "strategies/serving_cost.h"

#include <doctest/doctest.h>

#include "strategies/serving_testing.h"

namespace parasim {
namespace {

ServingCost Cost(const std::string& model, const std::string& gpu, const ServingPrecision& p,
                 const PoolLayout& pool, const EnginePolicy& e = {}) {
  StatusOr<ServingCost> c =
      ServingCost::Build(testing::CatalogModel(model), testing::NodeOf(gpu), p, pool, e);
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  return *std::move(c);
}

const ServingPrecision kFp8{ServeDtype::kFp8, ServeDtype::kFp8, ServeDtype::kFp8};

IterationShape Decode(int64_t batch, double context) {
  return {.decode_seqs = batch, .decode_context = batch * context, .sampled = batch};
}

TEST_CASE("a decode step of one sequence reads the weights once") {
  ServingCost c = Cost("llama2-70b", "h200-sxm-141gb", kFp8, {});
  const ServingMemory& m = c.memory();
  // Llama 2 70B in FP8 (its embedding and LM head in 16 bits): about 69 GB on one H200.
  CHECK(m.weights == doctest::Approx(69.0e9).epsilon(0.03));
  // At 4.8 TB/s x 0.896 (device copy measured) x 0.826 (sustained): 19.4 ms, and the kernels'
  // launches on top without a CUDA graph.
  const double read_s = m.weights / (4.8e12 * 0.896 * 0.826);
  const double step = c.StageTime(0, Decode(1, 512), false).seconds();
  CHECK(step > read_s);
  CHECK(step < 1.25 * read_s);
  // A CUDA graph removes the launches: a step of 1 sequence within 5% of reading the weights.
  CHECK(c.StageTime(0, Decode(1, 512), true).seconds() == doctest::Approx(read_s).epsilon(0.05));
}

TEST_CASE("seed 002: TP's collective share of a decode step grows as the batch shrinks") {
  ServingCost c = Cost("llama3-70b", "h100-sxm5-80gb", kFp8, {.tp = 8});
  double last = 1;
  for (int64_t batch : {1, 8, 64, 256, 1024}) {
    const StageCost s = c.StageBreakdown(0, Decode(batch, 2048), true);
    const double share = s.comm.seconds() / s.total.seconds();
    CAPTURE(batch);
    CHECK(share < last);
    last = share;
  }
  // One sequence: 160 all-reduces of a few KB, each 14 ring steps at NVLink's latency, are a
  // fifth of a step that reads 9 GB of weights per GPU.
  const StageCost one = c.StageBreakdown(0, Decode(1, 2048), true);
  CHECK(one.comm.seconds() / one.total.seconds() > 0.15);
}

TEST_CASE("prefill is compute-bound: its GEMMs at the FP8 rate") {
  ServingCost c = Cost("llama3-8b", "h100-sxm5-80gb", kFp8, {});
  IterationShape p{.prefill_tokens = 8192, .prefill_pairs = 4 * 2048 * 1024.5, .sampled = 4};
  const StageCost s = c.StageBreakdown(0, p, false);
  // 2 x 7.5e9 linear parameters x 8192 tokens at 1979 TFLOP/s x 0.807 x 0.854 x 0.826.
  const double gemm_s = 2 * 7.0e9 * 8192 / (1978.9e12 * 0.807 * 0.854 * 0.826);
  CHECK((s.total - s.attention).seconds() > gemm_s);
  CHECK((s.total - s.attention).seconds() < 1.35 * gemm_s);
  CHECK(s.attention > Duration::Zero());
}

TEST_CASE("pipeline stages split the layers; memory and what does not fit") {
  ServingCost one = Cost("llama3-70b", "h100-sxm5-80gb", kFp8, {.tp = 2});
  ServingCost two = Cost("llama3-70b", "h100-sxm5-80gb", kFp8, {.tp = 2, .pp = 2});
  const IterationShape it = Decode(64, 1000);
  const double whole = one.StageTime(0, it, true).seconds();
  CHECK(two.StageTime(0, it, true).seconds() == doctest::Approx(whole / 2).epsilon(0.1));
  CHECK(two.stages() == 2);
  CHECK(two.TransferTime(it) > Duration::Zero());
  CHECK(one.TransferTime(it) == Duration::Zero());
  // Half the layers a GPU: twice the KV tokens a replica holds, near enough.
  CHECK(two.memory().kv_per_token == doctest::Approx(one.memory().kv_per_token / 2));
  // 405B in bf16 does not fit an H100; in FP8 on 8 of them it does.
  CHECK_FALSE(Cost("llama3-405b", "h100-sxm5-80gb", {}, {}).memory().fits());
  CHECK(Cost("llama3-405b", "h100-sxm5-80gb", kFp8, {.tp = 8}).memory().fits());
}

TEST_CASE("experts: a few tokens read the experts they reach; data-parallel attention") {
  ServingCost tp = Cost("mixtral-8x7b", "h100-sxm5-80gb", kFp8, {});
  const double one = tp.StageTime(0, Decode(1, 500), true).seconds();
  const double many = tp.StageTime(0, Decode(256, 500), true).seconds();
  // One token reads 2 of 8 experts (and the attention): well under half of what 256 read.
  CHECK(one < 0.5 * many);
  ServingCost dp =
      Cost("mixtral-8x7b", "h100-sxm5-80gb", kFp8, {.tp = 8, .ep = 8, .dp_attention = true});
  // Eight ranks each hold the attention whole and an eighth of the experts, and together
  // eight times the KV of one rank.
  CHECK(dp.memory().kv_tokens > 7 * tp.memory().kv_tokens);
  CHECK(dp.StageBreakdown(0, Decode(256, 500), true).comm > Duration::Zero());
}

}  // namespace
}  // namespace parasim
