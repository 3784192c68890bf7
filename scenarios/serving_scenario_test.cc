#include "scenarios/serving_scenario.h"

#include <doctest/doctest.h>

#include "scenarios/scenario.h"

namespace parasim {
namespace {

const Catalogs& Cat() {
  static const Catalogs cat = *LoadCatalogs();
  return cat;
}

StatusOr<ServingScenario> Load(const std::string& text, const std::vector<std::string>& sets = {}) {
  return LoadServingScenario(YamlInput("x.yaml", text), sets, Cat());
}

constexpr char kDoc[] = R"(name: probe
cluster: {gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 8, intra_node: nvlink4-h100}
model: llama3-70b
serving:
  precision: fp8
  requests: {input_tokens: 512, output_tokens: 128, arrival: {rate: 4/s}}
parallelism: {tp: 4}
)";

TEST_CASE("a serving scenario: cluster and model as in training, serving and its layout") {
  StatusOr<ServingScenario> s = Load(kDoc);
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  CHECK(s->name == "probe");
  CHECK(s->cluster.gpus() == 8);
  CHECK(s->model.layers == 80);
  CHECK(s->serving.layout.unified.replicas == 2);
  CHECK(s->serving.precision.weights == ServeDtype::kFp8);
  CHECK(s->serving.precision.kv == ServeDtype::kBf16);
  CHECK(IsServingScenario(YamlInput("x.yaml", kDoc)));
  CHECK_FALSE(IsServingScenario(YamlInput("x.yaml", "cluster: {}\ntraining: {}\n")));
  // --set reaches the serving keys.
  s = Load(kDoc, {"serving.engine.max_seqs=32", "parallelism.tp=8"});
  REQUIRE(s.ok());
  CHECK(s->serving.engine.max_seqs == 32);
  CHECK(s->serving.layout.unified.replicas == 1);
}

TEST_CASE("bad serving scenarios are located") {
  struct Case {
    std::vector<std::string> sets;
    const char* message;
  };
  const Case cases[] = {
      {{"parallelism.tp=3"},
       "--set parallelism.tp=3:1:21: error: parallelism.tp: tp = 3 does not divide the model's 64 "
       "attention heads"},
      {{"parallelism.replicas=4"},
       "--set parallelism.replicas=4:1:27: error: parallelism.replicas: the layout takes 16 GPUs "
       "(tp4 x4), more than the cluster's 8"},
      {{"cluster.gpu=a100-sxm4-80gb", "cluster.intra_node=nvlink3-a100"},
       "x.yaml:5:14: error: serving.precision: a100-sxm4-80gb has no FP8 tensor cores"},
      {{"model=nemotron-3-nano-30b-a3b", "serving.requests.prefix_cache_hit=0.5"},
       "--set serving.requests.prefix_cache_hit=0.5:1:40: error: "
       "serving.requests.prefix_cache_hit: a prefix-cache hit is not modelled for a hybrid"},
      {{"sweep.gpus=[8, 16]"},
       "--set sweep.gpus=[8, 16]:1:17: error: sweep.gpus[1]: 16 GPUs: the cluster has 8"},
      {{"serving.requests.count=0"},
       "--set serving.requests.count=0:1:29: error: serving.requests.count: expected an integer "
       "from 1"},
  };
  for (const Case& c : cases) {
    const StatusOr<ServingScenario> s = Load(kDoc, c.sets);
    REQUIRE_FALSE(s.ok());
    CAPTURE(c.sets.front());
    CHECK_MESSAGE(s.status().message().rfind(c.message, 0) == 0, s.status().message());
    CHECK(s.status().exit_code() == 2);
  }
}

TEST_CASE("requests longer than a learned position table are refused") {
  // GPT-3 175B holds 2,048 positions: 2,000 + 200 tokens had been served without a word.
  const std::vector<std::string> gpt3 = {"model=gpt3-175b", "parallelism.tp=8"};
  auto sets = [&](std::vector<std::string> more) {
    more.insert(more.begin(), gpt3.begin(), gpt3.end());
    return more;
  };
  StatusOr<ServingScenario> over = Load(
      kDoc, sets({"serving.requests.input_tokens=2000", "serving.requests.output_tokens=200"}));
  CHECK(over.status().message().find(
            "error: serving.requests: a request of up to 2200 tokens (input + output) is longer "
            "than gpt3-175b's 2048 learned positions") != std::string::npos);
  CHECK(
      Load(kDoc, sets({"serving.requests.input_tokens=2000", "serving.requests.output_tokens=48"}))
          .ok());
  StatusOr<ServingScenario> open =
      Load(kDoc, sets({"serving.requests.input_tokens={lognormal: {mean: 500, sigma: 0.5}}"}));
  CHECK(open.status().message().find("the lengths have no upper bound") != std::string::npos);
  // Rotary positions have no table to outgrow.
  CHECK(Load(kDoc, {"serving.requests.input_tokens=200000"}).ok());
}

TEST_CASE("the training loader points a serving scenario at serve") {
  const StatusOr<Scenario> s = LoadScenario(YamlInput("x.yaml", kDoc), {}, Cat());
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().rfind(
            "x.yaml:5:3: error: serving: a serving scenario (a serving block in place of "
            "training): run it with `parasim serve`",
            0) == 0);
}

}  // namespace
}  // namespace parasim
