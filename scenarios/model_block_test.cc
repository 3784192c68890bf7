#include "scenarios/model_block.h"

#include <doctest/doctest.h>

#include <string>

#include "scenarios/block_testing.h"
#include "sim/yaml_reader.h"

namespace parasim {
namespace {

Status Read(const std::string& text, ModelSpec* m) {
  return testing::ReadBlock(text, "model", [&](const YamlContext& ctx, const YAML::Node& n) {
    return ParseModel(ctx, n, testing::TestCatalogs(), m);
  });
}

TEST_CASE("a model: a catalog id, an inline mapping, or a catalog model extended") {
  ModelSpec m;
  REQUIRE(Read("model: gpt3-175b\n", &m).ok());
  CHECK(m.id == "gpt3-175b");
  CHECK(m.layers == 96);
  REQUIRE(Read("model: {layers: 2, hidden: 256, heads: 4, vocab: 1000}\n", &m).ok());
  CHECK(m.id == "inline");
  CHECK(m.hidden == 256);
  REQUIRE(Read("model: {extends: gpt3-175b, layers: 48}\n", &m).ok());
  CHECK(m.id == "gpt3-175b+overrides");
  CHECK(m.layers == 48);
  CHECK(m.hidden == 12288);
  CHECK(m.published_params == 0);  // the catalog's count is not this model's
}

TEST_CASE("a model extended may change one key of its MLA, hybrid mixers or window") {
  ModelSpec base, m;
  REQUIRE(Read("model: deepseek-v3\n", &base).ok());
  REQUIRE(Read("model: {extends: deepseek-v3, mla: {kv_lora_rank: 256}}\n", &m).ok());
  CHECK(m.mla.kv_lora_rank == 256);
  CHECK(m.mla.qk_nope_head_dim == base.mla.qk_nope_head_dim);
  REQUIRE(Read("model: {extends: nemotron-3-nano-30b-a3b, hybrid: {mamba: {state_dim: 64}}}\n", &m)
              .ok());
  CHECK(m.mamba.state_dim == 64);
  REQUIRE(Read("model: nemotron-3-nano-30b-a3b\n", &base).ok());
  CHECK(m.hybrid == base.hybrid);
  // A model without them still needs the whole block.
  CHECK(Read("model: {extends: gpt3-175b, mla: {kv_lora_rank: 256}}\n", &m)
            .message()
            .find("missing required key 'qk_nope_head_dim'") != std::string::npos);
  CHECK(Read("model: {extends: gpt3-175b, hybrid: {mamba: {state_dim: 64}}}\n", &m)
            .message()
            .find("missing required key 'pattern'") != std::string::npos);
}

TEST_CASE("unknown models are refused with a suggestion, where they are named") {
  ModelSpec m;
  const Status id = Read("model: gpt3-1.3\n", &m);
  CHECK(id.message().find("x.yaml:1:8: error: model: unknown model 'gpt3-1.3' (did you mean "
                          "'gpt3-1.3b'?)") == 0);
  const Status ext = Read("model: {extends: gpt5}\n", &m);
  CHECK(ext.message().find("model.extends: unknown model 'gpt5'") != std::string::npos);
}

TEST_CASE("a catalog model becomes one that extends it, so that a key set under it refines it") {
  StatusOr<YAML::Node> root = ParseYaml("model: llama3-8b\ntraining: {seq_len: 8}\n", "x.yaml");
  REQUIRE(root.ok());
  const YAML::Node extended = ExtendingModel(*root);
  CHECK(extended["model"]["extends"].Scalar() == "llama3-8b");
  CHECK(extended["training"]["seq_len"].Scalar() == "8");
  CHECK((*root)["model"].IsScalar());  // the root itself is untouched
  StatusOr<YAML::Node> inline_model = ParseYaml("model: {layers: 2}\n", "x.yaml");
  CHECK(ExtendingModel(*inline_model)["model"]["layers"].Scalar() == "2");
}

TEST_CASE("a key set under the cluster's catalog GPU or fabric extends that entry") {
  StatusOr<YAML::Node> root =
      ParseYaml("cluster: {gpu: b200, inter_node: ib-ndr-400g}\nmodel: llama3-8b\n", "x.yaml");
  REQUIRE(root.ok());
  YAML::Node r = *root;
  YamlContext ctx{"x.yaml", {}};
  // The GPU extended, then set whole again: refused, since the key under it would be dropped
  // without a word (a review: 40 GiB set, then the GPU, ran with 80); the other order extends.
  StatusOr<YAML::Node> again = ParseYaml("cluster: {gpu: b200}\n", "x.yaml");
  YAML::Node a = *again;
  const Status dropped =
      ApplyScenarioSets({"cluster.gpu.memory=40GiB", "cluster.gpu=h100-sxm5-80gb"}, &a, &ctx);
  CHECK(dropped.message() ==
        "--set cluster.gpu=h100-sxm5-80gb:1:1: error: cluster.gpu: replaces cluster.gpu.memory, "
        "which an earlier --set gave; set cluster.gpu first, then the keys under it (with diff, "
        "both on the side that changes it)");
  REQUIRE(ApplyScenarioSets({"cluster.gpu=h100-sxm5-80gb", "cluster.gpu.sustained_factor=0.6",
                             "cluster.inter_node.latency=9us"},
                            &r, &ctx)
              .ok());
  CHECK(r["cluster"]["gpu"]["extends"].Scalar() == "h100-sxm5-80gb");
  CHECK(r["cluster"]["gpu"]["sustained_factor"].Scalar() == "0.6");
  CHECK(r["cluster"]["inter_node"]["extends"].Scalar() == "ib-ndr-400g");
  CHECK(r["cluster"]["inter_node"]["latency"].Scalar() == "9us");
  YAML::Node r2 =
      *ParseYaml("cluster: {gpu: b200, inter_node: ib-ndr-400g}\nmodel: llama3-8b\n", "x.yaml");
  REQUIRE(ApplyScenarioSets({"cluster.gpu.sms=100"}, &r2, &ctx).ok());
  CHECK(r2["cluster"]["gpu"]["extends"].Scalar() == "b200");
  CHECK(r2["cluster"]["gpu"]["sms"].Scalar() == "100");
  CHECK(r2["model"].IsScalar());  // only the entry a key is set under
  // A path that is absent or already a mapping is left as it is.
  CHECK(ExtendingAt(*root, {"cluster", "intra_node"})["cluster"]["intra_node"].IsDefined() ==
        false);
  CHECK(ExtendingAt(r2, {"cluster", "gpu"})["cluster"]["gpu"]["sms"].Scalar() == "100");
}

}  // namespace
}  // namespace parasim
