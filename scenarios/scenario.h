// The scenario: cluster x model x training x layout (and an optional sweep space and
// reliability model), loaded from the YAML contract of docs/SCENARIO.md with every error located
// at file:line:col. Each block has its own reader: cluster_block.h, model_block.h,
// training_block.h, parallelism_block.h, sweep_block.h, reliability_block.h; the keys a sweep
// may vary are read by the sweep's key table in every place they appear (table_keys.h).
//
//   Catalogs cat = *LoadCatalogs();
//   StatusOr<Scenario> s = LoadScenario("scenarios/gpt3-175b-1024-a100.yaml", {"parallelism.tp=4"},
//   cat);
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/spec.h"
#include "models/model_spec.h"
#include "models/training.h"
#include "scenarios/catalogs.h"
#include "sim/status.h"
#include "sim/yaml_context.h"
#include "strategies/layout.h"
#include "strategies/plan.h"

namespace parasim {

// The top-level keys of a scenario file.
const std::vector<std::string_view>& ScenarioKeys();

StatusOr<Scenario> LoadScenario(const YamlInput& input, const std::vector<std::string>& sets,
                                const Catalogs& catalogs);
// Builds a scenario from an already merged node (validation cases use this). An invalid fixed
// layout is refused unless `keep_invalid_layout` (a validation case: reported as failed, the
// file's other cases predicted), which leaves the problem, located, in Scenario::fixed_layout.
StatusOr<Scenario> ScenarioFromNode(const YAML::Node& root, const YamlContext& ctx,
                                    const Catalogs& catalogs, bool keep_invalid_layout = false);

// CheckLayout (strategies/plan.h) located: the key at fault's node in the parallelism block
// `where`, else the block itself.
Status ValidateLayout(const Scenario& s, const YamlContext& ctx, const YAML::Node& where);

}  // namespace parasim
