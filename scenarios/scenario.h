// The scenario: cluster x model x training x layout (and an optional sweep space), loaded from
// the YAML contract of SCENARIO.md with every error located at file:line:col.
//
//   Catalogs cat = *LoadCatalogs();
//   StatusOr<Scenario> s = LoadScenario("scenarios/gpt3-175b-1024-a100.yaml", {"parallelism.tp=4"},
//   cat);
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hardware/spec.h"
#include "models/model_spec.h"
#include "models/training.h"
#include "sim/status.h"
#include "sim/yaml_reader.h"
#include "strategies/layout.h"
#include "strategies/plan.h"

namespace parasim {

struct Catalogs {
  HardwareCatalog hardware;
  ModelCatalog models;
};
StatusOr<Catalogs> LoadCatalogs();

StatusOr<Scenario> LoadScenario(const YamlInput& input, const std::vector<std::string>& sets,
                                const Catalogs& catalogs);
// Builds a scenario from an already merged node (validation cases use this).
StatusOr<Scenario> ScenarioFromNode(const YAML::Node& root, const YamlContext& ctx,
                                    const Catalogs& catalogs);

// CheckLayout (strategies/plan.h) located: the key at fault's node in the parallelism block
// `where`, else the block itself.
Status ValidateLayout(const Scenario& s, const YamlContext& ctx, const YAML::Node& where);

}  // namespace parasim
