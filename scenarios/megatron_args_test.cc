#include "scenarios/megatron_args.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

const MegatronArg* Find(const MegatronArgs& a, const std::string& flag) {
  for (const MegatronArg& x : a.args) {
    if (x.flag == flag) return &x;
  }
  return nullptr;
}

TEST_CASE("a functional-test model_config.yaml, rendered as the CI launcher renders it") {
  const std::string text =
      "ENV_VARS:\n"
      "  NCCL_ALGO: Ring\n"
      "MODEL_ARGS:\n"
      "  --num-layers: 12\n"
      "  --bf16: true\n"
      "  --recompute-modules: \"[core_attn mlp]\"\n"
      "  --moe-layer-freq: ([0]*3+[1]*11)\n"
      "  --pipeline-model-parallel-layout: Et*7|t*7mL\n"
      "  --hierarchical-context-parallel-sizes: \"2 2\"\n"
      "  --empty: \"\"\n";
  auto a = ParseMegatronArgs("model_config.yaml", text);
  REQUIRE(a.ok());
  CHECK(a->env.size() == 1);
  const MegatronArg* n = Find(*a, "--num-layers");
  REQUIRE(n);
  CHECK(n->values == std::vector<std::string>{"12"});
  CHECK(n->line == 4);
  CHECK(n->col == 3);
  CHECK(a->Where(*n) == "model_config.yaml:4:3");
  CHECK(Find(*a, "--bf16")->values.empty());
  CHECK(Find(*a, "--recompute-modules")->values == std::vector<std::string>{"core_attn", "mlp"});
  CHECK(Find(*a, "--moe-layer-freq")->values == std::vector<std::string>{"([0]*3+[1]*11)"});
  CHECK(Find(*a, "--pipeline-model-parallel-layout")->values ==
        std::vector<std::string>{"Et*7|t*7mL"});
  // A value with a blank is one token, as the launcher quotes it.
  CHECK(Find(*a, "--hierarchical-context-parallel-sizes")->values ==
        std::vector<std::string>{"2 2"});
  CHECK(Find(*a, "--empty") == nullptr);  // an empty value: the launcher drops the flag
}

TEST_CASE("a model_config.yaml without ENV_VARS, or with an empty one, reads (found by fuzzing)") {
  for (const char* env : {"", "ENV_VARS:\n", "ENV_VARS: [a, b]\n"}) {
    CAPTURE(env);
    auto a = ParseMegatronArgs("model_config.yaml",
                               std::string(env) + "MODEL_ARGS:\n  --num-layers: 12\n");
    REQUIRE_MESSAGE(a.ok(), a.status().message());
    CHECK(a->env.empty());
    CHECK(Find(*a, "--num-layers")->values == std::vector<std::string>{"12"});
  }
}

TEST_CASE("a launch script: arrays, variables, continuations and torchrun's shape") {
  const std::string text =
      "#!/bin/bash\n"
      "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"
      "TP=4\n"
      "ARGS=(\n"
      "  --num-layers 24   # a comment\n"
      "  --tensor-model-parallel-size $TP\n"
      ")\n"
      "mkdir -p /tmp/x\n"
      "torchrun --nproc_per_node=8 --nnodes 2 pretrain_gpt.py \\\n"
      "  ${ARGS[@]} \\\n"
      "  --bf16 --seq-length=2048 --data-path \"a b\" c\n";
  auto a = ParseMegatronArgs("train.sh", text);
  REQUIRE(a.ok());
  CHECK(a->nodes == 2);
  CHECK(a->gpus_per_node == 8);
  REQUIRE(a->env.size() == 1);
  CHECK(a->env[0].first == "CUDA_DEVICE_MAX_CONNECTIONS");
  CHECK(Find(*a, "--num-layers")->line == 5);
  CHECK(Find(*a, "--tensor-model-parallel-size")->values == std::vector<std::string>{"4"});
  CHECK(Find(*a, "--seq-length")->values == std::vector<std::string>{"2048"});
  CHECK(Find(*a, "--data-path")->values == std::vector<std::string>{"a b", "c"});
  CHECK(Find(*a, "-p") == nullptr);  // mkdir's option is not Megatron's
  CHECK(a->args.size() == 5);
}

TEST_CASE("a plain list of flags; a value before any flag is an error") {
  auto a = ParseMegatronArgs("flags.txt", "# from a log\n--num-layers 2 --swiglu\n--lr 1e-4\n");
  REQUIRE(a.ok());
  CHECK(a->args.size() == 3);
  // In a plain list a pipeline layout needs no quotes.
  auto layout = ParseMegatronArgs("flags.txt", "--pipeline-model-parallel-layout Et*7|t*7mL\n");
  REQUIRE(layout.ok());
  CHECK(layout->args[0].values == std::vector<std::string>{"Et*7|t*7mL"});
  auto bad = ParseMegatronArgs("flags.txt", "\n  32 --num-layers\n");
  REQUIRE(!bad.ok());
  CHECK(bad.status().message().find("flags.txt:2:3: error: '32' comes before any flag") == 0);
}

}  // namespace
}  // namespace parasim
