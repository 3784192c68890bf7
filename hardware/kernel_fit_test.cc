// The kernel families of the fit, without a GPU: GEMMs (16-bit and fp8, the shape curve and
// each measured shape), memory-bound kernels and attention cores, measured by the cost model
// with known parameters and fitted back.
#include "hardware/kernel_fit.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "hardware/cost_model.h"
#include "hardware/fit_testing.h"
#include "hardware/profile.h"

namespace parasim {
namespace {

// The kernel families, in FitMeasurements' order, on `m` alone, from the catalog's H100.
FitResult FitKernels(const Measurements& m) {
  return RunFit(m, H100Cluster(1),
                {FitLaunch, [](FitContext* f) { FitGemms(f, false); },
                 [](FitContext* f) { FitGemms(f, true); }, FitMemory,
                 [](FitContext* f) { FitAttention(f, false); },
                 [](FitContext* f) { FitAttention(f, true); }});
}

TEST_CASE("the launch overhead is the median of the measured launches") {
  std::vector<Measurements> ms(3);
  ms[0].launch = Duration::Microseconds(4);
  ms[1].launch = Duration::Microseconds(9);
  ms[2].launch = Duration::Microseconds(5);
  FitContext f(ms, H100Cluster(1));
  FitLaunch(&f);
  REQUIRE(f.result.profile.launch_overhead.has_value());
  CHECK(f.result.profile.launch_overhead->microseconds() == doctest::Approx(5));
  CHECK(f.cluster.gpu.launch_overhead == *f.result.profile.launch_overhead);
  CHECK(f.result.families.empty());  // not a family of its own
}

// The catalog's H100 with GEMMs at `efficiency` (fp8 at 0.58) and no clock drop, and an empty
// measurements file of its GPU and launch overhead.
std::pair<ClusterSpec, Measurements> GemmTruth(double efficiency) {
  ClusterSpec truth = H100Cluster(1);
  truth.gpu.sustained_factor = 1.0;
  truth.gpu.gemm_efficiency = efficiency;
  truth.gpu.gemm_efficiency_fp8 = 0.58;
  Measurements m;
  m.file = "gemm.yaml";
  m.gpu = truth.gpu.id;
  m.launch = truth.gpu.launch_overhead;
  return {truth, m};
}

TEST_CASE("fp8 and measured GEMM shapes: the profile prices exactly the shapes it measured") {
  auto [truth, m] = GemmTruth(0.75);
  CostModel bf16(truth, Dtype::kBf16), fp8(truth, Dtype::kFp8);
  for (int64_t a : {2048, 4096, 8192, 16384}) {
    for (int64_t b : {4096, 12288}) {
      m.gemm.push_back({Dtype::kBf16, a, b, 4096, bf16.GemmTime(a, b, 4096), 0});
      m.gemm.push_back({Dtype::kFp8, a, b, 4096, fp8.GemmTime(a, b, 4096), 0});
    }
  }
  // A shape that runs far below the curve (a bad kernel choice, say): only the table knows it.
  const double odd_seconds = 3 * bf16.GemmTime(6144, 1536, 12288).seconds();
  m.gemm.push_back({Dtype::kBf16, 6144, 1536, 12288, Duration::Seconds(odd_seconds), 0});
  const FitResult r = FitKernels(m);
  CHECK(*r.profile.gemm_efficiency_fp8 == doctest::Approx(0.58).epsilon(0.01));
  CHECK(*r.profile.gemm_efficiency == doctest::Approx(0.75).epsilon(0.05));  // the odd shape pulls
  CHECK(r.profile.gemm_shapes.size() == m.gemm.size());
  ClusterSpec applied = H100Cluster(1);
  auto lines = ApplyCalibrationProfile(r.profile, &applied);
  REQUIRE(lines.ok());
  applied.gpu.sustained_factor = 1.0;
  CostModel cb(applied, Dtype::kBf16), c8(applied, Dtype::kFp8);
  for (const auto& g : m.gemm) {
    const CostModel& cm = g.dtype == Dtype::kFp8 ? c8 : cb;
    CAPTURE(g.m);
    CAPTURE(g.n);
    CHECK(cm.GemmTime(g.m, g.n, g.k).seconds() == doctest::Approx(g.time.seconds()).epsilon(1e-3));
  }
  // fp16 training uses the bf16 rows (same tensor-core rate) where it has none of its own.
  CostModel c16(applied, Dtype::kFp16);
  CHECK(c16.GemmTime(6144, 1536, 12288).seconds() == doctest::Approx(odd_seconds).epsilon(1e-3));
}

TEST_CASE(
    "attention: compute-bound points fit the kind's efficiency; memory-bound ones are skipped") {
  ClusterSpec truth = H100Cluster(1);
  truth.gpu.sustained_factor = 1.0;
  truth.gpu.attention_standard = {0.45, 0.38};
  truth.gpu.attention_flash = {0.66, 0.52};
  CostModel cm(truth, Dtype::kBf16);
  Measurements m;
  m.file = "attn.yaml";
  m.launch = truth.gpu.launch_overhead;
  for (const char* kind : {"standard", "flash"}) {
    for (int64_t seq : {1024, 2048, 4096}) {
      for (int64_t d : {64, 128}) {
        AttentionPoint a;
        a.kind = kind;
        a.batch = 32;
        a.seq = seq;
        a.head_dim = d;
        const bool fused = a.kind == "flash";
        a.forward = cm.AttentionTime(a.ForwardFlops(), a.HbmBytes(false), false, fused);
        a.backward = cm.AttentionTime(a.ForwardFlops() * 2, a.HbmBytes(true), true, fused);
        m.attention.push_back(a);
      }
    }
  }
  const FitResult r = FitKernels(m);
  // Materialised attention is memory-bound at head_dim <= 128 on an H100 (8 bytes of scores per
  // 4 d FLOPs): nothing to fit, only a check; the fused kernel is compute-bound and fitted.
  CHECK_FALSE(r.profile.attention_standard.has_value());
  REQUIRE(r.profile.attention_flash.has_value());
  CHECK(r.profile.attention_flash->forward == doctest::Approx(0.66).epsilon(0.01));
  CHECK(r.profile.attention_flash->backward == doctest::Approx(0.52).epsilon(0.01));
  bool skipped = false;
  for (const auto& s : r.skipped) skipped = skipped || s.find("memory-bound") != std::string::npos;
  CHECK(skipped);
  for (const auto& f : r.families) {
    CAPTURE(f.family);
    CHECK(f.mape < 0.01);
  }
}

TEST_CASE("memory kernels fit one efficiency and are reported one by one") {
  ClusterSpec truth = H100Cluster(1);
  truth.gpu.sustained_factor = 1.0;
  truth.gpu.memory_efficiency = 0.85;
  CostModel cm(truth, Dtype::kBf16);
  Measurements m;
  m.file = "mem.yaml";
  m.launch = truth.gpu.launch_overhead;
  for (const char* kernel : {"copy", "triad", "softmax", "layernorm", "elementwise"}) {
    for (double mib : {64.0, 256.0, 1024.0}) {
      const Bytes b = Bytes::MiB(mib);
      m.memory.push_back({kernel, b, cm.MemoryTime(b) + cm.Launch(), 0.01});
    }
  }
  const FitResult r = FitKernels(m);
  CHECK(*r.profile.memory_efficiency == doctest::Approx(0.85).epsilon(0.01));
  int kernels = 0;
  for (const auto& f : r.families) {
    if (f.family.rfind("  memory ", 0) == 0) ++kernels;
  }
  CHECK(kernels == 5);
}

TEST_CASE("a decode step's skinny GEMMs are kept exactly but left out of the efficiency's fit") {
  auto [truth, m] = GemmTruth(0.75);
  CostModel bf16(truth, Dtype::kBf16);
  for (int64_t a : {2048, 4096, 8192, 16384}) {
    m.gemm.push_back({Dtype::kBf16, a, 2560, 8192, bf16.GemmTime(a, 2560, 8192), 0});
  }
  const double curve_only = *FitKernels(m).profile.gemm_efficiency;
  // Rows 1 to 64 of the same matrix stream its 42 MB of weights: timed at 70% of the HBM rate
  // (a skinny kernel's, below the copy's), they would pull the compute efficiency far down.
  const double weights = 2.0 * 2560 * 8192;
  for (int64_t rows : {1, 8, 64}) {
    const double s = (weights + 2.0 * rows * (2560 + 8192)) / (3.35e12 * 0.70);
    m.gemm.push_back(
        {Dtype::kBf16, rows, 2560, 8192, Duration::Seconds(s) + truth.gpu.launch_overhead, 0});
  }
  const FitResult r = FitKernels(m);
  CHECK(*r.profile.gemm_efficiency == doctest::Approx(curve_only));
  CHECK(r.profile.gemm_shapes.size() == m.gemm.size());
  bool noted = false;
  for (const FamilyFit& q : r.families) {
    noted =
        noted || q.fitted.find("3 of them bound by their operands' traffic") != std::string::npos;
  }
  CHECK(noted);
  // Applied, the profile prices 8 rows as measured and 16 rows between 8 and 64.
  ClusterSpec applied = H100Cluster(1);
  REQUIRE(ApplyCalibrationProfile(r.profile, &applied).ok());
  applied.gpu.sustained_factor = 1.0;
  const CostModel cm(applied, Dtype::kBf16);
  const double t8 = m.gemm[5].time.seconds(), t64 = m.gemm[6].time.seconds();
  CHECK(cm.GemmTime(8, 2560, 8192).seconds() == doctest::Approx(t8).epsilon(1e-3));
  const double t16 = cm.GemmTime(16, 2560, 8192).seconds();
  CHECK(t16 > std::min(t8, t64) * 0.999);
  CHECK(t16 < std::max(t8, t64) * 1.001);
}

}  // namespace
}  // namespace parasim
