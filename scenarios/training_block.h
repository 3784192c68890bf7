// A scenario's `training` block (docs/SCENARIO.md, "training"): sequence and batch, number
// formats, optimizer, recompute, kernels and fine-tuning. Its keys that a sweep may vary
// (micro_batch, global_batch, precision, fp8_recipe, recompute, recompute_layers) are read by
// the sweep's key table (scenarios/table_keys.h); the others here.
//
//   Training t;
//   PARASIM_RETURN_IF_ERROR(ParseTraining(ctx, root["training"], &t));
//   PARASIM_RETURN_IF_ERROR(CheckPrecisionOnGpu(ctx, root["training"], t, cluster.gpu, ""));
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hardware/spec.h"
#include "models/training.h"
#include "sim/status.h"
#include "sim/yaml_context.h"

namespace parasim {

// The keys a `training` block accepts (the table's among them).
const std::vector<std::string_view>& TrainingKeys();

// Reads `node` (path "training") into `t`.
Status ParseTraining(const YamlContext& ctx, const YAML::Node& node, Training* t);

// The training's number format on GPU `g` (PrecisionProblem, strategies/plan.h), located at the
// training key at fault; `combination` names a co-design sweep's cluster, empty for the
// scenario's own.
Status CheckPrecisionOnGpu(const YamlContext& ctx, const YAML::Node& training, const Training& t,
                           const GpuSpec& g, const std::string& combination);

}  // namespace parasim
