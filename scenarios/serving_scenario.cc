#include "scenarios/serving_scenario.h"

#include <fmt/core.h>

#include <filesystem>

#include "scenarios/cluster_block.h"
#include "scenarios/model_block.h"
#include "scenarios/serving_block.h"

namespace parasim {
namespace {

// A layout problem located at its key in the parallelism block ("prefill.tp" under prefill).
Status LocateLayout(const YamlContext& ctx, const YAML::Node& par, const YAML::Node& root,
                    const ServingLayoutProblem& p) {
  YAML::Node n;
  n.reset(par.IsDefined() && par.IsMap() ? par : root);
  std::string rest = p.key;
  for (size_t dot = rest.find('.'); n.IsMap(); dot = rest.find('.')) {
    const std::string step = rest.substr(0, dot);
    const YAML::Node child = n[step];
    if (!child.IsDefined()) break;
    n.reset(child);
    if (dot == std::string::npos) break;
    rest = rest.substr(dot + 1);
  }
  return ctx.ErrorAt(n, "parallelism." + p.key, p.message);
}

}  // namespace

const std::vector<std::string_view>& ServingScenarioKeys() {
  static const std::vector<std::string_view> kKeys = {"name",    "cluster",     "model",
                                                      "serving", "parallelism", "sweep"};
  return kKeys;
}

bool IsServingDocument(const YAML::Node& root) {
  return root.IsMap() && root["serving"].IsDefined();
}

bool IsServingScenario(const YamlInput& input) {
  StatusOr<YAML::Node> root = LoadYaml(input);
  return root.ok() && IsServingDocument(*root);
}

StatusOr<ServingScenario> ServingScenarioFromNode(const YAML::Node& root, const YamlContext& ctx,
                                                  const Catalogs& cat) {
  PARASIM_ASSIGN_OR_RETURN(MapReader top, MapReader::Open(ctx, root, "", ServingScenarioKeys()));
  ServingScenario s;
  s.file = ctx.file;
  PARASIM_RETURN_IF_ERROR(top.String("name", &s.name));
  for (auto k : {"cluster", "model", "serving"}) PARASIM_RETURN_IF_ERROR(top.Require(k));
  const std::string dir = std::filesystem::path(ctx.file).parent_path().string();
  PARASIM_RETURN_IF_ERROR(ParseCluster(ctx, top.Node("cluster"), cat, &s.cluster, dir));
  PARASIM_RETURN_IF_ERROR(ParseModel(ctx, top.Node("model"), cat, &s.model));
  if (s.model.is_hybrid()) {
    // A Mamba layer keeps a fixed state per sequence, not a KV cache that grows with it: the
    // serving replay's cache accounting is attention's only.
    const YAML::Node mn = top.Node("model");
    const YAML::Node at = mn.IsMap() && mn["hybrid"] ? mn["hybrid"] : mn;
    return ctx.ErrorAt(at, "model.hybrid",
                       "serving a hybrid (Mamba) model is not modelled: its layers keep a state "
                       "per sequence where the serving replay tracks a KV cache; serve a "
                       "transformer model");
  }
  PARASIM_RETURN_IF_ERROR(ParseServing(ctx, top.Node("serving"), dir, &s.serving));
  if (auto p = CheckServingPrecision(s.serving.precision, s.cluster.gpu)) {
    const YAML::Node sv = top.Node("serving");
    const char* key = sv[p->key].IsDefined() ? p->key.c_str() : "precision";
    const YAML::Node at = sv[key].IsDefined() ? sv[key] : sv;
    return ctx.ErrorAt(at, std::string("serving.") + key, p->message);
  }
  const YAML::Node par = top.Node("parallelism");
  PARASIM_RETURN_IF_ERROR(ParseServingLayout(ctx, par, s.cluster.gpus(), &s.serving.layout));
  if (top.Has("sweep")) {
    ServingSweepSpec sw;
    PARASIM_RETURN_IF_ERROR(ParseServingSweep(ctx, top.Node("sweep"), &sw));
    s.serving.sweep = sw;
    return s;
  }
  if (auto p = CheckServingLayout(s.serving.layout, s.model, s.cluster)) {
    return LocateLayout(ctx, par, root, *p);
  }
  return s;
}

StatusOr<ServingScenario> LoadServingScenario(const YamlInput& input,
                                              const std::vector<std::string>& sets,
                                              const Catalogs& cat) {
  PARASIM_ASSIGN_OR_RETURN(YAML::Node root, LoadYaml(input));
  YamlContext ctx{input.name, {}};
  PARASIM_RETURN_IF_ERROR(ApplyScenarioSets(sets, &root, &ctx));
  return ServingScenarioFromNode(root, ctx, cat);
}

}  // namespace parasim
