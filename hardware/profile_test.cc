#include "hardware/profile.h"

#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

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
  host_op_time: 40us
  contended_compute: 1.25
  elementwise_rates: {norm_forward: 4e11, loss_pass: 2.5e11}
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
  CHECK(changed->size() == 8);
  CHECK(c.gpu.gemm_efficiency == 0.7);
  // Rates replace the catalog's whole: those the profile leaves out are unmeasured (0).
  CHECK(c.gpu.elementwise_rates.norm_forward == 4e11);
  CHECK(c.gpu.elementwise_rates.loss_pass == 2.5e11);
  CHECK(c.gpu.elementwise_rates.activation_forward == 0);
  CHECK(c.gpu.host_op_time == Duration::Microseconds(40));
  CHECK(c.gpu.contended_compute == 1.25);
  CHECK(c.gpu.contended_memory == kDefaultContendedMemory);
  CHECK(c.intra.efficiency == 0.5);
  CHECK(c.inter.efficiency == H100().inter.efficiency);  // not in the profile: unchanged
  // What it measured, for sweep --robust: all but attention and the scale-out fabric.
  CHECK(c.measured.gemm);
  CHECK(c.measured.memory);
  CHECK(c.measured.host);
  CHECK(c.measured.intra);
  CHECK_FALSE(c.measured.attention);
  CHECK_FALSE(c.measured.inter);
  CHECK_FALSE(H100().measured.gemm);
  CostModel cm(c, Dtype::kBf16);
  // Large GEMMs are compute-bound: time scales with 1 / efficiency.
  CHECK(cm.GemmTime(8192, 8192, 8192).seconds() ==
        doctest::Approx(before * H100().gpu.gemm_efficiency / 0.7).epsilon(0.01));
  CHECK(cm.CollectiveTime(Collective::kAllReduce, Bytes::GB(1), {8, 8}).time.seconds() >
        1.5 * ar_before);
}

TEST_CASE("a replaced value set by the scenario's GPU or fabric mapping is called the scenario's") {
  // An extended GPU's gemm_efficiency and fabric latency came from the scenario, its other
  // values from the catalog; an inline fabric's all from the scenario.
  auto p = ParseCalibrationProfile(kProfile, "p.yaml");
  REQUIRE(p.ok());
  ClusterSpec c = H100();
  c.gpu.gemm_efficiency = 0.5;
  c.gpu.scenario_keys = {"gemm_efficiency"};
  c.intra.inline_spec = true;
  auto changed = ApplyCalibrationProfile(*p, &c);
  REQUIRE(changed.ok());
  auto line = [&](const std::string& start) {
    for (const std::string& l : *changed) {
      if (l.rfind(start, 0) == 0) return l;
    }
    return std::string("none");
  };
  CHECK(line("gemm_efficiency ") == "gemm_efficiency 0.7 (scenario 0.5)");
  CHECK(line("memory_efficiency ").find("(catalog ") != std::string::npos);
  CHECK(line("nvlink4-h100 efficiency ") == "nvlink4-h100 efficiency 0.5 (scenario 0.822)");
  CHECK(line("elementwise_rates").find("(catalog: measured rates)") != std::string::npos);
}
TEST_CASE("profiles round-trip through their text form") {
  auto p = ParseCalibrationProfile(kProfile, "p.yaml");
  REQUIRE(p.ok());
  auto q = ParseCalibrationProfile(FormatCalibrationProfile(*p), "q.yaml");
  REQUIRE(q.ok());
  CHECK(*q->gemm_efficiency == *p->gemm_efficiency);
  CHECK(*q->memory_efficiency == *p->memory_efficiency);
  CHECK(*q->launch_overhead == *p->launch_overhead);
  CHECK(*q->host_op_time == Duration::Microseconds(40));
  CHECK(*q->contended_compute == 1.25);
  CHECK_FALSE(q->contended_memory.has_value());
  REQUIRE(q->elementwise_rates.has_value());
  CHECK(*q->elementwise_rates == *p->elementwise_rates);
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

TEST_CASE("a profile of FlashAttention 2 alone marks the attention measured") {
  auto p = ParseCalibrationProfile(
      "gpu: h100-sxm5-80gb\nsource: synthetic\ncompute:\n  attention_flash2: {forward: 0.2, "
      "backward: "
      "0.15}\n",
      "fa2.yaml");
  REQUIRE_MESSAGE(p.ok(), p.status().message());
  ClusterSpec c = H100();
  CHECK_FALSE(c.measured.attention);
  REQUIRE(ApplyCalibrationProfile(*p, &c).ok());
  CHECK(c.measured.attention);
  CHECK(c.gpu.attention_flash2.backward == doctest::Approx(0.15));
}

const char* kFullProfile = R"(gpu: h100-sxm5-80gb
source: "synthetic test profile with every section"
compute:
  gemm_efficiency: 0.7
  gemm_efficiency_fp8: 0.55
  attention_standard: {forward: 0.3, backward: 0.25}
  attention_flash: {forward: 0.62, backward: 0.48}
  attention_flash2: {forward: 0.33, backward: 0.22}
gemm_shapes:
  - {dtype: bf16, m: 8192, n: 4608, k: 12288, efficiency: 0.41}
  - {dtype: fp8, m: 8192, n: 4608, k: 12288, efficiency: 0.33}
fabrics:
  nvlink4-h100:
    efficiency: 0.8
    latency: 3us
    collectives:
      - {op: all_gather, algo: ring, ranks: 8, per_node: 8, efficiency: 0.55, latency: 9us}
  ib-ndr-400g: {efficiency: 0.9}
)";

TEST_CASE("every profile section round-trips, applies, and prices only its own case") {
  auto p = ParseCalibrationProfile(kFullProfile, "full.yaml");
  REQUIRE_MESSAGE(p.ok(), p.status().message());
  auto q = ParseCalibrationProfile(FormatCalibrationProfile(*p), "q.yaml");
  REQUIRE_MESSAGE(q.ok(), q.status().message());
  CHECK(FormatCalibrationProfile(*q) == FormatCalibrationProfile(*p));
  CHECK(*q->gemm_efficiency_fp8 == 0.55);
  CHECK(q->attention_flash->backward == 0.48);
  CHECK(q->attention_flash2->backward == 0.22);  // written and read back
  REQUIRE(q->gemm_shapes.size() == 2);
  CHECK(q->gemm_shapes[1].dtype == Dtype::kFp8);
  REQUIRE(q->fabrics.size() == 2);
  REQUIRE(q->fabrics[0].collectives.size() == 1);
  CHECK(q->fabrics[0].collectives[0].latency.microseconds() == doctest::Approx(9));

  ClusterSpec c = H100();
  c.gpu.sustained_factor = 1.0;
  auto lines = ApplyCalibrationProfile(*p, &c);
  REQUIRE(lines.ok());
  std::string all;
  for (const auto& l : *lines) all += l + "\n";
  CAPTURE(all);
  CHECK(all.find("gemm_efficiency_fp8 0.55") != std::string::npos);
  CHECK(all.find("attention_flash forward 0.62") != std::string::npos);
  CHECK(all.find("2 measured GEMM shapes") != std::string::npos);
  CHECK(all.find("nvlink4-h100 alpha-beta for 1 collective") != std::string::npos);

  CostModel cm(c, Dtype::kBf16), c8(c, Dtype::kFp8);
  // The measured shape, exactly; its neighbour follows the curve at the profile's efficiency.
  CHECK(cm.GemmEfficiency(8192, 4608, 12288) == doctest::Approx(0.41));
  CHECK(c8.GemmEfficiency(8192, 4608, 12288) == doctest::Approx(0.33));
  CHECK(cm.GemmEfficiency(8192, 4608, 12289) ==
        doctest::Approx(0.7 * cm.ShapeCurve(8192, 4608, 12289)));
  CHECK(c8.GemmEfficiency(8192, 8192, 8192) == doctest::Approx(0.55));
  // Attention: each kind its own efficiency.
  CHECK(cm.AttentionEfficiency(false, true) == doctest::Approx(0.62));
  CHECK(cm.AttentionEfficiency(true, false) == doctest::Approx(0.25));
  CHECK(cm.AttentionEfficiency(false, AttentionKernel::kFlash2) == doctest::Approx(0.33));
  // The H100 has no FlashAttention 2 figure of its own: it stood for the fused kernels'.
  CHECK(all.find("attention_flash2 forward 0.33, backward 0.22 (as attention_flash)") !=
        std::string::npos);
  // The all-gather case on 8 GPUs of one node uses its own alpha-beta; all-reduce keeps the
  // fabric's; an all-gather over 4 GPUs is another case and keeps the fabric's too.
  const Bytes d = Bytes::MiB(256);
  auto t = [&](Collective op, int64_t n) {
    return cm.CollectiveTime(op, d, {n, n}).time.seconds();
  };
  const double bw = c.intra.bandwidth.bytes_per_second();
  CHECK(t(Collective::kAllGather, 8) ==
        doctest::Approx(7 * 9e-6 + 7.0 / 8 * d.bytes() / (bw * 0.55)).epsilon(1e-9));
  CHECK(t(Collective::kAllReduce, 8) ==
        doctest::Approx(14 * 3e-6 + 14.0 / 8 * d.bytes() / (bw * 0.8)).epsilon(1e-9));
  CHECK(t(Collective::kAllGather, 4) ==
        doctest::Approx(3 * 3e-6 + 3.0 / 4 * d.bytes() / (bw * 0.8)).epsilon(1e-9));
}

TEST_CASE("bad profile sections are refused at their line") {
  for (const auto& [text, where] : std::vector<std::pair<std::string, std::string>>{
           {"gpu: h100-sxm5-80gb\ngemm_shapes:\n  - {m: 1, n: 2, k: 3}\n", "bad.yaml:3:"},
           {"gpu: h100-sxm5-80gb\ngemm_shapes:\n  - {m: 1, n: 2, k: 3, efficiency: 2}\n",
            "bad.yaml:3:"},
           {"gpu: h100-sxm5-80gb\ncompute:\n  attention_flash: {forward: 0.5}\n", "bad.yaml:3:"},
           {"gpu: h100-sxm5-80gb\nfabrics:\n  ib-ndr-400g:\n    collectives:\n      - {op: "
            "all_reduce, algo: spiral, ranks: 8, efficiency: 0.5, latency: 1us}\n",
            "bad.yaml:5:"},
           {"gpu: h100-sxm5-80gb\nfabrics:\n  ib-ndr-400g:\n    collectives:\n      - {op: "
            "all_reduce, algo: ring, ranks: 8, per_node: 16, efficiency: 0.5, latency: 1us}\n",
            "bad.yaml:5:"},
       }) {
    auto bad = ParseCalibrationProfile(text, "bad.yaml");
    CAPTURE(text);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().message().find(where) != std::string::npos);
  }
}

TEST_CASE("strings with quotes survive the profile's text form") {
  // Found by tests/fuzz/nccl_fuzz.cc: a quote in a name broke the written file.
  CalibrationProfile p;
  p.gpu = "h100: \"sxm\"";
  p.source = "a \\ b";
  p.fabrics.push_back({"odd: id", 0.5, std::nullopt, {}});
  auto q = ParseCalibrationProfile(FormatCalibrationProfile(p), "p.yaml");
  REQUIRE_MESSAGE(q.ok(), q.status().message());
  CHECK(q->gpu == p.gpu);
  CHECK(q->source == p.source);
  CHECK(q->fabrics[0].id == "odd: id");
}

}  // namespace
}  // namespace parasim
