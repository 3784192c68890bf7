// A scenario's `sweep` block (docs/SCENARIO.md, "sweep"): the layout and training keys to vary
// (the sweep's key table, strategies/sweep_keys.h: a list of values, one value, or `auto`),
// `global_batch: {max: N}`, the objective and how many results to keep, and for hardware
// co-design the cluster and model keys to compare. Every combination of the hardware keys'
// values is parsed here as the scenario's own cluster and model would be (SweepSpec::hardware).
//
//   SweepSpec sw;
//   PARASIM_RETURN_IF_ERROR(ParseSweepBlock(ctx, root, catalogs, "scenarios", &sw));
//   sw.axes[0].first == "tp", sw.hardware[i].label == "gpu=b200 nodes=64"
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scenarios/catalogs.h"
#include "sim/status.h"
#include "sim/yaml_context.h"
#include "strategies/plan.h"

namespace parasim {

// Cluster and model keys a sweep block may list to compare clusters and models (hardware
// co-design), each with the block of the scenario it replaces a key of ("" = the model itself,
// or for `cluster` a list of cluster fragments merged over the scenario's cluster).
const std::vector<std::pair<std::string_view, std::string_view>>& HardwareSweepKeys();

// The keys a `sweep` block accepts: the key table's, the hardware keys, objective and top.
std::vector<std::string_view> SweepBlockKeys();

// Reads root["sweep"] into `sw`, and builds its hardware combinations from `root` (their
// calibration profiles relative to `scenario_dir`).
Status ParseSweepBlock(const YamlContext& ctx, const YAML::Node& root, const Catalogs& cat,
                       const std::string& scenario_dir, SweepSpec* sw);

}  // namespace parasim
