// Cost-model tests against measured figures (KNOWLEDGE.md), within 10% with default efficiencies.
#include "hardware/cost_model.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

ClusterSpec Cluster(const char* gpu, const char* intra, const char* inter, int nodes) {
  auto cat = LoadHardwareCatalog();
  ClusterSpec c;
  c.gpu = *cat->FindGpu(gpu);
  c.intra = *cat->FindFabric(intra);
  c.inter = *cat->FindFabric(inter);
  c.nodes = nodes;
  c.gpus_per_node = 8;
  return c;
}

double BusBw(const CostModel& cm, Collective c, double bytes, GroupPlacement g) {
  CollectiveCost r = cm.CollectiveTime(c, Bytes(bytes), g);
  return bytes / r.time.seconds() * BusFactor(c, g.size) / 1e9;  // GB/s, nccl-tests semantics
}

TEST_CASE("ring all-reduce moves 2(n-1)/n D per GPU") {
  CHECK(BusFactor(Collective::kAllReduce, 8) == doctest::Approx(1.75));
  CHECK(BusFactor(Collective::kAllGather, 8) == doctest::Approx(0.875));
  // Seed: 8 GPUs, 10 GB: 17.5 GB per GPU vs 70 GB for a naive all-to-one-and-back.
  CHECK(BusFactor(Collective::kAllReduce, 8) * 10 == doctest::Approx(17.5));
}

TEST_CASE("8x A100 all-reduce bus bandwidth matches 231.6 GB/s measured at 8 GB (Azure)") {
  CostModel cm(Cluster("a100-sxm4-80gb", "nvlink3-a100", "ib-hdr-200g", 1), Dtype::kBf16);
  double bw = BusBw(cm, Collective::kAllReduce, 8e9, {.size = 8, .per_node = 8});
  CHECK(bw == doctest::Approx(231.6).epsilon(0.10));
}

TEST_CASE("DGX A100 inter-node all-reduce bus bandwidth matches 192 GB/s (nccl#812)") {
  CostModel cm(Cluster("a100-sxm4-80gb", "nvlink3-a100", "ib-hdr-200g", 4), Dtype::kBf16);
  double bw = BusBw(cm, Collective::kAllReduce, 8e9, {.size = 32, .per_node = 8});
  CHECK(bw == doctest::Approx(192).epsilon(0.10));
}

TEST_CASE("8x H100 ring all-reduce about 370 GB/s (nccl-tests#212)") {
  CostModel cm(Cluster("h100-sxm5-80gb", "nvlink4-h100", "ib-ndr-400g", 1), Dtype::kBf16);
  double bw = BusBw(cm, Collective::kAllReduce, 8e9, {.size = 8, .per_node = 8});
  CHECK(bw == doctest::Approx(370).epsilon(0.10));
}

TEST_CASE("seed: 70B fp16 gradients (140 GB) over 50 GB/s take about 5.6 s to all-reduce") {
  ClusterSpec c = Cluster("a100-sxm4-80gb", "nvlink3-a100", "ib-hdr-200g", 64);
  c.gpus_per_node = 1;
  c.inter.bandwidth = Bandwidth::GBps(50);
  c.inter.efficiency = 1.0;
  CostModel cm(c, Dtype::kFp16);
  CollectiveCost r =
      cm.CollectiveTime(Collective::kAllReduce, Bytes::GB(140), {.size = 64, .per_node = 1});
  CHECK(r.time.seconds() == doctest::Approx(5.6).epsilon(0.03));
}

TEST_CASE("a TP group that straddles nodes pays the inter-node price") {
  CostModel cm(Cluster("a100-sxm4-80gb", "nvlink3-a100", "ib-hdr-200g", 2), Dtype::kBf16);
  auto in = cm.CollectiveTime(Collective::kAllReduce, Bytes::MB(100), {.size = 8, .per_node = 8});
  auto across =
      cm.CollectiveTime(Collective::kAllReduce, Bytes::MB(100), {.size = 8, .per_node = 4});
  CHECK_FALSE(in.inter_node);
  CHECK(across.inter_node);
  CHECK(across.time > in.time * 1.1);
}

TEST_CASE("small messages prefer the tree; large GEMMs reach the measured efficiency") {
  CostModel cm(Cluster("a100-sxm4-80gb", "nvlink3-a100", "ib-hdr-200g", 64), Dtype::kBf16);
  auto small =
      cm.CollectiveTime(Collective::kAllReduce, Bytes::KiB(64), {.size = 64, .per_node = 1});
  CHECK(small.algo == Algo::kTree);
  CHECK(cm.GemmEfficiency(8192, 8192, 8192) == doctest::Approx(0.813));
  // cuBLASLt 8192^3 fp16 on A100: 253.7 TFLOP/s measured, benchmarked alone.
  ClusterSpec alone = Cluster("a100-sxm4-80gb", "nvlink3-a100", "ib-hdr-200g", 1);
  alone.gpu.sustained_factor = 1.0;
  double t = CostModel(alone, Dtype::kBf16).GemmTime(8192, 8192, 8192).seconds();
  CHECK(2.0 * 8192 * 8192 * 8192 / t / 1e12 == doctest::Approx(253.7).epsilon(0.02));
  // Inside a training step the same GEMM runs at the sustained factor's share of that rate.
  CHECK(cm.GemmTime(8192, 8192, 8192).seconds() ==
        doctest::Approx(t / kDefaultSustainedFactor).epsilon(0.01));
  // Small or skinny GEMMs are slower per FLOP.
  CHECK(cm.GemmEfficiency(256, 8192, 8192) < 0.75);
  CHECK(cm.GemmEfficiency(8192, 8192, 64) < 0.5);
}

}  // namespace
}  // namespace parasim
