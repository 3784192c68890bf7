#include "hardware/profile.h"

#include <doctest/doctest.h>

#include "hardware/cost_model.h"

namespace parasim {
namespace {

ClusterSpec H100() {
  HardwareCatalog cat = *LoadHardwareCatalog();
  ClusterSpec c;
  c.gpu = *cat.FindGpu("h100-sxm5-80gb");
  c.intra = *cat.FindFabric("nvlink4-h100");
  c.inter = *cat.FindFabric("ib-ndr-400g");
  return c;
}

const char* kProfile = R"(gpu: h100-sxm5-80gb
source: "synthetic test profile"
compute:
  gemm_efficiency: 0.7
  memory_efficiency: 0.9
  launch_overhead: 6us
fabrics:
  nvlink4-h100: {efficiency: 0.5, latency: 10us}
)";

TEST_CASE("a profile replaces the catalog defaults and says which") {
  auto p = ParseCalibrationProfile(kProfile, "p.yaml");
  REQUIRE(p.ok());
  ClusterSpec c = H100();
  const double before = CostModel(c, Dtype::kBf16).GemmTime(8192, 8192, 8192).seconds();
  const double ar_before = CostModel(c, Dtype::kBf16)
                               .CollectiveTime(Collective::kAllReduce, Bytes::GB(1), {8, 8})
                               .time.seconds();
  auto changed = ApplyCalibrationProfile(*p, &c);
  REQUIRE(changed.ok());
  CHECK(changed->size() == 5);
  CHECK(c.gpu.gemm_efficiency == 0.7);
  CHECK(c.intra.efficiency == 0.5);
  CHECK(c.inter.efficiency == H100().inter.efficiency);  // not in the profile: unchanged
  CostModel cm(c, Dtype::kBf16);
  // Large GEMMs are compute-bound: time scales with 1 / efficiency.
  CHECK(cm.GemmTime(8192, 8192, 8192).seconds() ==
        doctest::Approx(before * H100().gpu.gemm_efficiency / 0.7).epsilon(0.01));
  CHECK(cm.CollectiveTime(Collective::kAllReduce, Bytes::GB(1), {8, 8}).time.seconds() >
        1.5 * ar_before);
}

TEST_CASE("profiles round-trip through their text form") {
  auto p = ParseCalibrationProfile(kProfile, "p.yaml");
  REQUIRE(p.ok());
  auto q = ParseCalibrationProfile(FormatCalibrationProfile(*p), "q.yaml");
  REQUIRE(q.ok());
  CHECK(*q->gemm_efficiency == *p->gemm_efficiency);
  CHECK(*q->memory_efficiency == *p->memory_efficiency);
  CHECK(*q->launch_overhead == *p->launch_overhead);
  REQUIRE(q->fabrics.size() == 1);
  CHECK(*q->fabrics[0].latency == *p->fabrics[0].latency);
  CHECK(q->source == p->source);
}

TEST_CASE("bad profiles are refused with file:line:col") {
  auto bad =
      ParseCalibrationProfile("gpu: h100-sxm5-80gb\ncompute: {gemm_efficiency: 1.7}\n", "bad.yaml");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("bad.yaml:2:") != std::string::npos);
  auto other = ParseCalibrationProfile("gpu: a100-sxm4-80gb\n", "a100.yaml");
  REQUIRE(other.ok());
  ClusterSpec c = H100();
  auto applied = ApplyCalibrationProfile(*other, &c);
  REQUIRE_FALSE(applied.ok());
  CHECK(applied.status().message().find("a100.yaml:1:") != std::string::npos);
  CHECK(applied.status().message().find("h100-sxm5-80gb") != std::string::npos);
}

}  // namespace
}  // namespace parasim
