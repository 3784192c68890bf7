#include "scenarios/megatron_args.h"

#include <doctest/doctest.h>

#include "sim/yaml_reader.h"

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

TEST_CASE("a model_config.yaml repeating a key passes both, as the CI launcher does") {
  // yq's to_entries passes every MODEL_ARGS entry and argparse keeps the last (14 of
  // Megatron-LM's own configs repeat --ffn-hidden-size and the like); it was refused.
  auto a = ParseMegatronArgs("model_config.yaml",
                             "MODEL_ARGS:\n  --num-layers: 12\n  --num-layers: 16\n");
  REQUIRE_MESSAGE(a.ok(), a.status().message());
  // The last one counts, as argparse takes it.
  const MegatronArg* last = nullptr;
  for (const MegatronArg& arg : a->args) {
    if (arg.flag == "--num-layers") last = &arg;
  }
  REQUIRE(last != nullptr);
  CHECK(last->values == std::vector<std::string>{"16"});
  // A scenario file still refuses a repeated key.
  CHECK_FALSE(ParseYaml("a: 1\na: 2\n", "s.yaml").ok());
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

TEST_CASE("a script's if/else: the branch bash runs, or an error where it cannot be told") {
  // Both branches were read and mixed: a precision from the branch that does not run beside
  // the other's TP (a bug hunt on real launch scripts, 2026-11-30).
  const std::string head = "#!/bin/bash\nPRECISION=bf16\nARGS=(--num-layers 4)\n";
  const std::string branches =
      "then\n  ARGS+=(--fp8-format hybrid --tensor-model-parallel-size 4)\nelse\n"
      "  ARGS+=(--tensor-model-parallel-size 2)\nfi\npython pretrain_gpt.py ${ARGS[@]}\n";
  auto tp = [](const MegatronArgs& a) {
    const MegatronArg* t = Find(a, "--tensor-model-parallel-size");
    return t ? t->values.at(0) : std::string();
  };
  for (const std::string& cond :
       {std::string("if [ \"$PRECISION\" == \"fp8\" ]; "),
        std::string("if [[ $PRECISION = fp8 ]]; "),
        std::string("if [ -z \"$PRECISION\" ] || [ \"$PRECISION\" = fp8 ]; "),
        std::string("if test \"$PRECISION\" != bf16; ")}) {
    CAPTURE(cond);
    auto a = ParseMegatronArgs("run.sh", head + cond + branches);
    REQUIRE_MESSAGE(a.ok(), a.status().message());
    CHECK(tp(*a) == "2");
    CHECK(Find(*a, "--fp8-format") == nullptr);
  }
  auto fp8 = ParseMegatronArgs(
      "run.sh",
      "#!/bin/bash\nPRECISION=fp8\nARGS=(--num-layers 4)\nif [ $PRECISION == fp8 ]; " + branches);
  REQUIRE_MESSAGE(fp8.ok(), fp8.status().message());
  CHECK(tp(*fp8) == "4");
  CHECK(Find(*fp8, "--fp8-format") != nullptr);
  // A condition it cannot evaluate (a file test) with both branches setting flags: refused at
  // the `if`; with one branch setting nothing, read as before.
  auto file = ParseMegatronArgs("run.sh", head + "if [ -f /etc/fp8 ]; " + branches);
  REQUIRE_FALSE(file.ok());
  CHECK(file.status().message().find("run.sh:4:1: error: the flags depend on a shell condition") ==
        0);
  auto guard = ParseMegatronArgs(
      "run.sh", head +
                    "if [ ! -f pretrain_gpt.py ]; then\n  echo missing\n  exit 1\nfi\n"
                    "python pretrain_gpt.py ${ARGS[@]} --tensor-model-parallel-size 2\n");
  REQUIRE_MESSAGE(guard.ok(), guard.status().message());
  CHECK(tp(*guard) == "2");
  // A review's cases: an `if` nested in an unknown branch counts for it; `then if` on one line
  // opens another if; a variable the script never sets is not compared as its text; an empty
  // [[ -n ]] operand is empty; branches that only echo are no conflict.
  const std::string run = "python pretrain_gpt.py ${ARGS[@]}\n";
  auto nested = ParseMegatronArgs(
      "run.sh",
      "A=1\nif [ -f /etc/fp8 ]; then\n  if [ $A = 1 ]; then ARGS+=(--tensor-model-"
      "parallel-size 2); fi\nelse\n  ARGS+=(--tensor-model-parallel-size 4)\nfi\n" +
          run);
  CHECK_FALSE(nested.ok());
  auto then_if = ParseMegatronArgs(
      "run.sh",
      "A=1\nif [ $A = 1 ]; then if [ $A = 2 ]; then ARGS+=(--tensor-model-parallel-size "
      "8); else ARGS+=(--tensor-model-parallel-size 2); fi\nelse\n  "
      "ARGS+=(--tensor-model-parallel-size 4)\nfi\n" +
          run);
  REQUIRE_MESSAGE(then_if.ok(), then_if.status().message());
  CHECK(tp(*then_if) == "2");
  auto unset = ParseMegatronArgs(
      "run.sh",
      "if [ \"$FROM_ENV\" = \"\" ]; then\n  ARGS+=(--tensor-model-parallel-size 2)\n"
      "else\n  ARGS+=(--tensor-model-parallel-size 4)\nfi\n" +
          run);
  CHECK_FALSE(unset.ok());
  auto empty =
      ParseMegatronArgs("run.sh",
                        "E=\nif [[ -n $E ]]; then\n  ARGS+=(--tensor-model-parallel-size 2)\nelse\n"
                        "  ARGS+=(--tensor-model-parallel-size 4)\nfi\n" +
                            run);
  REQUIRE_MESSAGE(empty.ok(), empty.status().message());
  CHECK(tp(*empty) == "4");
  auto echoes = ParseMegatronArgs("run.sh",
                                  "if [ -d /ckpt ]; then echo resuming; else echo fresh; fi\n"
                                  "python pretrain_gpt.py --tensor-model-parallel-size 2\n");
  REQUIRE_MESSAGE(echoes.ok(), echoes.status().message());
  CHECK(tp(*echoes) == "2");
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

std::vector<std::string> Values(const MegatronArgs& a, const std::string& flag) {
  const MegatronArg* x = Find(a, flag);
  return x ? x->values : std::vector<std::string>{"<absent>"};
}

TEST_CASE("array and string appends (NAME+=...) add to the variable, as bash does") {
  // Megatron-LM's examples/llama/train_llama3_8b_h100_fp8.sh appends so.
  const std::string text =
      "MODEL_ARGS=(\n"
      "    --num-layers 8 --hidden-size 1024\n"
      ")\n"
      "MODEL_ARGS+=(--tensor-model-parallel-size 4 --use-distributed-optimizer)\n"
      "EXTRA=\"--seq-length 2048\"\n"
      "EXTRA+=\" --bf16\"\n"
      "DTYPE=fp8\n"  // the branch runs (unset, bash would skip it, and so does the import)
      "if [[ \"$DTYPE\" == \"fp8\" ]]; then\n"
      "    DTYPE_ARGS+=(\n"
      "        \"--fp8-format hybrid\"\n"
      "    )\n"
      "fi\n"
      "torchrun --nproc-per-node 8 pretrain_gpt.py \"${MODEL_ARGS[@]}\" $EXTRA ${DTYPE_ARGS[@]}\n";
  auto a = ParseMegatronArgs("train.sh", text);
  REQUIRE_MESSAGE(a.ok(), a.status().message());
  CHECK(Values(*a, "--tensor-model-parallel-size") == std::vector<std::string>{"4"});
  CHECK(Find(*a, "--use-distributed-optimizer") != nullptr);
  CHECK(Values(*a, "--seq-length") == std::vector<std::string>{"2048"});
  CHECK(Find(*a, "--bf16") != nullptr);
  CHECK(Values(*a, "--fp8-format") == std::vector<std::string>{"hybrid"});
  CHECK(Find(*a, "--tensor-model-parallel-size")->line == 4);
}

TEST_CASE("redirections and pipes end the command; they are no flag values") {
  const std::string text =
      "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
      "  --num-layers 8 --recompute-modules core_attn 2>&1 | tee train.log\n"
      "python pretrain_gpt.py --hidden-size 8 > out.log < in.txt\n";
  auto a = ParseMegatronArgs("train.sh", text);
  REQUIRE_MESSAGE(a.ok(), a.status().message());
  CHECK(Values(*a, "--recompute-modules") == std::vector<std::string>{"core_attn"});
  CHECK(a->args.size() == 2);
  auto b =
      ParseMegatronArgs("t.sh", "python x.py --num-layers 8 >> log 2> err &> all && echo ok\n");
  REQUIRE(b.ok());
  CHECK(Values(*b, "--num-layers") == std::vector<std::string>{"8"});
  CHECK(b->args.size() == 1);
  // Quoted, the characters are text.
  auto c = ParseMegatronArgs("t.sh", "python x.py --pipeline-model-parallel-layout 'Et|t>L'\n");
  REQUIRE(c.ok());
  CHECK(Values(*c, "--pipeline-model-parallel-layout") == std::vector<std::string>{"Et|t>L"});
}

TEST_CASE("the launch is the command that runs the script, not a test that names it") {
  // Megatron-LM's examples/llama/train_llama3_8b_h100_fp8.sh checks the script first.
  const std::string text =
      "PRETRAIN_SCRIPT_PATH=\"pretrain_gpt.py\"\n"
      "if [ ! -f \"$PRETRAIN_SCRIPT_PATH\" ]; then\n"
      "    echo \"Error: pretrain_gpt.py not found\"\n"
      "    exit 1\n"
      "fi\n"
      "torchrun --nproc_per_node 4 \"$PRETRAIN_SCRIPT_PATH\" --num-layers 8\n";
  auto a = ParseMegatronArgs("train.sh", text);
  REQUIRE_MESSAGE(a.ok(), a.status().message());
  CHECK(a->gpus_per_node == 4);
  CHECK(Values(*a, "--num-layers") == std::vector<std::string>{"8"});
}

TEST_CASE("an unquoted $VAR splits at blanks; a quoted one stays one word") {
  const std::string text =
      "GPT_ARGS=\"--num-layers 8 --hidden-size 1024\"\n"
      "CKPT=${1:-\"ckpt dir\"}\n"
      "DATA=\"a b\"\n"
      "torchrun pretrain_gpt.py $GPT_ARGS --save \"$CKPT\" --data-path \"$DATA\" $DATA\n";
  auto a = ParseMegatronArgs("train.sh", text);
  REQUIRE_MESSAGE(a.ok(), a.status().message());
  CHECK(Values(*a, "--num-layers") == std::vector<std::string>{"8"});
  CHECK(Values(*a, "--hidden-size") == std::vector<std::string>{"1024"});
  CHECK(Find(*a, "--num-layers")->line == 1);
  CHECK(Find(*a, "--num-layers")->col == 11);  // inside the quotes
  CHECK(Find(*a, "--hidden-size")->col == 26);
  CHECK(Values(*a, "--save") == std::vector<std::string>{"ckpt dir"});  // ${1:-default}
  CHECK(Values(*a, "--data-path") == std::vector<std::string>{"a b", "a", "b"});
  // A quoted value over several lines, a flag a line: each flag at its own line and column
  // (every one was told at the variable's first line, column 11 + its offset).
  auto lines = ParseMegatronArgs("lines.sh",
                                 "ARGS=\"--bf16\n    --num-layers 8\n\t--hidden-size 1024\n\"\n"
                                 "torchrun pretrain_gpt.py $ARGS\n");
  REQUIRE_MESSAGE(lines.ok(), lines.status().message());
  CHECK(Find(*lines, "--bf16")->line == 1);
  CHECK(Find(*lines, "--bf16")->col == 7);
  CHECK(Find(*lines, "--num-layers")->line == 2);
  CHECK(Find(*lines, "--num-layers")->col == 5);
  CHECK(Find(*lines, "--hidden-size")->line == 3);
  CHECK(Find(*lines, "--hidden-size")->col == 2);
}

TEST_CASE("a byte-order mark and CRLF line ends read as plain text") {
  auto bom = ParseMegatronArgs("bom.txt", "\xEF\xBB\xBF--num-layers 8 --bf16\r\n--lr 1\r\n");
  REQUIRE_MESSAGE(bom.ok(), bom.status().message());
  CHECK(bom->args.size() == 3);
  CHECK(Find(*bom, "--num-layers")->col == 1);
  auto crlf = ParseMegatronArgs("crlf.sh",
                                "torchrun --nproc_per_node 8 pretrain_gpt.py \\\r\n"
                                "  --num-layers 8 \\\r\n  --bf16\r\n");
  REQUIRE_MESSAGE(crlf.ok(), crlf.status().message());
  CHECK(Values(*crlf, "--num-layers") == std::vector<std::string>{"8"});
  CHECK(Find(*crlf, "--bf16") != nullptr);
}

TEST_CASE("a model_config.yaml with a YAML error reports the YAML error") {
  auto a = ParseMegatronArgs("model_config.yaml",
                             "ENV_VARS:\n  A: 1\nMODEL_ARGS:\n  --num-layers: 8\n"
                             "  --pipeline-model-parallel-layout: \"Et*4|t*4L\n");
  REQUIRE(!a.ok());
  CHECK(a.status().message().find("model_config.yaml:5:") == 0);
  CHECK(a.status().message().find("YAML") != std::string::npos);
  auto b = ParseMegatronArgs("model_config.yaml",
                             "MODEL_ARGS:\n  --num-layers: 8\n   --vocab-size: 32000\n");
  REQUIRE(!b.ok());
  CHECK(b.status().message().find("model_config.yaml:3:") == 0);
  CHECK(b.status().message().find("YAML") != std::string::npos);
}

TEST_CASE("a long token in an error is shortened") {
  auto a = ParseMegatronArgs("flags.txt", std::string(5000, 'x') + " --num-layers 2\n");
  REQUIRE(!a.ok());
  CHECK(a.status().message().size() < 200);
}

}  // namespace
}  // namespace parasim
