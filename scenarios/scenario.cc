#include "scenarios/scenario.h"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>

#include "scenarios/cluster_block.h"
#include "scenarios/model_block.h"
#include "scenarios/parallelism_block.h"
#include "scenarios/reliability_block.h"
#include "scenarios/sweep_block.h"
#include "scenarios/training_block.h"
#include "sim/yaml_reader.h"
#include "strategies/schedule.h"

namespace parasim {
namespace {

// dp = auto: the cluster's GPUs over tp*pp*cp, which must divide them.
Status ResolveDpAuto(const YamlContext& ctx, const YAML::Node& par, Scenario* s) {
  const int64_t denom = static_cast<int64_t>(s->layout.tp) * s->layout.pp * s->layout.cp;
  if (s->cluster.gpus() % denom != 0) {
    // At the dp key that asks for it (the file's, or the --set that made it auto).
    YAML::Node n = par.IsDefined() && par.IsMap() && par["dp"].IsDefined() ? par["dp"] : par;
    return ctx.ErrorAt(
        n, "parallelism.dp",
        fmt::format("dp = auto needs tp*pp*cp = {}*{}*{} = {} to divide the "
                    "cluster's {} GPUs",
                    s->layout.tp, s->layout.pp, s->layout.cp, denom, s->cluster.gpus()));
  }
  s->layout.dp = s->cluster.gpus() / denom;
  return Status::Ok();
}

// The sweep block, with each of its clusters checked against the training's number format.
Status ReadSweep(const YamlContext& ctx, const YAML::Node& root, const MapReader& top,
                 const Catalogs& cat, const std::string& dir, Scenario* s) {
  SweepSpec sw;
  PARASIM_RETURN_IF_ERROR(ParseSweepBlock(ctx, root, cat, dir, &sw));
  for (const SweepHardware& h : sw.hardware) {
    PARASIM_RETURN_IF_ERROR(
        CheckPrecisionOnGpu(ctx, top.Node("training"), s->training, h.cluster.gpu, h.label));
  }
  // What the objective ranks by must exist (ParseSweepBlock checks each swept cluster's price):
  // the scenario's own cluster's price, and a token count to train on (without them the sweep
  // had ranked by throughput without a word, costs and times null).
  const YAML::Node block = top.Node("sweep");
  YAML::Node at;
  at.reset(block.IsMap() && block["objective"].IsDefined() ? block["objective"] : block);
  if (sw.objective == Objective::kCost && sw.hardware.empty() && s->cluster.gpu_hour_cost <= 0) {
    return ctx.ErrorAt(at, "sweep.objective",
                       "cost ranks layouts by tokens per unit of cost, but the cluster has no "
                       "price: give cluster.gpu_hour_cost (per GPU-hour), or objective: "
                       "throughput");
  }
  if (sw.objective == Objective::kTimeToTrain && s->training.tokens <= 0) {
    return ctx.ErrorAt(at, "sweep.objective",
                       "time_to_train needs the tokens to train on: give training.tokens (e.g. "
                       "1e12), or objective: throughput");
  }
  s->sweep = sw;
  return Status::Ok();
}

// A learned position table holds model.max_position positions and no more: a longer sequence
// has no embedding (Megatron-LM refuses it: megatron/training/arguments.py, validate_args,
// max_position_embeddings >= seq_length). Each model a co-design sweep trains is checked, the
// scenario's own where the sweep keeps it.
Status CheckLearnedPositions(const YamlContext& ctx, const MapReader& top, const Scenario& s) {
  std::vector<std::pair<const ModelSpec*, std::string>> models;
  if (s.sweep && !s.sweep->hardware.empty()) {
    for (const SweepHardware& h : s.sweep->hardware) models.push_back({&h.model, h.label});
  } else {
    models.push_back({&s.model, ""});
  }
  for (const auto& [m, label] : models) {
    if (m->position != PositionKind::kLearned || m->max_position <= 0 ||
        s.training.seq_len <= m->max_position) {
      continue;
    }
    const YAML::Node t = top.Node("training");
    YAML::Node n;
    n.reset(t.IsMap() && t["seq_len"].IsDefined() ? t["seq_len"] : t);
    return ctx.ErrorAt(
        n, "training.seq_len",
        fmt::format("{} tokens is longer than {}'s {} learned positions (model.max_position): "
                    "expected at most {}, or a larger model.max_position{}",
                    s.training.seq_len, m->id, m->max_position, m->max_position,
                    label.empty() ? "" : fmt::format(" (in the sweep's combination {})", label)));
  }
  return Status::Ok();
}

}  // namespace

const std::vector<std::string_view>& ScenarioKeys() {
  static const std::vector<std::string_view> kKeys = {
      "name", "cluster", "model", "training", "parallelism", "sweep", "reliability", "serving"};
  return kKeys;
}

Status ValidateLayout(const Scenario& s, const YamlContext& ctx, const YAML::Node& where) {
  const std::optional<LayoutProblem> problem = CheckLayout(s);
  if (!problem) return Status::Ok();
  // The key's own node when the parallelism block has it, else the block (or the file).
  // (Assigning to a missing key's node throws in yaml-cpp: bind with reset instead.)
  YAML::Node n;
  bool found = false;
  if (where.IsDefined() && where.IsMap()) {
    const YAML::Node child = where[problem->key];
    if (child.IsDefined()) {
      n.reset(child);
      found = true;
    }
  }
  if (!found) n.reset(where);
  return ctx.ErrorAt(n, "parallelism." + problem->key, problem->message);
}

StatusOr<Scenario> ScenarioFromNode(const YAML::Node& root, const YamlContext& ctx,
                                    const Catalogs& cat, bool keep_invalid_layout) {
  PARASIM_ASSIGN_OR_RETURN(MapReader top, MapReader::Open(ctx, root, "", ScenarioKeys()));
  if (top.Has("serving")) {
    // A serving scenario (scenarios/serving_scenario.h): `parasim serve` reads it.
    return ctx.ErrorAt(top.Node("serving"), "serving",
                       "a serving scenario (a serving block in place of training): run it with "
                       "`parasim serve` (or `parasim run`)");
  }
  Scenario s;
  s.file = ctx.file;
  PARASIM_RETURN_IF_ERROR(top.String("name", &s.name));
  for (auto k : {"cluster", "model", "training"}) PARASIM_RETURN_IF_ERROR(top.Require(k));
  std::string dir = std::filesystem::path(ctx.file).parent_path().string();
  PARASIM_RETURN_IF_ERROR(ParseCluster(ctx, top.Node("cluster"), cat, &s.cluster, dir));
  PARASIM_RETURN_IF_ERROR(ParseModel(ctx, top.Node("model"), cat, &s.model));
  PARASIM_RETURN_IF_ERROR(ParseTraining(ctx, top.Node("training"), &s.training));
  PARASIM_RETURN_IF_ERROR(
      CheckPrecisionOnGpu(ctx, top.Node("training"), s.training, s.cluster.gpu, ""));
  YAML::Node par = top.Node("parallelism");
  if (par.IsDefined() && !par.IsNull()) {
    PARASIM_RETURN_IF_ERROR(ParseParallelism(ctx, par, &s));
  } else {
    s.dp_auto = true;
  }
  if (top.Has("sweep")) PARASIM_RETURN_IF_ERROR(ReadSweep(ctx, root, top, cat, dir, &s));
  if (top.Has("reliability")) {
    PARASIM_RETURN_IF_ERROR(ParseReliability(ctx, top.Node("reliability"), &s.reliability));
  }
  PARASIM_RETURN_IF_ERROR(CheckLearnedPositions(ctx, top, s));
  if (s.dp_auto) PARASIM_RETURN_IF_ERROR(ResolveDpAuto(ctx, par, &s));
  // Interleaving with one model chunk a stage is 1F1B, as Megatron-LM runs it without virtual
  // stages (a review: it had replayed 1.2% apart, its idle time read as host issue rather than
  // bubble), and as a sweep folds it. A sweep whose axes give the virtual stages keeps it.
  const bool swept_chunks =
      s.sweep && std::any_of(s.sweep->axes.begin(), s.sweep->axes.end(),
                             [](const auto& a) { return a.first == "virtual_stages"; });
  if (!swept_chunks) FoldSingleChunkInterleaving(&s.layout);
  // A scenario whose sweep block varies the layout is checked per layout by the sweep; the
  // fixed layout must still be valid when no sweep is present.
  const Status own = ValidateLayout(s, ctx, par.IsDefined() ? par : root);
  if (!s.sweep && !keep_invalid_layout) PARASIM_RETURN_IF_ERROR(own);
  s.fixed_layout = own;
  return s;
}

StatusOr<Scenario> LoadScenario(const YamlInput& input, const std::vector<std::string>& sets,
                                const Catalogs& cat) {
  PARASIM_ASSIGN_OR_RETURN(YAML::Node root, LoadYaml(input));
  YamlContext ctx{input.name, {}};
  PARASIM_RETURN_IF_ERROR(ApplyScenarioSets(sets, &root, &ctx));
  return ScenarioFromNode(root, ctx, cat);
}

}  // namespace parasim
