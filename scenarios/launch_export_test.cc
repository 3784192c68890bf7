#include "scenarios/launch_export.h"

#include <doctest/doctest.h>
#include <fmt/core.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "scenarios/megatron_args.h"
#include "scenarios/megatron_import.h"
#include "scenarios/scenario.h"
#include "scenarios/serving_scenario.h"
#include "scenarios/torchtitan_import.h"
#include "sim/yaml_reader.h"
#include "strategies/step.h"

namespace parasim {
namespace {

const Catalogs& Cat() {
  static const Catalogs cat = *LoadCatalogs();
  return cat;
}

std::vector<std::string> Examples() {
  const std::string dir = std::string(std::getenv("TEST_SRCDIR")) + "/parasim/scenarios";
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    // Training scenarios: a serving scenario has no training layout to launch.
    if (e.path().extension() == ".yaml" && !IsServingScenario(YamlInput(e.path().string()))) {
      out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A scenario and its round trip predict the same step and the same peak memory per stage.
void CheckSamePrediction(const Scenario& s, const Scenario& back) {
  auto a = SimulateStep(s.model, s.training, s.layout, s.cluster, {});
  auto b = SimulateStep(back.model, back.training, back.layout, back.cluster, {});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->step_time_s == b->step_time_s);
  CHECK(a->peak_memory_bytes == b->peak_memory_bytes);
}

// An imported scenario with the original's cluster block and the keys the export could not
// carry set back as they were.
StatusOr<Scenario> Reimported(const ImportedScenario& imported, const YAML::Node& original,
                              const std::vector<NotExported>& missing) {
  PARASIM_ASSIGN_OR_RETURN(YAML::Node root, ParseYaml(imported.yaml, "<imported>"));
  root["cluster"] = original["cluster"];
  YamlContext ctx{"<imported>", {}};
  for (const NotExported& m : missing) {
    // stage_layers set back states the split: whatever split the import read (torchtitan's
    // default less-layer counts as account_for) gives way to it.
    if (m.key == "parallelism.stage_layers" && root["parallelism"]["account_for"]) {
      root["parallelism"].remove("account_for");
    }
    PARASIM_RETURN_IF_ERROR(ApplySet(root, m.key + "=" + m.value, &ctx));
  }
  return ScenarioFromNode(root, ctx, Cat());
}

// The scenario's layout exported as Megatron-LM flags, imported again with the scenario's own
// cluster block, and the keys the flags cannot carry set back as they were.
StatusOr<Scenario> RoundTrip(const std::string& file, const LaunchConfig& l) {
  PARASIM_ASSIGN_OR_RETURN(MegatronArgs args, ParseMegatronArgs("launch.sh", MegatronScript(l)));
  PARASIM_ASSIGN_OR_RETURN(YAML::Node original, LoadYamlFile(file));
  ImportOptions o;
  o.gpu = original["cluster"]["gpu"].IsScalar() ? original["cluster"]["gpu"].Scalar()
                                                : "h100-sxm5-80gb";
  PARASIM_ASSIGN_OR_RETURN(ImportedScenario imported, ImportMegatron(args, o, Cat()));
  return Reimported(imported, original, l.megatron_missing);
}

TEST_CASE(
    "round trip: every example's layout, exported as Megatron-LM flags and imported "
    "again with its cluster, predicts the same step and peak memory") {
  const std::vector<std::string> files = Examples();
  REQUIRE(files.size() >= 10);
  for (const std::string& file : files) {
    CAPTURE(file);
    auto s = LoadScenario(file, {}, Cat());
    REQUIRE_MESSAGE(s.ok(), s.status().message());
    const LaunchConfig l = ExportLaunch(*s);
    std::string missing;
    for (const NotExported& m : l.megatron_missing) missing += m.key + "=" + m.value + " ";
    CAPTURE(missing);
    auto back = RoundTrip(file, l);
    REQUIRE_MESSAGE(back.ok(), back.status().message());
    CheckSamePrediction(*s, *back);
  }
}

TEST_CASE(
    "the attention's dropout goes out as Megatron-LM's flag and comes back, on Blackwell too") {
  // On a GB200, deterministic training with attention dropout runs FlashAttention 2's kernels
  // (TrainingAttentionKernel): the flag decides the prediction, so it must come back the same.
  const std::string file =
      std::string(std::getenv("TEST_SRCDIR")) + "/parasim/scenarios/llama3-405b-gb200-nvl72.yaml";
  double step_none = 0, step_drop = 0;
  for (const char* dropout : {"", "0.1", "0"}) {
    CAPTURE(dropout);
    std::vector<std::string> set = {"training.deterministic=true"};
    if (*dropout) set.push_back(std::string("training.attention_dropout=") + dropout);
    auto s = LoadScenario(file, set, Cat());
    REQUIRE_MESSAGE(s.ok(), s.status().message());
    const LaunchConfig l = ExportLaunch(*s);
    // Unstated, Llama's own convention (no dropout) goes out as 0, not left to the import's 0.1.
    const std::string want = *dropout ? dropout : "0";
    const auto at = std::find(l.megatron.begin(), l.megatron.end(), "--attention-dropout");
    REQUIRE(at != l.megatron.end());
    CHECK(*(at + 1) == want);
    auto back = RoundTrip(file, l);
    REQUIRE_MESSAGE(back.ok(), back.status().message());
    CheckSamePrediction(*s, *back);
    auto r = SimulateStep(s->model, s->training, s->layout, s->cluster, {});
    REQUIRE(r.ok());
    (std::string(dropout) == "0.1" ? step_drop : step_none) = r->step_time_s;
  }
  CHECK(step_drop > step_none);  // FlashAttention 2's kernels: a longer step
  // torchtitan's attention drops out nothing, and its import leaves the key to the model: a
  // dropout, or a stated 0 on a model that drops out of itself (GPT-3's GELU), is listed.
  const std::string gpt3 =
      std::string(std::getenv("TEST_SRCDIR")) + "/parasim/scenarios/gpt3-175b-1024-a100.yaml";
  for (const char* v : {"0", "0.1"}) {
    CAPTURE(v);
    auto s = LoadScenario(gpt3, {std::string("training.attention_dropout=") + v}, Cat());
    REQUIRE_MESSAGE(s.ok(), s.status().message());
    bool listed = false;
    for (const NotExported& m : ExportLaunch(*s).torchtitan_missing) {
      listed = listed || (m.key == "training.attention_dropout" && m.value == v);
    }
    CHECK(listed);
  }
  auto unset = LoadScenario(gpt3, {}, Cat());
  REQUIRE(unset.ok());
  for (const NotExported& m : ExportLaunch(*unset).torchtitan_missing) {
    CHECK(m.key != "training.attention_dropout");
  }
}

TEST_CASE("a hybrid model's pipeline goes out as '|' segments of its pattern and comes back") {
  const std::string file = std::string(std::getenv("TEST_SRCDIR")) +
                           "/parasim/scenarios/nemotron3-nano-hybrid-64-h100.yaml";
  // Two stages of two virtual stages each: four segments of 13 layers.
  auto s = LoadScenario(file,
                        {"parallelism.pp=2", "parallelism.dp=32", "training.global_batch=256",
                         "parallelism.schedule=interleaved-1f1b", "parallelism.virtual_stages=2"},
                        Cat());
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  const LaunchConfig l = ExportLaunch(*s);
  const std::string script = MegatronScript(l);
  CHECK(script.find("pretrain_hybrid.py") != std::string::npos);
  CHECK(script.find(
            "--hybrid-layer-pattern 'MEMEM*EMEMEM*|EMEMEM*EMEMEM|*EMEMEM*EMEME|MEM*EMEMEMEME'") !=
        std::string::npos);
  CHECK(script.find("--pipeline-model-parallel-layout") == std::string::npos);
  CHECK(script.find("--num-virtual-stages-per-pipeline-rank") == std::string::npos);
  CHECK(script.find("--mamba-num-heads 64") != std::string::npos);
  auto back = RoundTrip(file, l);
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  CHECK(back->model.hybrid == s->model.hybrid);
  CHECK(back->layout.virtual_stages == 2);
  CHECK(back->layout.stage_layers == std::vector<int>{26, 26});
  auto a = SimulateStep(s->model, s->training, s->layout, s->cluster, {});
  auto b = SimulateStep(back->model, back->training, back->layout, back->cluster, {});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->step_time_s == b->step_time_s);
}

TEST_CASE("interleaving's micro-batch group goes out as Megatron-LM's flag and comes back") {
  const std::string file =
      std::string(std::getenv("TEST_SRCDIR")) + "/parasim/scenarios/gpt3-175b-1024-a100.yaml";
  // 96 micro-batches on 8 stages, two chunks each, run in groups of 12.
  auto s = LoadScenario(file,
                        {"parallelism.schedule=interleaved-1f1b", "parallelism.virtual_stages=2",
                         "parallelism.microbatch_group=12"},
                        Cat());
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  const LaunchConfig l = ExportLaunch(*s);
  const std::string script = MegatronScript(l);
  CHECK(script.find("--microbatch-group-size-per-virtual-pipeline-stage 12") != std::string::npos);
  auto args = ParseMegatronArgs("launch.sh", script);
  REQUIRE(args.ok());
  ImportOptions o;
  o.gpu = "a100-sxm4-80gb";
  auto back = ImportMegatron(*args, o, Cat());
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  CHECK(back->scenario.layout.microbatch_group == 12);
  CHECK(back->scenario.layout.virtual_stages == 2);
  // The group changes the order: a different step than groups of pp.
  auto grouped = SimulateStep(s->model, s->training, s->layout, s->cluster, {});
  Layout sc21 = s->layout;
  sc21.microbatch_group = 0;
  auto plain = SimulateStep(s->model, s->training, sc21, s->cluster, {});
  REQUIRE(grouped.ok());
  REQUIRE(plain.ok());
  CHECK(grouped->step_time_s != plain->step_time_s);
}

TEST_CASE("the distributed optimizer's start gathers go out as Megatron-LM's flag, or are listed") {
  const std::string file =
      std::string(std::getenv("TEST_SRCDIR")) + "/parasim/scenarios/gpt3-175b-1024-a100.yaml";
  auto missing = [](const LaunchConfig& l) {
    for (const NotExported& m : l.megatron_missing) {
      if (m.key == "parallelism.param_gather") return true;
    }
    return false;
  };
  // Interleaved, gathered on demand: --no-align-param-gather, and back the same step.
  auto s = LoadScenario(file,
                        {"parallelism.schedule=interleaved-1f1b", "parallelism.virtual_stages=2",
                         "parallelism.param_gather=on_demand"},
                        Cat());
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  const LaunchConfig l = ExportLaunch(*s);
  const std::string script = MegatronScript(l);
  CHECK(script.find("--no-align-param-gather") != std::string::npos);
  CHECK_FALSE(missing(l));
  auto back = RoundTrip(file, l);
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  CHECK(back->layout.param_gather == Layout::ParamGather::kOnDemand);
  auto a = SimulateStep(s->model, s->training, s->layout, s->cluster, {});
  auto b = SimulateStep(back->model, back->training, back->layout, back->cluster, {});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->step_time_s == b->step_time_s);
  // And the flag matters: aligned, the interleaved schedule's default, is another step.
  auto al = LoadScenario(
      file, {"parallelism.schedule=interleaved-1f1b", "parallelism.virtual_stages=2"}, Cat());
  REQUIRE(al.ok());
  auto c = SimulateStep(al->model, al->training, al->layout, al->cluster, {});
  REQUIRE(c.ok());
  CHECK(c->step_time_s != a->step_time_s);
  // The schedule's own default says nothing; Megatron-Core 0.8's chain has no flag.
  auto def = LoadScenario(file, {"parallelism.param_gather=on_demand"}, Cat());
  REQUIRE(def.ok());
  const LaunchConfig dl = ExportLaunch(*def);
  CHECK(MegatronScript(dl).find("align-param-gather") == std::string::npos);
  CHECK_FALSE(missing(dl));
  auto chained = LoadScenario(file, {"parallelism.param_gather=chained"}, Cat());
  REQUIRE(chained.ok());
  CHECK(missing(ExportLaunch(*chained)));
}

TEST_CASE("an uneven default split goes out as the layout it is") {
  // 80 layers over pp 3 split 27, 27, 26: Megatron-LM refuses layers that pp does not divide
  // unless a layout places them, and the export wrote none. It now writes the split as a layout,
  // which comes back the same.
  const std::string file = std::string(std::getenv("TEST_TMPDIR")) + "/pp3.yaml";
  std::ofstream(file) << "cluster: {gpu: h100-sxm5-80gb, nodes: 6, gpus_per_node: 8, "
                         "intra_node: nvlink4-h100, inter_node: ib-ndr-400g}\n"
                         "model: llama3-70b\n"
                         "training: {seq_len: 8192, global_batch: 256, micro_batch: 1}\n"
                         "parallelism: {tp: 8, pp: 3, dp: 2, sp: true, zero: 1}\n";
  auto s = LoadScenario(file, {}, Cat());
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  const LaunchConfig l = ExportLaunch(*s);
  const std::string script = MegatronScript(l);
  CHECK(script.find("--pipeline-model-parallel-layout 'Et*27|t*27|t*26L'") != std::string::npos);
  auto back = RoundTrip(file, l);
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  CheckSamePrediction(*s, *back);
}

TEST_CASE("what the flags cannot carry is listed with why") {
  auto s = LoadScenario(
      std::string(std::getenv("TEST_SRCDIR")) + "/parasim/scenarios/deepseek-v3-2048-h800.yaml", {},
      Cat());
  REQUIRE(s.ok());
  const LaunchConfig l = ExportLaunch(*s);
  bool schedule = false;
  for (const NotExported& m : l.megatron_missing) schedule |= m.key == "parallelism.schedule";
  CHECK(schedule);  // DualPipe
  const std::string script = MegatronScript(l);
  CHECK(script.find("torchrun --nnodes 256 --nproc-per-node 8 pretrain_gpt.py") == 0);
  CHECK(script.find("--moe-router-group-topk 4") != std::string::npos);
  CHECK(script.find("--fp8-recipe blockwise") != std::string::npos);
  CHECK(script.find("--pipeline-model-parallel-layout 'Et*4|") != std::string::npos);
  const std::string toml = TorchtitanToml(l);
  CHECK(toml.find("name = \"deepseek_v3\"") != std::string::npos);
  CHECK(toml.find("pipeline_parallel_degree = 16") != std::string::npos);
}

TEST_CASE("node-limited routing goes out as the groups the EP ranks' nodes make, and comes back") {
  const std::string file =
      std::string(std::getenv("TEST_SRCDIR")) + "/parasim/scenarios/mixtral-8x7b-ep-32-h100.yaml";
  // TP2 EP8 on 8-GPU nodes: the EP group's ranks are two apart and span two nodes, though EP is
  // only a node's GPU count (the export wrote one group, which the import could not read).
  auto s = LoadScenario(file, {"model.moe.node_limit=1"}, Cat());
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  const LaunchConfig l = ExportLaunch(*s);
  const std::string script = MegatronScript(l);
  CHECK(script.find("--moe-router-num-groups 2") != std::string::npos);
  CHECK(script.find("--moe-router-group-topk 1") != std::string::npos);
  // Sent once to each node: the flex dispatcher's (DeepEP), not alltoall's copy per expert.
  CHECK(script.find("--moe-token-dispatcher-type flex") != std::string::npos);
  auto back = RoundTrip(file, l);
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  CHECK(back->model.moe.node_limit == 1);
  CheckSamePrediction(*s, *back);
  // And the limit matters here: without it the step is another.
  auto free = LoadScenario(file, {}, Cat());
  REQUIRE(free.ok());
  auto a = SimulateStep(s->model, s->training, s->layout, s->cluster, {});
  auto b = SimulateStep(free->model, free->training, free->layout, free->cluster, {});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->step_time_s != b->step_time_s);
  // With the experts' TP at 1 the same EP8 fits one node, where the limit changes nothing: no
  // groups to write, and the same step back.
  auto one = LoadScenario(file, {"model.moe.node_limit=1", "parallelism.etp=1"}, Cat());
  REQUIRE_MESSAGE(one.ok(), one.status().message());
  const LaunchConfig lo = ExportLaunch(*one);
  CHECK(MegatronScript(lo).find("--moe-router-num-groups") == std::string::npos);
  auto one_back = RoundTrip(file, lo);
  REQUIRE_MESSAGE(one_back.ok(), one_back.status().message());
  CheckSamePrediction(*one, *one_back);
  // A limit of the group's two nodes or more limits nothing: the flex dispatcher without groups
  // (a limit of 4 had gone out as 4 groups, more than there are, which Megatron-LM and the
  // import refuse; then as 2 of 2 groups, flags a flex launch without groups never had), and
  // the same step comes back, the import's limit every node the EP group spans.
  for (const char* limit : {"model.moe.node_limit=4", "model.moe.node_limit=2"}) {
    auto wide = LoadScenario(file, {limit}, Cat());
    REQUIRE_MESSAGE(wide.ok(), wide.status().message());
    const std::string ws = MegatronScript(ExportLaunch(*wide));
    CHECK(ws.find("--moe-token-dispatcher-type flex") != std::string::npos);
    CHECK(ws.find("--moe-router-num-groups") == std::string::npos);
    CHECK(ws.find("--moe-router-group-topk") == std::string::npos);
    auto wide_back = RoundTrip(file, ExportLaunch(*wide));
    REQUIRE_MESSAGE(wide_back.ok(), wide_back.status().message());
    CHECK(wide_back->model.moe.node_limit == 2);
    CheckSamePrediction(*wide, *wide_back);
  }
}
TEST_CASE("the optimizer's state types go out as the precision-aware optimizer's flags") {
  const std::string file =
      std::string(std::getenv("TEST_SRCDIR")) + "/parasim/scenarios/llama3-70b-64-h100.yaml";
  auto missing = [](const LaunchConfig& l, const std::string& key) {
    for (const NotExported& m : l.megatron_missing) {
      if (m.key == key) return true;
    }
    return false;
  };
  // The remainder master alone: the flag, and the same prediction back.
  auto s = LoadScenario(file, {"training.master_weights=remainder"}, Cat());
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  const LaunchConfig l = ExportLaunch(*s);
  CHECK(MegatronScript(l).find("--use-precision-aware-optimizer") != std::string::npos);
  CHECK_FALSE(missing(l, "training.master_weights"));
  auto back = RoundTrip(file, l);
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  CHECK(back->training.master_weights == MasterWeights::kRemainder);
  CheckSamePrediction(*s, *back);
  // bf16 moments beside a whole fp32 master under bf16: the flag that gives the moments takes
  // the master's upper half, so the master is listed as not carried.
  auto m = LoadScenario(file, {"training.moments=bf16"}, Cat());
  REQUIRE(m.ok());
  const LaunchConfig ml = ExportLaunch(*m);
  CHECK(missing(ml, "training.master_weights"));
  auto mback = RoundTrip(file, ml);
  REQUIRE_MESSAGE(mback.ok(), mback.status().message());
  CheckSamePrediction(*m, *mback);
  // Without the distributed optimizer Megatron-Core refuses the flag: listed, not written.
  auto plain =
      LoadScenario(file, {"training.master_weights=remainder", "parallelism.zero=0"}, Cat());
  REQUIRE_MESSAGE(plain.ok(), plain.status().message());
  const LaunchConfig pl = ExportLaunch(*plain);
  CHECK(MegatronScript(pl).find("--use-precision-aware-optimizer") == std::string::npos);
  CHECK(missing(pl, "training.master_weights"));
  auto pback = RoundTrip(file, pl);
  REQUIRE_MESSAGE(pback.ok(), pback.status().message());
  CheckSamePrediction(*plain, *pback);
  // An fp16 master goes out as --main-params-dtype.
  auto h = LoadScenario(file, {"training.master_weights=fp16"}, Cat());
  REQUIRE(h.ok());
  CHECK(MegatronScript(ExportLaunch(*h)).find("--main-params-dtype fp16") != std::string::npos);
  // torchtitan keeps an fp32 master: listed.
  bool titan = false;
  for (const NotExported& n : l.torchtitan_missing) titan |= n.key == "training.master_weights";
  CHECK(titan);
}

// The scenario exported as a torchtitan config, imported again with its cluster, and the keys
// the config cannot carry set back as they were.
StatusOr<Scenario> TorchtitanRoundTrip(const std::string& file, const LaunchConfig& l) {
  PARASIM_ASSIGN_OR_RETURN(YAML::Node original, LoadYamlFile(file));
  ImportOptions o;
  o.gpu = original["cluster"]["gpu"].Scalar();
  o.nodes = l.nodes;
  o.gpus_per_node = l.gpus_per_node;
  PARASIM_ASSIGN_OR_RETURN(ImportedScenario imported,
                           ImportTorchtitan("job.toml", TorchtitanToml(l), o, Cat()));
  return Reimported(imported, original, l.torchtitan_missing);
}

TEST_CASE(
    "round trip through torchtitan: every key the config cannot carry is listed, so the "
    "prediction comes back the same") {
  const std::string file =
      std::string(std::getenv("TEST_SRCDIR")) + "/parasim/scenarios/llama3-70b-64-h100.yaml";
  // The keys a bug hunt and a review found dropped (2026-11-29).
  const std::vector<std::vector<std::string>> cases = {
      {"training.transformer_engine=false", "training.attention=standard"},
      {"parallelism.stage_layers=[38, 42]"},
      {"training.moments=bf16", "training.cross_entropy=fused", "training.deterministic=true"},
      {"training.optimizer=sgd", "training.grad_accumulation=separate"},
      {"parallelism.bucket=40MB", "parallelism.sp=false"},
      {"parallelism.schedule=interleaved-1f1b", "parallelism.virtual_stages=4"},
      {"parallelism.schedule=interleaved-1f1b", "parallelism.virtual_stages=5"},
      {"parallelism.schedule=interleaved-1f1b", "parallelism.virtual_stages=8"},
      {"parallelism.pp=1", "parallelism.dp=4", "parallelism.cp=2", "parallelism.cp_comm=all_gather",
       "parallelism.zero=3"},
      // Found by a bug hunt (2026-11-30): tf32 went out as bfloat16 unlisted; FSDP2 over the CP
      // ranks alone (dp 1) was listed as sharding nothing; a zero-0 CP layout reads back as 3.
      {"training.precision=tf32"},
      {"parallelism.pp=1", "parallelism.dp=1", "parallelism.cp=8", "parallelism.zero=3"},
      {"parallelism.pp=1", "parallelism.dp=1", "parallelism.cp=8", "parallelism.zero=0"},
      // Found by a bug hunt (2026-11-30, session 11): recompute_layers went out as every layer
      // (0 of them: none; 7 of a chunk's 40: no every-N-th count), unlisted.
      {"training.recompute=full", "training.recompute_layers=0"},
      {"training.recompute=full", "training.recompute_layers=7"},
      {"training.recompute=full", "training.recompute_layers=10"},
      // FP8 weights gathered as FP8: under the distributed optimizer, and listed where
      // Megatron-LM would not gather them so (no sharded optimizer).
      {"training.precision=fp8", "training.fp8_param_gather=true"},
      {"training.precision=fp8", "training.fp8_param_gather=true", "parallelism.zero=0"},
      // Listed as "..." (YAML's null), which could not be set back.
      {"parallelism.compression=topk:0.01", "parallelism.order=[pp, tp, cp, ep, dp]"},
      // FSDP2's resharding: under PP held to the step's end and reduced once a step (the
      // default) or freed after each forward ("always"); without PP freed after each backward
      // ("never"); what torchtitan cannot run is listed.
      {"parallelism.zero=3", "parallelism.tp=4", "parallelism.pp=4", "parallelism.dp=4",
       "parallelism.zero3_reshard=step", "parallelism.grad_reduce=step"},
      {"parallelism.zero=3", "parallelism.tp=4", "parallelism.pp=4", "parallelism.dp=4",
       "parallelism.grad_reduce=step"},
      {"parallelism.zero=3", "parallelism.tp=4", "parallelism.pp=4", "parallelism.dp=4"},
      {"parallelism.zero=3", "parallelism.tp=4", "parallelism.pp=4", "parallelism.dp=4",
       "parallelism.zero3_reshard=backward", "parallelism.grad_reduce=step"},
      {"parallelism.pp=1", "parallelism.dp=8", "parallelism.zero=3",
       "parallelism.zero3_reshard=backward"},
      {"parallelism.pp=1", "parallelism.dp=8", "parallelism.zero=3",
       "parallelism.zero3_reshard=step"},
      // The attention's dropout: the materialised softmax's mask (Llama drops out nothing of
      // itself); Megatron-LM's flag carries it, torchtitan's models drop out nothing.
      {"training.attention=standard", "training.attention_dropout=0.1"},
      {"training.attention=standard", "training.attention_dropout=0"},
      {"training.deterministic=true", "training.attention_dropout=0.2"},
  };
  for (const std::vector<std::string>& set : cases) {
    std::string label;
    for (const std::string& kv : set) label += kv + " ";
    CAPTURE(label);
    auto s = LoadScenario(file, set, Cat());
    REQUIRE_MESSAGE(s.ok(), s.status().message());
    const LaunchConfig l = ExportLaunch(*s);
    std::string missing;
    for (const NotExported& m : l.torchtitan_missing) missing += m.key + "=" + m.value + " ";
    CAPTURE(missing);
    CAPTURE(TorchtitanToml(l));
    auto back = TorchtitanRoundTrip(file, l);
    REQUIRE_MESSAGE(back.ok(), back.status().message());
    CheckSamePrediction(*s, *back);
    // The Megatron-LM flags too, with their own list.
    auto mback = RoundTrip(file, l);
    REQUIRE_MESSAGE(mback.ok(), mback.status().message());
    CheckSamePrediction(*s, *mback);
  }
}

TEST_CASE("torchtitan's flavors: DeepSeek-V3's MTP module and a run's length are listed") {
  // torchtitan's DeepSeek-V3 trains no multi-token-prediction module: the catalog model's depth
  // 1 went out as the flavor unlisted (read back as 0: 18.902 -> 17.884 s), and the same model
  // at depth 0 (the flavor itself) was refused as having no flavor.
  const std::string dir = std::string(std::getenv("TEST_SRCDIR")) + "/parasim/scenarios/";
  const std::string ds = dir + "deepseek-v3-2048-h800.yaml";
  auto d = LoadScenario(ds, {}, Cat());
  REQUIRE(d.ok());
  REQUIRE(d->model.mtp_depth == 1);
  const LaunchConfig l = ExportLaunch(*d);
  CHECK(TorchtitanToml(l).find("flavor = \"671B\"") != std::string::npos);
  bool mtp = false;
  for (const NotExported& m : l.torchtitan_missing) mtp |= m.key == "model.mtp_depth";
  CHECK(mtp);
  auto back = TorchtitanRoundTrip(ds, l);
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  CheckSamePrediction(*d, *back);
  auto flavor = LoadScenario(ds, {"model.mtp_depth=0"}, Cat());
  REQUIRE(flavor.ok());
  const LaunchConfig lf = ExportLaunch(*flavor);
  CHECK(TorchtitanToml(lf).find("flavor = \"671B\"") != std::string::npos);
  for (const NotExported& m : lf.torchtitan_missing) {
    CHECK(m.key != "model");
    CHECK(m.key != "model.mtp_depth");
  }
  // A model changed otherwise has no flavor.
  auto other = LoadScenario(ds, {"model.mtp_depth=0", "model.vocab=129024"}, Cat());
  REQUIRE(other.ok());
  bool unnamed = false;
  for (const NotExported& m : ExportLaunch(*other).torchtitan_missing) unnamed |= m.key == "model";
  CHECK(unnamed);
  // A run of tokens that is no whole number of steps is listed (its time to train was lost).
  auto t = LoadScenario(dir + "llama3-70b-64-h100.yaml", {}, Cat());
  REQUIRE(t.ok());
  bool tokens = false;
  for (const NotExported& m : ExportLaunch(*t).torchtitan_missing) {
    tokens |= m.key == "training.tokens" && m.value == "1000000000000";
  }
  CHECK(tokens);
}

TEST_CASE("torchtitan's less-layer counts carry account_for; every example imports back") {
  // The embedding and the output counted as a layer each are torchtitan's first/last stage
  // less-layer counts: the Qwen3 example (94 + 2 layers over 8 x 4 stages) went out without
  // them and could not be imported; the Llama 3 405B example's stage_layers are listed and its
  // default two stages a rank import.
  const std::string dir = std::string(std::getenv("TEST_SRCDIR")) + "/parasim/scenarios/";
  auto q = LoadScenario(dir + "qwen3-235b-folded-256-h100.yaml", {}, Cat());
  REQUIRE_MESSAGE(q.ok(), q.status().message());
  const LaunchConfig lq = ExportLaunch(*q);
  const std::string toml = TorchtitanToml(lq);
  CHECK(toml.find("pipeline_parallel_first_stage_less_layers = 1") != std::string::npos);
  CHECK(toml.find("pipeline_parallel_layers_per_stage = 3") != std::string::npos);
  for (const NotExported& m : lq.torchtitan_missing) CHECK(m.key != "parallelism.account_for");
  auto back = TorchtitanRoundTrip(dir + "qwen3-235b-folded-256-h100.yaml", lq);
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  CHECK(back->layout.split_embedding);
  CHECK(back->layout.split_loss);
  CHECK(back->layout.virtual_stages == 4);
  // Under 1F1B too: torchtitan's defaults (1 and 1) would split 80 layers over pp 4 as 20, 21,
  // 20 and 19; parasim's even split goes out as 0 and 0.
  auto plain =
      LoadScenario(dir + "llama3-70b-64-h100.yaml",
                   {"parallelism.pp=4", "parallelism.dp=2", "parallelism.schedule=1f1b"}, Cat());
  REQUIRE_MESSAGE(plain.ok(), plain.status().message());
  const std::string plain_toml = TorchtitanToml(ExportLaunch(*plain));
  CHECK(plain_toml.find("pipeline_parallel_first_stage_less_layers = 0") != std::string::npos);
  CHECK(plain_toml.find("pipeline_parallel_last_stage_less_layers = 0") != std::string::npos);
  auto l405 = LoadScenario(dir + "llama3-405b-16k-h100.yaml", {}, Cat());
  REQUIRE(l405.ok());
  const LaunchConfig l = ExportLaunch(*l405);
  ImportOptions o;
  o.gpu = "h100-sxm5-80gb";
  o.nodes = l.nodes;
  o.gpus_per_node = l.gpus_per_node;
  auto imported = ImportTorchtitan("job.toml", TorchtitanToml(l), o, Cat());
  REQUIRE_MESSAGE(imported.ok(), imported.status().message());
  CHECK(imported->yaml.find("virtual_stages: 2") != std::string::npos);
  CHECK(imported->yaml.find("account_for: [embedding, loss]") != std::string::npos);
}

TEST_CASE("the experts' all-to-all overlap goes out only where Megatron-Core runs it") {
  // Under DualPipe at pp 2 (no virtual stages: Megatron-Core refuses) and beside full recompute
  // it went out, and the import refused its own export (at the wrong flag).
  const std::string dir = std::string(std::getenv("TEST_SRCDIR")) + "/parasim/scenarios/";
  const std::string ds = dir + "deepseek-v3-2048-h800.yaml";
  for (const std::vector<std::string>& set : std::vector<std::vector<std::string>>{
           {"parallelism.overlap.ep=true"},
           {"parallelism.overlap.ep=true", "training.recompute=full"}}) {
    auto s = LoadScenario(ds, set, Cat());
    REQUIRE_MESSAGE(s.ok(), s.status().message());
    const LaunchConfig l = ExportLaunch(*s);
    CHECK(MegatronScript(l).find("--overlap-moe-expert-parallel-comm") == std::string::npos);
    bool listed = false;
    for (const NotExported& m : l.megatron_missing) listed |= m.key == "parallelism.overlap.ep";
    CHECK(listed);
    auto args = ParseMegatronArgs("launch.sh", MegatronScript(l));
    REQUIRE(args.ok());
    auto back = ImportMegatron(*args, {.gpu = "h800-sxm5-80gb"}, Cat());
    CHECK_MESSAGE(back.ok(), back.status().message());
  }
}

TEST_CASE("Megatron-LM's flags never pair Torch FSDP2 with pipeline parallelism") {
  // megatron/training/arguments.py refuses the pair.
  auto s = LoadScenario(
      std::string(std::getenv("TEST_SRCDIR")) + "/parasim/scenarios/llama3-70b-64-h100.yaml",
      {"parallelism.zero=3", "parallelism.pp=2", "parallelism.dp=4"}, Cat());
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  const LaunchConfig l = ExportLaunch(*s);
  const std::string script = MegatronScript(l);
  CHECK(script.find("--use-torch-fsdp2") == std::string::npos);
  bool listed = false;
  for (const NotExported& m : l.megatron_missing) listed |= m.key == "parallelism.zero";
  CHECK(listed);
  auto args = ParseMegatronArgs("launch.sh", script);
  REQUIRE(args.ok());
  CHECK(ImportMegatron(*args, {.gpu = "h100-sxm5-80gb"}, Cat()).ok());
  // Where it runs FSDP2 (pp 1), with the flags Megatron-LM asks beside it: untied embeddings,
  // no gradient-accumulation fusion, no --overlap-param-gather (its distributed optimizer's);
  // the same prediction comes back. Tied embeddings and fp16 it refuses: listed.
  const std::string file =
      std::string(std::getenv("TEST_SRCDIR")) + "/parasim/scenarios/llama3-70b-64-h100.yaml";
  auto f =
      LoadScenario(file, {"parallelism.zero=3", "parallelism.pp=1", "parallelism.dp=8"}, Cat());
  REQUIRE_MESSAGE(f.ok(), f.status().message());
  const LaunchConfig lf = ExportLaunch(*f);
  const std::string fs = MegatronScript(lf);
  CHECK(fs.find("--use-torch-fsdp2") != std::string::npos);
  CHECK(fs.find("--untie-embeddings-and-output-weights") != std::string::npos);
  CHECK(fs.find("--no-gradient-accumulation-fusion") != std::string::npos);
  CHECK(fs.find("--overlap-param-gather") == std::string::npos);
  auto back = RoundTrip(file, lf);
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  CheckSamePrediction(*f, *back);
  for (const char* refused : {"model.tied_embeddings=true", "training.precision=fp16"}) {
    CAPTURE(refused);
    auto t = LoadScenario(
        file, {"parallelism.zero=3", "parallelism.pp=1", "parallelism.dp=8", refused}, Cat());
    REQUIRE_MESSAGE(t.ok(), t.status().message());
    const LaunchConfig lt = ExportLaunch(*t);
    CHECK(MegatronScript(lt).find("--use-torch-fsdp2") == std::string::npos);
    bool zero = false;
    for (const NotExported& m : lt.megatron_missing) zero |= m.key == "parallelism.zero";
    CHECK(zero);
  }
}

}  // namespace
}  // namespace parasim
