// Cost-model tests against measured figures (KNOWLEDGE.md), within 10% with default efficiencies.
#include "hardware/cost_model.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "hardware/fit.h"
#include "hardware/measurements.h"

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

namespace parasim {
namespace {

TEST_CASE(
    "a bandwidth-bound all-gather or reduce-scatter keeps its bus bandwidth from 8 to 4096 "
    "GPUs") {
  // One rank per node (the data-parallel group of a TP8 layout), 4 GB gathered: per GPU,
  // (n-1)/n of it crosses the NIC whatever n is, so the bus bandwidth (nccl-tests: algbw x
  // (n-1)/n) stays flat; a flat ring's alpha x (n-1) would not.
  for (Collective c : {Collective::kAllGather, Collective::kReduceScatter}) {
    CAPTURE(CollectiveName(c));
    double first = 0;
    for (int64_t n = 8; n <= 4096; n *= 2) {
      CAPTURE(n);
      CostModel cm(Cluster("h100-sxm5-80gb", "nvlink4-h100", "ib-ndr-400g", static_cast<int>(n)),
                   Dtype::kBf16);
      const double bw = BusBw(cm, c, 4e9, {.size = n, .per_node = 1});
      if (first == 0) first = bw;
      CHECK(bw == doctest::Approx(first).epsilon(0.05));
      // NCCL 2.23+'s PAT (log2 n network steps) wins over the ring beyond a few nodes.
      if (n >= 64) CHECK(cm.CollectiveTime(c, Bytes(4e9), {n, 1, false}).algo == Algo::kPat);
    }
  }
}

TEST_CASE("a ring across nodes pays the network latency only where it leaves a node") {
  // 32 ranks on 4 nodes: 31 ring steps, 3 of them between nodes (NCCL's tuning model).
  ClusterSpec c = Cluster("a100-sxm4-80gb", "nvlink3-a100", "ib-hdr-200g", 4);
  CostModel cm(c, Dtype::kBf16);
  const CollectiveCost r = cm.CollectiveTime(Collective::kAllGather, Bytes(1e6), {32, 8, false});
  REQUIRE(r.algo == Algo::kRing);
  CHECK(r.latency == c.inter.latency * 3.0 + c.intra.latency * 28.0);
}

}  // namespace
}  // namespace parasim

namespace parasim {
namespace {

// The spread (population standard deviation) of log(shape curve / measured efficiency) over the
// bf16 GEMM shapes measured on an H100 whose dimensions are multiples of 64 and that do at least
// 20 GFLOP, each shape once at its mean time; the mean is left out (it is the efficiency at
// 8192^3 and the clocks of the day).
double ShapeSpread(const CostModel& cm, const std::vector<GemmPoint>& gemms, int* count) {
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::pair<double, int>> shapes;
  for (const GemmPoint& g : gemms) {
    const double flops = 2.0 * g.m * g.n * g.k;
    if (g.dtype != Dtype::kBf16 || flops < 2e10 || g.m % 64 || g.n % 64 || g.k % 64) continue;
    auto& [sum, n] = shapes[{g.m, g.n, g.k}];
    sum += g.time.seconds();
    ++n;
  }
  std::vector<double> logs;
  for (const auto& [shape, times] : shapes) {
    const auto [m, n, k] = shape;
    const double seconds = times.first / times.second;
    const double measured = 2.0 * m * n * k / seconds / 989.4e12;  // H100 SXM bf16 dense peak
    logs.push_back(std::log(cm.ShapeCurve(m, n, k) / measured));
  }
  double mean = 0, var = 0;
  for (double x : logs) mean += x / static_cast<double>(logs.size());
  for (double x : logs) var += (x - mean) * (x - mean) / static_cast<double>(logs.size());
  *count = static_cast<int>(logs.size());
  return std::sqrt(var);
}

// The GEMM files of the H100 calibration of 2026-11-22/23 (hardware/profiles/), with or without
// the FP8-only DeepSeek-V3 file.
std::vector<Measurements> H100GemmRuns(bool with_fp8_file) {
  const std::string dir = "hardware/profiles/h100-sxm5-80gb-2026-11-22-measurements/";
  std::vector<std::string> files = {"gemm-weak-scaling-shapes.yaml", "deepseek-v3-gemm-bf16.yaml",
                                    "gpt-2.7b-b4-flash.yaml",        "gpt3-1.3b-b2-standard.yaml",
                                    "gpt3-1.3b-b4-flash.yaml",       "gpt3-1.3b-b8-flash.yaml",
                                    "gpt3-350m-b4-standard.yaml",    "gpt3-350m-b8-flash.yaml"};
  if (with_fp8_file) files.push_back("deepseek-v3-gemm-fp8.yaml");
  std::vector<Measurements> runs;
  for (const std::string& f : files) {
    auto m = LoadMeasurements(dir + f);
    REQUIRE_MESSAGE(m.ok(), m.status().message());
    runs.push_back(*m);
  }
  return runs;
}

TEST_CASE("the GEMM shape curve follows the GEMMs measured on an H100") {
  std::vector<GemmPoint> gemms;
  for (const Measurements& m : H100GemmRuns(false)) {
    gemms.insert(gemms.end(), m.gemm.begin(), m.gemm.end());
  }
  CostModel cm(Cluster("h100-sxm5-80gb", "nvlink4-h100", "ib-ndr-400g", 1), Dtype::kBf16);
  int count = 0;
  const double spread = ShapeSpread(cm, gemms, &count);
  CHECK(count == 123);
  // 0.113 with one 128x128 tile; 0.089 with the 128x64 and 64x128 tiles as well.
  CHECK(spread < 0.095);
  // Korthikanti's 175B fc1 at one 2K-token sequence and TP8 fills 7.1 of 8 waves of 128x128
  // tiles on an A100's 108 SMs (0.87 of the curve's 8192^3), 14.2 of 15 of 128x64 ones.
  CostModel a100(Cluster("a100-sxm4-80gb", "nvlink3-a100", "ib-hdr-200g", 1), Dtype::kBf16);
  CHECK(a100.ShapeCurve(2048, 6144, 12288) > 0.92);
}

TEST_CASE("the default sustained factor is the H100's measured burst-to-sustained GEMM rate") {
  // hardware/spec.h: an 8192^3 bf16 GEMM alone in a short burst (the contention rows' `alone`)
  // against the same GEMM at the end of 30 s back to back (the sustained row's `last`).
  auto m =
      LoadMeasurements("hardware/profiles/h100-sxm5-80gb-2026-11-22-measurements/contention.yaml");
  REQUIRE_MESSAGE(m.ok(), m.status().message());
  REQUIRE(m->sustained.size() == 1);
  const SustainedPoint& s = m->sustained[0];
  REQUIRE((s.m == 8192 && s.n == 8192 && s.k == 8192));
  double burst = 0;
  for (const auto& c : m->contention) {
    if (c.victim == "gemm" && c.m == 8192 && c.n == 8192 && c.k == 8192) burst = c.alone.seconds();
  }
  REQUIRE(burst > 0);
  CHECK(burst / s.last.seconds() == doctest::Approx(kDefaultSustainedFactor).epsilon(0.001));
  // The A100s carry their own, fitted on the training subset (tests/validation_test.cc).
  CHECK(Cluster("a100-sxm4-80gb", "nvlink3-a100", "ib-hdr-200g", 1).gpu.sustained_factor ==
        doctest::Approx(0.856));
  CHECK(Cluster("h100-sxm5-80gb", "nvlink4-h100", "ib-ndr-400g", 1).gpu.sustained_factor ==
        kDefaultSustainedFactor);
}

TEST_CASE(
    "an element-wise kernel takes the longer of its traffic and its elements at the SMs' rate") {
  ClusterSpec c = Cluster("h100-sxm5-80gb", "nvlink4-h100", "ib-ndr-400g", 1);
  const CostModel cm(c, Dtype::kBf16);
  const double sustained = c.gpu.sustained_factor;
  // GeLU forward over 16,384 x 8,192 bf16 elements: 0.54 GB moved.
  const double n = 16384.0 * 8192, bytes = 4 * n;
  const Duration traffic = cm.MemoryTime(Bytes(bytes));
  CHECK(cm.ElementwiseTime(Bytes(bytes), n, 0) == traffic);  // no rate: the traffic alone
  CHECK(cm.ElementwiseTime(Bytes(bytes), n, 1e15) == traffic);
  const double rate = c.gpu.elementwise_rates.activation_forward;
  REQUIRE(rate > 0);
  CHECK(cm.ElementwiseTime(Bytes(bytes), n, rate).seconds() ==
        doctest::Approx(std::max(traffic.seconds(), n / (rate * sustained))));
  // The same kernel on an H200 (1.43x the HBM, the same SMs): at the H100's SM rate already,
  // it gains nothing (the recordings: 4.71 ms on the H100, 4.60 on the H200), where a copy
  // gains 1.48x.
  ClusterSpec h200 = Cluster("h200-sxm-141gb", "nvlink4-h100", "ib-ndr-400g", 1);
  const CostModel cm200(h200, Dtype::kBf16);
  const double gain =
      cm.ElementwiseTime(Bytes(bytes), n, rate).seconds() /
      cm200.ElementwiseTime(Bytes(bytes), n, h200.gpu.elementwise_rates.activation_forward)
          .seconds();
  CHECK(gain >= 1.0);
  CHECK(gain < 1.05);
  CHECK(traffic.seconds() / cm200.MemoryTime(Bytes(bytes)).seconds() > 1.45);
  // The other NVIDIA GPUs of the same SM design (Hopper's smaller parts, Blackwell) take the
  // H100's rates per SM, unmeasured; the A100s and AMD's price by their traffic alone.
  const ElementwiseRates b200 = Cluster("b200", "nvlink5", "ib-ndr-400g", 1).gpu.elementwise_rates;
  CHECK(b200.norm_forward ==
        doctest::Approx(c.gpu.elementwise_rates.norm_forward * 148 / 132).epsilon(0.005));
  CHECK_FALSE(
      Cluster("a100-sxm4-80gb", "nvlink3-a100", "ib-hdr-200g", 1).gpu.elementwise_rates.any());
  CHECK_FALSE(Cluster("mi300x", "xgmi-mi300x", "roce-400g", 1).gpu.elementwise_rates.any());
}

TEST_CASE("FP8 GEMMs take the FP8/16-bit efficiency ratio fitted to the same H100 runs") {
  // hardware/spec.h, kFp8GemmEfficiencyRatio: both efficiencies fitted to the nine GEMM files of
  // one calibration, so that the clocks they ran at cancel.
  const std::vector<Measurements> runs = H100GemmRuns(true);
  const ClusterSpec h100 = Cluster("h100-sxm5-80gb", "nvlink4-h100", "ib-ndr-400g", 1);
  auto fit = FitMeasurements(runs, h100);
  REQUIRE_MESSAGE(fit.ok(), fit.status().message());
  REQUIRE(fit->profile.gemm_efficiency);
  REQUIRE(fit->profile.gemm_efficiency_fp8);
  CHECK(*fit->profile.gemm_efficiency_fp8 / *fit->profile.gemm_efficiency ==
        doctest::Approx(kFp8GemmEfficiencyRatio).epsilon(0.002));
  // The catalog states no FP8 efficiency, so a large FP8 GEMM runs at the 16-bit efficiency
  // times the ratio of the doubled peak: 1.71x the bf16 GEMM, not 2x.
  CHECK(h100.gpu.gemm_efficiency_fp8 == 0);
  CostModel bf16(h100, Dtype::kBf16), fp8(h100, Dtype::kFp8);
  CHECK(fp8.GemmEfficiency(8192, 8192, 8192) ==
        doctest::Approx(h100.gpu.gemm_efficiency * kFp8GemmEfficiencyRatio));
  const double speedup = (bf16.GemmTime(8192, 8192, 8192) - bf16.Launch()).seconds() /
                         (fp8.GemmTime(8192, 8192, 8192) - fp8.Launch()).seconds();
  CHECK(speedup == doctest::Approx(2 * kFp8GemmEfficiencyRatio).epsilon(0.001));
  // A profile's own FP8 efficiency replaces it.
  ClusterSpec stated = h100;
  stated.gpu.gemm_efficiency_fp8 = 0.5;
  CHECK(CostModel(stated, Dtype::kFp8).GemmEfficiency(8192, 8192, 8192) == doctest::Approx(0.5));
}

// One DGX H100 node of the catalog.
ClusterSpec H100Node() { return Cluster("h100-sxm5-80gb", "nvlink4-h100", "ib-ndr-400g", 1); }

TEST_CASE("measured row counts of one n x k: exact where measured, interpolated between them") {
  ClusterSpec c = H100Node();
  const CostModel curve(c, Dtype::kBf16);
  // A serving calibration's ladder for one weight matrix (8192 x 2560): a decode step's one and
  // 64 rows (memory-bound: efficiency in proportion to the rows), a prompt chunk's 4096.
  c.gpu.gemm_shapes = {{Dtype::kBf16, 1, 2560, 8192, 0.004},
                       {Dtype::kBf16, 64, 2560, 8192, 0.256},
                       {Dtype::kBf16, 4096, 2560, 8192, 0.70}};
  const CostModel cm(c, Dtype::kBf16);
  CHECK(cm.GemmEfficiency(64, 2560, 8192) == doctest::Approx(0.256));
  // Between 1 and 64 rows the measured proportion holds: 8 rows at 8 x 0.004.
  CHECK(cm.GemmEfficiency(8, 2560, 8192) == doctest::Approx(0.032));
  // Between 64 and 4096 rows, halfway in log m (512): the geometric mean.
  CHECK(cm.GemmEfficiency(512, 2560, 8192) == doctest::Approx(std::sqrt(0.256 * 0.70)));
  // Beyond the ladder, and for another matrix, the shape curve as without measurements.
  CHECK(cm.GemmEfficiency(8192, 2560, 8192) == curve.GemmEfficiency(8192, 2560, 8192));
  CHECK(cm.GemmEfficiency(8, 2560, 4096) == curve.GemmEfficiency(8, 2560, 4096));
  // The other precision class keeps the curve too.
  CHECK(CostModel(c, Dtype::kFp8).GemmEfficiency(8, 2560, 8192) ==
        CostModel(H100Node(), Dtype::kFp8).GemmEfficiency(8, 2560, 8192));
}

TEST_CASE("FP8 rows that are not a multiple of 16 cost what the padded GEMM measured") {
  ClusterSpec c = H100Node();
  const CostModel curve8(c, Dtype::kFp8);
  c.gpu.gemm_shapes = {{Dtype::kFp8, 16, 2560, 8192, 0.032},
                       {Dtype::kFp8, 64, 2560, 8192, 0.2},
                       {Dtype::kBf16, 16, 2560, 8192, 0.016}};
  const CostModel fp8(c, Dtype::kFp8), bf16(c, Dtype::kBf16);
  // 3 rows run the 16-row kernel: its time, so 3/16 of its efficiency.
  CHECK(fp8.GemmEfficiency(3, 2560, 8192) == doctest::Approx(0.032 * 3 / 16));
  // 40 rows pad to 48, between the measured 16 and 64.
  CHECK(fp8.GemmEfficiency(40, 2560, 8192) ==
        doctest::Approx(fp8.GemmEfficiency(48, 2560, 8192) * 40 / 48));
  CHECK(fp8.GemmEfficiency(48, 2560, 8192) > 0.032);
  CHECK(fp8.GemmEfficiency(48, 2560, 8192) < 0.2);
  // (not 40 rows interpolated between 16 and 64 themselves)
  CHECK(fp8.GemmEfficiency(40, 2560, 8192) !=
        doctest::Approx(0.032 * std::pow(0.2 / 0.032, std::log(40.0 / 16) / std::log(4.0))));
  // 16-bit GEMMs take any row count: below the measured 16 rows, the curve.
  CHECK(bf16.GemmEfficiency(3, 2560, 8192) ==
        CostModel(H100Node(), Dtype::kBf16).GemmEfficiency(3, 2560, 8192));
  // Asked for the curve alone (a GEMM unlike those measured), the measurements are not used.
  CHECK(fp8.GemmEfficiency(16, 2560, 8192, /*measured=*/false) ==
        curve8.GemmEfficiency(16, 2560, 8192));
}

TEST_CASE("FlashAttention 2's kernels at their own rates where the GPU has them, else the fused") {
  ClusterSpec c = Cluster("b200", "nvlink5", "ib-ndr-400g", 1);
  const CostModel cm(c, Dtype::kBf16);
  // The catalog's B200: FlashAttention 2 at 16.1% and 12.3% of the 16-bit peak, well below the
  // fused kernels (cuDNN's, derived from the GEMM efficiency).
  CHECK(cm.AttentionEfficiency(false, AttentionKernel::kFlash2) == doctest::Approx(0.161));
  CHECK(cm.AttentionEfficiency(true, AttentionKernel::kFlash2) == doctest::Approx(0.123));
  CHECK(cm.AttentionEfficiency(false, AttentionKernel::kFused) > 0.4);
  CHECK(cm.AttentionEfficiency(false, true) ==
        cm.AttentionEfficiency(false, AttentionKernel::kFused));
  CHECK(cm.AttentionEfficiency(true, false) ==
        cm.AttentionEfficiency(true, AttentionKernel::kStandard));
  // 1 PFLOP of causal attention: the time follows the efficiency.
  const Flops f(1e15);
  const Bytes b(1e9);
  const double fused = cm.AttentionTime(f, b, false, AttentionKernel::kFused).seconds();
  const double fa2 = cm.AttentionTime(f, b, false, AttentionKernel::kFlash2).seconds();
  CHECK(fa2 / fused ==
        doctest::Approx(cm.AttentionEfficiency(false, AttentionKernel::kFused) / 0.161)
            .epsilon(0.01));
  // A GPU without a FlashAttention 2 figure prices those kernels as its fused ones.
  c.gpu.attention_flash2 = {};
  const CostModel none(c, Dtype::kBf16);
  CHECK(none.AttentionEfficiency(true, AttentionKernel::kFlash2) ==
        none.AttentionEfficiency(true, AttentionKernel::kFused));
}

}  // namespace
}  // namespace parasim
