// A serving scenario file (docs/SCENARIO.md, "Serving scenario keys"): `cluster` and `model` as
// in a training scenario, a `serving` block in place of `training`, and a serving layout in
// `parallelism` (and `sweep`). `parasim serve` reads it, and `run` hands it to serve.
//
//   Catalogs cat = *LoadCatalogs();
//   if (*IsServingScenario("scenarios/llama3-70b-serve-8-h100.yaml")) {
//     StatusOr<ServingScenario> s = LoadServingScenario("scenarios/llama3-70b-serve-8-h100.yaml",
//                                                       {"serving.engine.max_seqs=128"}, cat);
//   }
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "scenarios/catalogs.h"
#include "sim/status.h"
#include "sim/yaml_context.h"
#include "strategies/serving_spec.h"

namespace parasim {

// The top-level keys of a serving scenario.
const std::vector<std::string_view>& ServingScenarioKeys();

// Whether a document is a serving scenario: a mapping that holds a `serving` key.
bool IsServingDocument(const YAML::Node& root);
// The same for a file or a document in memory (false, not an error, when it does not parse:
// the training loader then reports what is wrong with it).
bool IsServingScenario(const YamlInput& input);

StatusOr<ServingScenario> LoadServingScenario(const YamlInput& input,
                                              const std::vector<std::string>& sets,
                                              const Catalogs& catalogs);
// Builds a serving scenario from an already merged node (validation cases use this). With a
// sweep block the scenario's own layout need not be valid (the sweep varies it).
StatusOr<ServingScenario> ServingScenarioFromNode(const YAML::Node& root, const YamlContext& ctx,
                                                  const Catalogs& catalogs);

}  // namespace parasim
