#include "scenarios/scenario.h"

#include <doctest/doctest.h>

#include <string>

#include "scenarios/block_testing.h"

namespace parasim {
namespace {

constexpr char kBase[] =
    "cluster: {gpu: a100-sxm4-80gb, nodes: 2, gpus_per_node: 8, intra_node: nvlink3-a100, "
    "inter_node: ib-hdr-200g}\n"
    "model: gpt3-1.3b\n"
    "training: {seq_len: 2048, global_batch: 64}\n";

StatusOr<Scenario> Load(const std::string& rest, const std::vector<std::string>& sets = {}) {
  return LoadScenario(YamlInput("s.yaml", kBase + rest), sets, testing::TestCatalogs());
}

TEST_CASE("dp = auto: the GPUs over tp*pp*cp, which must divide them") {
  StatusOr<Scenario> s = Load("parallelism: {tp: 2, pp: 2}\n");
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  CHECK(s->dp_auto);
  CHECK(s->layout.dp == 4);
  StatusOr<Scenario> none = Load("");
  REQUIRE(none.ok());
  CHECK(none->layout.dp == 16);
  CHECK(Load("parallelism: {tp: 3, dp: auto}\n").status().message() ==
        "s.yaml:4:26: error: parallelism.dp: dp = auto needs tp*pp*cp = 3*1*1 = 3 to divide the "
        "cluster's 16 GPUs");
}

TEST_CASE("an error about keys a --set rebuilt points at the option, or at the file's mapping") {
  // Both came from --set: the dp = auto error named the file's tp line; a cluster made of two
  // nodes by --set and missing its inter-node fabric was told at file:1:1.
  StatusOr<Scenario> s =
      Load("parallelism: {tp: 1, dp: 8}\n", {"parallelism.pp=5", "parallelism.dp=auto"});
  CHECK(s.status().message().find("--set parallelism.dp=auto:1:21: error: parallelism.dp: dp = "
                                  "auto needs") == 0);
  // The cluster mapping rebuilt by --set: a key missing from it is told at its place in the file.
  StatusOr<Scenario> c =
      LoadScenario(YamlInput("c.yaml",
                             "model: gpt3-1.3b\ntraining: {seq_len: 2048, global_batch: 64}\n"
                             "cluster: {gpu: a100-sxm4-80gb, nodes: 1, gpus_per_node: 8}\n"),
                   {"cluster.nodes=2"}, testing::TestCatalogs());
  CHECK(c.status().message().find("c.yaml:3:10: error: cluster.inter_node: missing required key") ==
        0);
  // A mapping the option made, missing a key: at the option's segment (it was told at the
  // file's cluster, 3:10).
  StatusOr<Scenario> made =
      LoadScenario(YamlInput("c.yaml",
                             "model: gpt3-1.3b\ntraining: {seq_len: 2048, global_batch: 64}\n"
                             "cluster: {gpu: a100-sxm4-80gb, nodes: 1, gpus_per_node: 8}\n"),
                   {"cluster.inter_node.latency=2us"}, testing::TestCatalogs());
  CHECK(made.status().message().find("--set cluster.inter_node.latency=2us:1:15: error: "
                                     "cluster.inter_node.bandwidth: missing required key") == 0);
}

TEST_CASE("interleaving with one model chunk a stage is 1F1B, as Megatron-LM runs it") {
  const std::string p = "parallelism: {pp: 2, schedule: interleaved-1f1b";
  struct Case {
    std::string rest;
    ScheduleId schedule;
  };
  for (const Case& c : {
           Case{p + "}\n", kSchedule1F1B},
           Case{p + ", virtual_stages: 2}\n", kScheduleInterleaved},
           // A sweep's axes may give the virtual stages: its base keeps the schedule.
           Case{p + "}\nsweep: {virtual_stages: [2, 4]}\n", kScheduleInterleaved},
           // A sweep over other keys: its fixed layout folds too (a review: run on a sweep
           // scenario had kept it).
           Case{p + "}\nsweep: {tp: [1, 2]}\n", kSchedule1F1B},
       }) {
    CAPTURE(c.rest);
    StatusOr<Scenario> s = Load(c.rest);
    REQUIRE_MESSAGE(s.ok(), s.status().message());
    CHECK(s->layout.schedule == c.schedule);
  }
}

TEST_CASE("a sequence longer than a learned position table is refused at training.seq_len") {
  // It ran with exit 0 (GPT-3 175B at 4,096 tokens), where the table holds 2,048 positions.
  StatusOr<Scenario> s = Load("", {"training.seq_len=4096"});
  CHECK(s.status().message() ==
        "--set training.seq_len=4096:1:23: error: training.seq_len: 4096 tokens is longer than "
        "gpt3-1.3b's 2048 learned positions (model.max_position): expected at most 2048, or a "
        "larger model.max_position");
  CHECK(Load("", {"training.seq_len=4096", "model.max_position=4096"}).ok());
  CHECK(Load("", {"training.seq_len=4096", "model.position=rope"}).ok());
  // Each model a co-design sweep trains (a review: gpt3-1.3b ranked first at 8,192 tokens), and
  // not the scenario's own where the sweep replaces it.
  StatusOr<Scenario> swept = Load("sweep: {model: [llama3-8b, gpt3-1.3b]}\n",
                                  {"training.seq_len=8192", "model=llama3-8b"});
  CHECK(swept.status().message().find("8192 tokens is longer than gpt3-1.3b's 2048 learned "
                                      "positions") != std::string::npos);
  CHECK(swept.status().message().find("(in the sweep's combination") != std::string::npos);
  CHECK(Load("sweep: {model: [llama3-8b, llama2-7b]}\n", {"training.seq_len=4096"}).ok());
}

TEST_CASE("--set replaces a key, and a model key under a catalog id extends that model") {
  StatusOr<Scenario> s = Load("parallelism: {tp: 2, dp: 8}\n",
                              {"parallelism.tp=4", "parallelism.dp=4", "model.layers=12"});
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  CHECK(s->layout.tp == 4);
  CHECK(s->model.layers == 12);
  CHECK(s->model.id == "gpt3-1.3b+overrides");
  CHECK(Load("", {"parallelism.tp=eight"}).status().message() ==
        "--set parallelism.tp=eight:1:21: error: parallelism.tp: expected an integer from 1 to "
        "65536, got 'eight' (counts take no unit)");
}

TEST_CASE("the own layout: refused alone, only recorded beside a sweep block") {
  const std::string bad = "parallelism: {tp: 2, dp: 4}\n";
  const Status alone = Load(bad).status();
  CAPTURE(alone.message());
  CHECK(alone.message().find(
            "s.yaml:4:26: error: parallelism.dp: tp*pp*dp*cp = 2*1*4*1 = 8 GPUs") == 0);
  StatusOr<Scenario> swept = Load(bad + "sweep: {tp: [1, 2]}\n");
  REQUIRE(swept.ok());
  CHECK(swept->fixed_layout.message() == alone.message());
  REQUIRE(swept->sweep);
  CHECK(swept->sweep->axes.size() == 1);
}

TEST_CASE("a hybrid model: its pattern and Mamba sizes are checked, located, against the layout") {
  const std::string hybrid =
      "  hybrid: {pattern: 'M*M-', mamba: {heads: 16, head_dim: 64, state_dim: 16, groups: 4}}\n";
  auto model = [&](const std::string& layers, const std::string& hy) {
    return "model: {extends: gpt3-1.3b, layers: " + layers + ",\n" + hy + "}\n";
  };
  auto load = [&](const std::string& m, const std::string& par) {
    std::string doc = kBase;
    doc.replace(doc.find("model: gpt3-1.3b\n"), 17, m);
    return LoadScenario(YamlInput("s.yaml", doc + par), {}, testing::TestCatalogs());
  };
  StatusOr<Scenario> s = load(model("4", hybrid), "parallelism: {tp: 2, dp: 8}\n");
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  CHECK(s->model.is_hybrid());
  CHECK(s->model.mamba_inner() == 1024);
  // Five layers for a pattern of four; a symbol Megatron-Core has that parasim does not build.
  CHECK(load(model("5", hybrid), "")
            .status()
            .message()
            .find("model.hybrid.pattern: the pattern has 4 layers and layers is 5") !=
        std::string::npos);
  CHECK(load(model("4", "  hybrid: {pattern: 'M*G-'}\n"), "")
            .status()
            .message()
            .find("'G' at 3 is not a layer symbol: expected M (Mamba-2)") != std::string::npos);
  CHECK(load(model("4", "  hybrid: {pattern: 'M*E-'}\n"), "")
            .status()
            .message()
            .find("E (experts) layers need a moe block") != std::string::npos);
  // TP must divide the Mamba groups (4), CP the heads a TP rank holds (16 / 4 = 4).
  CHECK(load(model("4", hybrid), "parallelism: {tp: 8, dp: 2}\n")
            .status()
            .message()
            .find("tp 8 does not divide the Mamba layers' 4 groups") != std::string::npos);
  const std::string twelve =
      "  hybrid: {pattern: 'M*M-', mamba: {heads: 12, head_dim: 64, groups: 4}}\n";
  CHECK(load(model("4", twelve), "parallelism: {tp: 2, cp: 2, dp: 4}\n").ok());
  CHECK(load(model("4", twelve), "parallelism: {tp: 2, cp: 4, dp: 2}\n")
            .status()
            .message()
            .find("cp 4 does not divide the 6 Mamba heads a TP rank holds") != std::string::npos);
}

TEST_CASE("top-level keys, and the reliability block") {
  CHECK(Load("clster: {}\n")
            .status()
            .message()
            .find("unknown key 'clster'; did you mean "
                  "'cluster'?") != std::string::npos);
  StatusOr<Scenario> s = Load("reliability: none\n");
  REQUIRE(s.ok());
  CHECK_FALSE(s->reliability.enabled);
  CHECK(std::string(ScenarioKeys().front()) == "name");
}

TEST_CASE("a co-design sweep checks the training's precision on each of its GPUs") {
  const std::string fp8 =
      "cluster: {gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 8, intra_node: nvlink4-h100}\n"
      "model: gpt3-1.3b\n"
      "training: {seq_len: 2048, global_batch: 64, precision: fp8}\n"
      "sweep: {gpu: [h100-sxm5-80gb, a100-sxm4-80gb]}\n";
  const Status st = LoadScenario(YamlInput("s.yaml", fp8), {}, testing::TestCatalogs()).status();
  CHECK(st.message().find("training.precision: fp8 needs fp8 tensor cores and a100-sxm4-80gb has "
                          "none") != std::string::npos);
  CHECK(st.message().find("(in the sweep's combination gpu=a100-sxm4-80gb)") != std::string::npos);
}

}  // namespace
}  // namespace parasim
