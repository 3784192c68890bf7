#include "strategies/serving_spec.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

TEST_CASE("number formats: bytes an element, with NVFP4's scales") {
  CHECK(ServeDtypeBytes(ServeDtype::kBf16) == 2);
  CHECK(ServeDtypeBytes(ServeDtype::kFp8) == 1);
  // 4-bit values and one E4M3 scale per 16: 0.5 + 1/16.
  CHECK(ServeDtypeBytes(ServeDtype::kFp4) == doctest::Approx(0.5625));
  CHECK(*ParseServeDtype("fp4") == ServeDtype::kFp4);
  CHECK_FALSE(ParseServeDtype("int4").ok());
}

TEST_CASE("lengths' means, targets' keys, layouts' names") {
  CHECK(LengthDist::Fixed(7).Mean() == 7);
  CHECK(LengthDist{LengthDist::Kind::kUniform, 100, 300, 1, 0}.Mean() == 200);
  CHECK((SloTarget{SloMetric::kTpot, 99.9, 0.1}.Key()) == "tpot_p99.9");
  ServingLayout l;
  l.unified = {.tp = 4, .pp = 2, .replicas = 3};
  CHECK(FormatServingLayout(l) == "tp4 pp2 x3");
  CHECK(l.gpus() == 24);
  l.disaggregated = true;
  l.prefill = {.tp = 2, .replicas = 2};
  l.decode = {.tp = 8, .replicas = 1};
  CHECK(FormatServingLayout(l) == "prefill tp2 x2 + decode tp8 x1");
  CHECK(l.gpus() == 12);
}

TEST_CASE("layouts the model and the cluster refuse, with the key at fault") {
  ModelSpec dense;
  dense.layers = 32;
  dense.heads = 32;
  ModelSpec moe = dense;
  moe.moe.experts = 8;
  moe.moe.top_k = 2;
  ModelSpec gqa = dense;
  gqa.heads = 48;
  gqa.kv_heads = 8;
  ClusterSpec c;
  c.nodes = 1;
  c.gpus_per_node = 8;
  struct Case {
    PoolLayout pool;
    const ModelSpec* model;
    const char* key;
  };
  const Case cases[] = {
      {{.tp = 3}, &dense, "tp"},
      {{.pp = 64}, &dense, "pp"},
      {{.tp = 2, .ep = 2}, &dense, "ep"},
      {{.tp = 2, .ep = 4}, &moe, "ep"},
      {{.tp = 1, .dp_attention = true}, &dense, "dp_attention"},
      // Found by a bug hunt (2026-11-30): 6 over 8 KV heads (a fractional KV head a GPU), and
      // an ep beside dp_attention other than tp (printed, and priced as tp).
      {{.tp = 6}, &gqa, "tp"},
      {{.tp = 8, .ep = 2, .dp_attention = true}, &moe, "ep"},
  };
  for (const Case& k : cases) {
    const auto p = CheckPoolLayout(k.pool, *k.model);
    REQUIRE(p.has_value());
    CHECK(p->key == k.key);
  }
  CHECK_FALSE(CheckPoolLayout({.tp = 8, .ep = 8}, moe));
  CHECK_FALSE(CheckPoolLayout({.tp = 16}, gqa));  // KV heads replicated over 2 ranks each
  CHECK_FALSE(CheckPoolLayout({.tp = 8, .ep = 8, .dp_attention = true}, moe));
  ServingLayout too_big;
  too_big.unified = {.tp = 4, .replicas = 3};
  const auto p = CheckServingLayout(too_big, dense, c);
  REQUIRE(p.has_value());
  CHECK(p->message.find("takes 12 GPUs (tp4 x3), more than the cluster's 8") != std::string::npos);
}

TEST_CASE("FP8 and FP4 activations need the GPU's tensor cores") {
  GpuSpec a100;
  a100.id = "a100";
  GpuSpec h100 = a100;
  h100.id = "h100";
  h100.peak[static_cast<int>(Dtype::kFp8)] = FlopRate::TFLOPs(1979);
  GpuSpec b200 = h100;
  b200.mxfp8 = true;
  const ServingPrecision fp8{ServeDtype::kFp8, ServeDtype::kFp8, ServeDtype::kFp8};
  const ServingPrecision fp4{ServeDtype::kFp4, ServeDtype::kFp4, ServeDtype::kFp8};
  const ServingPrecision w4a16{ServeDtype::kFp4, ServeDtype::kBf16, ServeDtype::kBf16};
  CHECK(CheckServingPrecision(fp8, a100).has_value());
  CHECK_FALSE(CheckServingPrecision(fp8, h100));
  CHECK(CheckServingPrecision(fp4, h100).has_value());
  CHECK_FALSE(CheckServingPrecision(fp4, b200));
  CHECK_FALSE(CheckServingPrecision(w4a16, a100));  // weight-only: computes in bf16
}

}  // namespace
}  // namespace parasim
