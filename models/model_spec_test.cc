#include "models/model_spec.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

TEST_CASE("every model id of SCENARIO.md is in the catalog") {
  auto cat = LoadModelCatalog();
  REQUIRE(cat.ok());
  for (auto id :
       {"gpt3-1.3b",     "gpt3-13b",        "gpt3-175b",    "megatron-1t",    "llama2-7b",
        "llama2-13b",    "llama2-70b",      "llama3-8b",    "llama3-70b",     "llama3-405b",
        "mixtral-8x7b",  "mixtral-8x22b",   "gpt-neox-20b", "bloom-176b",     "qwen3-235b-a22b",
        "qwen3-30b-a3b", "llama4-maverick", "gpt-oss-120b", "nemotron4-340b", "deepseek-v3"}) {
    CAPTURE(id);
    CHECK(cat->Find(id) != nullptr);
  }
}

TEST_CASE("moe.every interleaves dense and MoE layers (Llama 4 Maverick: MoE on odd layers)") {
  auto cat = LoadModelCatalog();
  const ModelSpec* m = cat->Find("llama4-maverick");
  REQUIRE(m != nullptr);
  int moe = 0;
  for (int i = 0; i < m->layers; ++i) moe += m->IsMoeLayer(i) ? 1 : 0;
  CHECK(moe == 24);
  CHECK_FALSE(m->IsMoeLayer(0));
  CHECK(m->IsMoeLayer(1));
  ModelSpec d = *m;
  d.moe.dense_layers = 3;  // DeepSeek-style leading dense layers, then every other
  CHECK_FALSE(d.IsMoeLayer(3));
  CHECK(d.IsMoeLayer(4));
  d.moe.every = 1;
  CHECK(d.IsMoeLayer(3));
}

TEST_CASE("computed parameter counts match the published totals within 1%") {
  auto cat = LoadModelCatalog();
  REQUIRE(cat.ok());
  for (const ModelSpec& m : cat->models) {
    CAPTURE(m.id);
    REQUIRE(m.published_params > 0);
    ParamCounts c = CountParams(m);
    // A strict 2% (scale(0); doctest's default scale of 1 made the old epsilon(0.01) about 2%
    // too): published figures are rounded to two or three digits, e.g. GPT-3 XL's "1.3B" is
    // 1.316B computed (+1.2%), DeepSeek-V3's "37B" active 37.55B (+1.5%), Qwen3-30B-A3B's
    // "3.3B" active 3.35B (+1.6%). Every total but GPT-3 XL's is within 1%.
    CHECK(c.total / m.published_params == doctest::Approx(1.0).epsilon(0.02).scale(0));
    if (m.published_active_params > 0) {
      CHECK(c.active / m.published_active_params == doctest::Approx(1.0).epsilon(0.02).scale(0));
    }
  }
}

TEST_CASE("GPT-3 175B matches the SC21 closed form 12lh^2(1 + 13/(12h) + (V+s)/(12lh))") {
  auto cat = LoadModelCatalog();
  const ModelSpec* m = cat->Find("gpt3-175b");
  double l = m->layers, h = m->hidden, V = m->vocab, s = 2048;
  double formula = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
  // The closed form counts one bias fewer per layer's MLP; agreement is to 1e-4.
  CHECK(CountParams(*m).total / formula == doctest::Approx(1.0).epsilon(1e-4));
}

}  // namespace
}  // namespace parasim
