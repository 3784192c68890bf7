// A scenario's `model` (docs/SCENARIO.md, "model"): a catalog id, or an inline mapping of the
// model's keys (models/model_spec.h reads them), optionally starting from a catalog model with
// `extends`.
//
//   ModelSpec m;
//   PARASIM_RETURN_IF_ERROR(ParseModel(ctx, root["model"], catalogs, &m));
//   root = ExtendingModel(root);  // `model: gpt3-175b` -> `model: {extends: gpt3-175b}`
#pragma once

#include <string>
#include <vector>

#include "models/model_spec.h"
#include "scenarios/catalogs.h"
#include "sim/status.h"
#include "sim/yaml_context.h"

namespace parasim {

// Reads `node` (path "model") into `out`.
Status ParseModel(const YamlContext& ctx, const YAML::Node& node, const Catalogs& cat,
                  ModelSpec* out);

// `root` with the catalog id at `path` (`model`, `cluster.gpu`, a cluster fabric) turned into
// `{extends: id}`, so that a key set under it extends that entry; `root` itself where the node
// there is absent or not a scalar.
YAML::Node ExtendingAt(const YAML::Node& root, const std::vector<std::string>& path);
// ExtendingAt(root, {"model"}): a key set under a catalog model (`--set model.layers=80`, a
// swept model key) extends that model.
YAML::Node ExtendingModel(const YAML::Node& root);

// The --set assignments ("a.b=value") applied to a scenario document in turn, each recorded in
// `ctx` for its errors; a key set under a catalog id (the model, the cluster's GPU or a fabric)
// extends that entry (ExtendingAt).
// The training and the serving loaders both read their --set this way.
Status ApplyScenarioSets(const std::vector<std::string>& sets, YAML::Node* root, YamlContext* ctx);

}  // namespace parasim
