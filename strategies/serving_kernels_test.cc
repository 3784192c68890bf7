#include "strategies/serving_kernels.h"

#include <doctest/doctest.h>

#include <cmath>

#include "strategies/serving_testing.h"

namespace parasim {
namespace {

using testing::CatalogModel;

ClusterSpec On(const std::string& gpu) { return testing::NodeOf(gpu); }

Op Linear(int64_t m, int64_t k, int64_t n) {
  Op op;
  op.name = "fc1";
  op.kind = OpKind::kGemm;
  op.m = m;
  op.k = k;
  op.n = n;
  return op;
}

TEST_CASE("a decode GEMM reads its weights at the HBM's rate; a prefill GEMM is compute-bound") {
  const ClusterSpec c = On("h100-sxm5-80gb");
  const CostModel c16(c, Dtype::kBf16), c8(c, Dtype::kFp8);
  const ServeFormats fp8 =
      ServeFormatsOf({ServeDtype::kFp8, ServeDtype::kFp8, ServeDtype::kFp8}, c.gpu);
  const Op op = Linear(8, 8192, 28672);  // Llama 2 70B's gate and up projection, 8 tokens
  // 8192 x 28672 FP8 weights (235 MB) at 3.35 TB/s x 0.866 x 0.826 (datasheet, STREAM copy,
  // sustained factor), plus the launch: about 102 us.
  const double weights_s = 8192.0 * 28672 / (3.35e12 * 0.866 * 0.826);
  CHECK(ServeGemmTime(c16, c8, fp8, op, 8, 1).seconds() ==
        doctest::Approx(weights_s + 4e-6).epsilon(0.02));
  // The same weights in bf16 take twice as long to read.
  const ServeFormats bf16 = ServeFormatsOf({}, c.gpu);
  CHECK(ServeGemmTime(c16, c16, bf16, op, 8, 1).seconds() ==
        doctest::Approx(2 * weights_s + 4e-6).epsilon(0.02));
  // 8192 tokens: 3.85 TFLOP at the FP8 peak x the cost model's efficiency, not the weights.
  const Op big = Linear(8192, 8192, 28672);
  const double flops = 2.0 * 8192 * 8192 * 28672;
  const double rate = 1978.9e12 * c8.GemmEfficiency(8192, 28672, 8192) * c.gpu.sustained_factor;
  CHECK(ServeGemmTime(c16, c8, fp8, big, 8192, 1).seconds() ==
        doctest::Approx(flops / rate + 4e-6).epsilon(0.01));
}

TEST_CASE("a weight-only GEMM of a few rows reads its weights at the HBM's rate, as a GEMV") {
  // W4A16 on a B200: Llama 3 70B's gate and up projection for one token reads 8192 x 57344
  // weights at 0.5625 B (NVFP4 with its scales) at 8 TB/s x memory efficiency x sustained
  // factor. The tensor-core tile curve alone (one row of a 128-row tile) had made it
  // compute-bound, 30% over the read at this size.
  const ClusterSpec c = On("b200");
  const CostModel c16(c, Dtype::kBf16);  // the format's compute: the activations' 16 bits
  const ServeFormats w4a16 =
      ServeFormatsOf({ServeDtype::kFp4, ServeDtype::kBf16, ServeDtype::kBf16}, c.gpu);
  REQUIRE(w4a16.weight_only());
  const Op op = Linear(1, 8192, 57344);
  const double read_s = c16.MemoryTime(Bytes(0.5625 * 8192 * 57344)).seconds();
  const double one = ServeGemmTime(c16, c16, w4a16, op, 1, 1).seconds();
  CHECK(one == doctest::Approx(read_s + c.gpu.launch_overhead.seconds()).epsilon(0.02));
  // Never slower than the tile curve's price, and a prefill's thousands of rows keep it.
  const Op big = Linear(4096, 8192, 57344);
  const double flops = 2.0 * 4096 * 8192 * 57344;
  CHECK(ServeGemmTime(c16, c16, w4a16, big, 4096, 1).seconds() >
        flops / (c.gpu.Peak(Dtype::kBf16).flops_per_second() * c.gpu.sustained_factor));
}

TEST_CASE("FP4 runs at twice FP8's rate on block-scaled tensor cores, not elsewhere") {
  const ServingPrecision fp4{ServeDtype::kFp4, ServeDtype::kFp4, ServeDtype::kFp8};
  CHECK(ServeFormatsOf(fp4, On("b200").gpu).peak_scale == 2);
  CHECK(ServeFormatsOf(fp4, On("h100-sxm5-80gb").gpu).peak_scale == 1);
  CHECK(ServeFormatsOf(fp4, On("b200").gpu).weight_bytes == doctest::Approx(0.5625));
  // A GEMM runs at its wider operand's rate: FP4 activations beside FP8 weights at FP8's, FP8
  // activations beside 16-bit weights at 16 bits' (they had run at the activations' rate).
  const ServeFormats w8a4 =
      ServeFormatsOf({ServeDtype::kFp8, ServeDtype::kFp4, ServeDtype::kFp8}, On("b200").gpu);
  CHECK(w8a4.compute == Dtype::kFp8);
  CHECK(w8a4.peak_scale == 1);
  const ServeFormats w16a8 = ServeFormatsOf(
      {ServeDtype::kBf16, ServeDtype::kFp8, ServeDtype::kBf16}, On("h100-sxm5-80gb").gpu);
  CHECK(w16a8.compute == Dtype::kBf16);
  // Weight-only formats compute at the activations' 16 bits, as before.
  CHECK(ServeFormatsOf({ServeDtype::kFp4, ServeDtype::kBf16, ServeDtype::kBf16}, On("b200").gpu)
            .compute == Dtype::kBf16);
}

TEST_CASE("the router and the LM head stay in 16 bits") {
  Op router = Linear(1, 4096, 8);
  router.name = "router";
  Op head = Linear(1, 4096, 128256);
  head.name = "lm_head";
  CHECK_FALSE(QuantisedGemm(router));
  CHECK_FALSE(QuantisedGemm(head));
  CHECK(QuantisedGemm(Linear(1, 1, 1)));
}

TEST_CASE("experts a batch reaches") {
  // One token reaches top_k of the experts; many reach them all.
  CHECK(TouchedExperts(8, 8, 2, 1) == doctest::Approx(2));
  CHECK(TouchedExperts(8, 8, 2, 1000) == doctest::Approx(8));
  // Half the experts on this rank: half of those reached.
  CHECK(TouchedExperts(4, 8, 2, 1) == doctest::Approx(1));
  CHECK(TouchedExperts(8, 8, 2, 0) == 0);
}

TEST_CASE("the busiest rank's experts: the most any of the EP ranks reads") {
  // One rank: the mean. Mixtral on EP8 at one token: one expert on each of two ranks, so the
  // busiest reads a whole expert where the mean is a quarter (the binomial's max: 1 - 0.75^8).
  CHECK(BusiestTouchedExperts(8, 8, 2, 1, 1) == doctest::Approx(TouchedExperts(8, 8, 2, 1)));
  CHECK(BusiestTouchedExperts(1, 8, 2, 1, 8) == doctest::Approx(1 - std::pow(0.75, 8)));
  // DeepSeek-V3 on EP8 (32 experts a rank, top 8 of 256): about 2.6x the mean at one token
  // (a Monte Carlo of the routing: 2.57x), 1.5x at 8, within 10% of it from 64.
  const double one = BusiestTouchedExperts(32, 256, 8, 1, 8) / TouchedExperts(32, 256, 8, 1);
  CHECK(one == doctest::Approx(2.6).epsilon(0.08));
  CHECK(BusiestTouchedExperts(32, 256, 8, 8, 8) / TouchedExperts(32, 256, 8, 8) ==
        doctest::Approx(1.48).epsilon(0.08));
  CHECK(BusiestTouchedExperts(32, 256, 8, 64, 8) / TouchedExperts(32, 256, 8, 64) < 1.1);
  // Thousands of experts a rank: the binomial's first term, (1 - q)^2048, had underflowed and
  // the busiest rank read every expert where it reads about half.
  const double half = BusiestTouchedExperts(2048, 16384, 8, 1419, 8);  // each reached by half
  CHECK(half > TouchedExperts(2048, 16384, 8, 1419));
  CHECK(half < 1100);
  // Never more than the rank holds; none without tokens.
  CHECK(BusiestTouchedExperts(32, 256, 8, 1e6, 8) == doctest::Approx(32));
  CHECK(BusiestTouchedExperts(32, 256, 8, 0, 8) == 0);
}

TEST_CASE("KV bytes a token holds per layer on one GPU") {
  const ModelSpec& llama = CatalogModel("llama3-70b");
  // K and V of 8 KV heads of 128 in bf16: 4 KiB; TP8 one head each; TP16 keeps one head a rank.
  CHECK(KvBytesPerTokenLayer(llama, 1, 2) == 4096);
  CHECK(KvBytesPerTokenLayer(llama, 8, 2) == 512);
  CHECK(KvBytesPerTokenLayer(llama, 16, 2) == 512);
  CHECK(KvBytesPerTokenLayer(llama, 8, 1) == 256);
  // DeepSeek-V3's MLA: the 512-wide latent and the 64-wide RoPE key, on every rank.
  const ModelSpec& ds = CatalogModel("deepseek-v3");
  CHECK(KvBytesPerTokenLayer(ds, 8, 2) == (512 + 64) * 2);
}

}  // namespace
}  // namespace parasim
