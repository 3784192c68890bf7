#include "hardware/spec.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

TEST_CASE("every GPU and fabric id of SCENARIO.md is in the catalog") {
  auto cat = LoadHardwareCatalog();
  REQUIRE(cat.ok());
  for (auto id :
       {"a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm5-80gb", "h100-pcie-80gb", "h800-sxm5-80gb",
        "h200-sxm-141gb", "b200", "gb200", "b300", "h20", "mi300x", "mi325x", "mi355x"}) {
    CAPTURE(id);
    CHECK(cat->FindGpu(id) != nullptr);
  }
  for (auto id : {"nvlink3-a100", "nvlink4-h100", "nvlink-h800", "pcie4-x16", "pcie5-x16",
                  "ib-hdr-200g", "ib-ndr-400g", "roce-200g", "roce-400g", "eth-100g", "opa-100g",
                  "nvlink5", "xgmi-mi300x", "ib-xdr-800g", "roce-800g"}) {
    CAPTURE(id);
    CHECK(cat->FindFabric(id) != nullptr);
  }
}

TEST_CASE("datasheet values survive parsing (table-driven)") {
  auto cat = LoadHardwareCatalog();
  REQUIRE(cat.ok());
  struct Row {
    const char* id;
    double bf16_tflops;
    double hbm_gbps;
    double mem_gib;
  };
  for (Row r :
       {Row{"a100-sxm4-80gb", 312, 2039, 80}, Row{"a100-sxm4-40gb", 312, 1555, 40},
        Row{"h100-sxm5-80gb", 989.4, 3350, 81559.0 / 1024}, Row{"b200", 2250, 8000, 179},
        Row{"gb200", 2500, 8000, 186}, Row{"mi300x", 1307.4, 5300, 191.7},
        Row{"mi355x", 2500, 8000, 288}, Row{"h100-pcie-80gb", 756, 2000, 81559.0 / 1024},
        Row{"h200-sxm-141gb", 989.4, 4800, 143771.0 / 1024}, Row{"gb300", 2500, 8000, 288}}) {
    CAPTURE(r.id);
    const GpuSpec* g = cat->FindGpu(r.id);
    REQUIRE(g);
    CHECK(g->Peak(Dtype::kBf16).tflops() == doctest::Approx(r.bf16_tflops));
    CHECK(g->hbm_bandwidth.gbps() == doctest::Approx(r.hbm_gbps));
    CHECK(g->memory.gib() == doctest::Approx(r.mem_gib));
  }
  CHECK(cat->FindGpu("a100-sxm4-80gb")->Peak(Dtype::kFp8).tflops() == 0);
  CHECK(cat->FindGpu("h100-sxm5-80gb")->Peak(Dtype::kFp8).tflops() == doctest::Approx(1978.9));
  // 200 Gb/s is 25 GB/s: bits and bytes never mix.
  CHECK(cat->FindFabric("ib-hdr-200g")->bandwidth.gbps() == doctest::Approx(25));
  CHECK(cat->FindFabric("ib-xdr-800g")->bandwidth.gbps() == doctest::Approx(100));
  CHECK(cat->FindFabric("nvlink5")->bandwidth.gbps() == doctest::Approx(900));
  CHECK(cat->FindFabric("nvlink5")->kind == FabricKind::kIntra);
  CHECK(cat->FindFabric("nvlink3-a100")->kind == FabricKind::kIntra);
  CHECK(cat->FindFabric("ib-ndr-400g")->kind == FabricKind::kInter);
  // Measured fused attention for Hopper; other GPUs derive it from the GEMM efficiency (0 here).
  for (auto id : {"h100-sxm5-80gb", "h800-sxm5-80gb", "h200-sxm-141gb"}) {
    CAPTURE(id);
    CHECK(cat->FindGpu(id)->attention_flash.forward == doctest::Approx(0.440));
    CHECK(cat->FindGpu(id)->attention_flash.backward == doctest::Approx(0.269));
  }
  CHECK(cat->FindGpu("a100-sxm4-80gb")->attention_flash.forward == 0);
  // FlashAttention 2's own rates where Transformer Engine falls back to them: Blackwell only.
  for (auto id : {"b200", "gb200", "b300", "gb300"}) {
    CAPTURE(id);
    CHECK(cat->FindGpu(id)->attention_flash2.forward > 0.1);
    CHECK(cat->FindGpu(id)->attention_flash2.backward < cat->FindGpu(id)->attention_flash2.forward);
  }
  CHECK(cat->FindGpu("gb200")->attention_flash2.forward == doctest::Approx(0.161));
  CHECK(cat->FindGpu("h100-sxm5-80gb")->attention_flash2.forward == 0);
  // MXFP8's block-scaled tensor cores: data-center Blackwell (compute capability 10.x) only.
  for (auto id : {"b200", "gb200", "b300", "gb300"}) {
    CAPTURE(id);
    CHECK(cat->FindGpu(id)->mxfp8);
  }
  for (auto id : {"a100-sxm4-80gb", "h100-sxm5-80gb", "h200-sxm-141gb", "mi300x"}) {
    CAPTURE(id);
    CHECK_FALSE(cat->FindGpu(id)->mxfp8);
  }
}

TEST_CASE("compute capabilities (CUDA C++ Programming Guide); none for AMD's GPUs") {
  auto cat = LoadHardwareCatalog();
  REQUIRE(cat.ok());
  struct Row {
    const char* id;
    double cc;
  };
  for (Row r : {Row{"a100-sxm4-80gb", 8.0}, Row{"h100-sxm5-80gb", 9.0}, Row{"h20", 9.0},
                Row{"b200", 10.0}, Row{"gb200", 10.0}, Row{"gb300", 10.3}, Row{"mi300x", 0}}) {
    CAPTURE(r.id);
    CHECK(cat->FindGpu(r.id)->compute_capability == r.cc);
  }
}

}  // namespace
}  // namespace parasim

namespace parasim {
namespace {

TEST_CASE("hardware facts live in the catalog: device names, SM counts and servers") {
  auto cat = LoadHardwareCatalog();
  REQUIRE(cat.ok());
  for (const GpuSpec& g : cat->gpus) {
    CAPTURE(g.id);
    CHECK(g.sms > 0);
    CHECK(!g.device_names.empty());
    CHECK(cat->FindFabric(g.server.intra) != nullptr);
    CHECK(cat->FindFabric(g.server.inter) != nullptr);
    for (const auto& name : g.device_names) CHECK(cat->FindGpuByDevice(name) == &g);
  }
  // The name an H100 SXM reported to the calibration run here, as nccl-tests prints it.
  CHECK(cat->FindGpuByDevice(" NVIDIA H100 80GB HBM3 ")->id == "h100-sxm5-80gb");
  CHECK(cat->FindGpuByDevice("NVIDIA GeForce RTX 4090") == nullptr);
  CHECK(cat->FindGpu("a100-sxm4-80gb")->sms == 108);  // A100 whitepaper
}

}  // namespace
}  // namespace parasim
