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

namespace parasim {

struct Catalogs {
  HardwareCatalog hardware;
  ModelCatalog models;
};
StatusOr<Catalogs> LoadCatalogs();

// One swept knob: "auto" (every valid value) or an explicit list of values.
struct SweepAxis {
  bool is_auto = false;
  std::vector<std::string> values;  // raw scalars, typed when applied
};

enum class Objective { kThroughput, kTimeToTrain, kCost, kMemory };

struct SweepSpec {
  std::vector<std::pair<std::string, SweepAxis>> axes;  // key -> values, in file order
  int64_t global_batch_max = 0;  // {max: N}: per layout the largest multiple of dp*mb <= N
  Objective objective = Objective::kThroughput;
  int top = 10;
  std::string where;  // file:line:col of the sweep block, for messages
};

struct Scenario {
  std::string name;
  std::string file;
  ClusterSpec cluster;
  ModelSpec model;
  Training training;
  Layout layout;
  bool dp_auto = false;
  std::optional<SweepSpec> sweep;
};

// Keys a sweep block may vary (parallelism and training keys).
const std::vector<std::string_view>& SweepableKeys();

StatusOr<Scenario> LoadScenario(const std::string& path, const std::vector<std::string>& sets,
                                const Catalogs& catalogs);
// Builds a scenario from an already merged node (validation cases use this).
StatusOr<Scenario> ScenarioFromNode(const YAML::Node& root, const YamlContext& ctx,
                                    const Catalogs& catalogs);

// Checks a layout against cluster, model and training; the message names the numbers that
// disagree. `where` locates the parallelism block for the error.
Status ValidateLayout(const Scenario& s, const YamlContext& ctx, const YAML::Node& where);

// Applies one sweep value (e.g. "tp" = "4") to a scenario's layout/training.
Status ApplySweepValue(Scenario* s, std::string_view key, std::string_view value);

}  // namespace parasim
