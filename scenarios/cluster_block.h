// A scenario's `cluster` block (docs/SCENARIO.md, "cluster"): the GPU and the two fabrics, each
// a catalog id or an inline mapping; the node shape (nodes, GPUs and NICs per node, the NVLink
// domain, pods and oversubscription); the price of a GPU-hour; and a calibration profile whose
// values replace the catalog's defaults.
//
//   ClusterSpec c;
//   PARASIM_RETURN_IF_ERROR(ParseCluster(ctx, root["cluster"], catalogs, &c, "scenarios"));
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hardware/spec.h"
#include "scenarios/catalogs.h"
#include "sim/status.h"
#include "sim/yaml_context.h"

namespace parasim {

// The keys a `cluster` block accepts.
const std::vector<std::string_view>& ClusterKeys();

// Reads `node` (the cluster block, path "cluster") into `c`. `scenario_dir` is the folder
// relative to which `calibration` names its profile ("" for the working directory).
Status ParseCluster(const YamlContext& ctx, const YAML::Node& node, const Catalogs& cat,
                    ClusterSpec* c, const std::string& scenario_dir);

}  // namespace parasim
