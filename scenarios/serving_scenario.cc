#include "scenarios/serving_scenario.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "scenarios/cluster_block.h"
#include "scenarios/model_block.h"
#include "scenarios/serving_block.h"
#include "sim/yaml_reader.h"

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

// A learned position table holds model.max_position positions: an engine refuses a request
// longer than that (vLLM's max_model_len), where the replay had served it without a word.
Status CheckLearnedContext(const YamlContext& ctx, const MapReader& top, const ServingScenario& s) {
  const ModelSpec& m = s.model;
  if (m.position != PositionKind::kLearned || m.max_position <= 0) return Status::Ok();
  const RequestSpec& rq = s.serving.requests;
  constexpr double kUnbounded = std::numeric_limits<double>::infinity();
  auto upper = [&](const LengthDist& d) {
    if (d.max > 0) return static_cast<double>(d.max);
    if (d.kind == LengthDist::Kind::kFixed) return d.a;
    return d.kind == LengthDist::Kind::kUniform ? d.b : kUnbounded;
  };
  double longest = upper(rq.input) + upper(rq.output);
  if (!rq.trace.empty()) {
    longest = 0;
    for (const TraceRow& t : rq.trace) {
      longest = std::max(longest, static_cast<double>(t.input + t.output));
    }
  }
  if (longest <= static_cast<double>(m.max_position)) return Status::Ok();
  const YAML::Node rn = top.Node("serving")["requests"];
  YAML::Node at;
  at.reset(rn.IsDefined() ? rn : top.Node("serving"));
  return ctx.ErrorAt(
      at, "serving.requests",
      std::isinf(longest)
          ? fmt::format("{}'s learned positions hold {} tokens, and the lengths have no upper "
                        "bound: give input_tokens and output_tokens a max whose sum is at most {}",
                        m.id, m.max_position, m.max_position)
          : fmt::format("a request of up to {:.0f} tokens (input + output) is longer than {}'s "
                        "{} learned positions, which an engine refuses: expected at most {}",
                        longest, m.id, m.max_position, m.max_position));
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
  PARASIM_RETURN_IF_ERROR(ParseServing(ctx, top.Node("serving"), dir, &s.serving));
  if (s.model.is_hybrid() && s.serving.requests.prefix_hit > 0) {
    // A cached prefix skips its prompt's attention; its Mamba layers would need their state at
    // the prefix's end, which the replay does not cache.
    const YAML::Node rq = top.Node("serving")["requests"];
    return ctx.ErrorAt(rq && rq["prefix_cache_hit"] ? rq["prefix_cache_hit"] : top.Node("serving"),
                       "serving.requests.prefix_cache_hit",
                       "a prefix-cache hit is not modelled for a hybrid (Mamba) model: its layers "
                       "keep no state at a cached prefix's end; leave it out");
  }
  PARASIM_RETURN_IF_ERROR(CheckLearnedContext(ctx, top, s));
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
    for (size_t i = 0; i < sw.gpus.size(); ++i) {
      if (sw.gpus[i] <= s.cluster.gpus()) continue;
      const YAML::Node g = top.Node("sweep")["gpus"];
      return ctx.ErrorAt(g.IsSequence() ? g[i] : g,
                         g.IsSequence() ? fmt::format("sweep.gpus[{}]", i) : "sweep.gpus",
                         fmt::format("{} GPUs: the cluster has {}", sw.gpus[i], s.cluster.gpus()));
    }
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
