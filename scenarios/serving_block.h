// A serving scenario's `serving` block (docs/SCENARIO.md, "Serving scenario keys"): the number
// formats, the requests (lengths, arrivals, a trace file), the latency targets and the engine's
// policy; and its `parallelism` and `sweep` blocks, which take a serving layout (replicas of
// tp x pp GPUs, or a prefill and a decode pool) instead of a training one. Every error is located
// at file:line:col as the training blocks' are.
//
//   ServingSpec sv;
//   PARASIM_RETURN_IF_ERROR(ParseServing(ctx, root["serving"], dir, &sv));
//   PARASIM_RETURN_IF_ERROR(ParseServingLayout(ctx, root["parallelism"], cluster.gpus(),
//                                              &sv.layout));
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"
#include "sim/yaml_context.h"
#include "strategies/serving_spec.h"

namespace parasim {

// The keys of the `serving` block and of its blocks.
const std::vector<std::string_view>& ServingKeys();
const std::vector<std::string_view>& ServingRequestKeys();
const std::vector<std::string_view>& ServingEngineKeys();
// ttft_p50 ... e2e_p99.9: each metric at each of kSloPercentiles.
const std::vector<std::string_view>& ServingSloKeys();

// Reads `node` (path "serving") into `sv` (its layout left alone); `dir` is the scenario's
// folder, which a trace file's path is taken relative to.
Status ParseServing(const YamlContext& ctx, const YAML::Node& node, const std::string& dir,
                    ServingSpec* sv);

// "20/s", "1200/min", "0.5/s": requests a second.
StatusOr<double> ParseRequestRate(std::string_view text);

// Reads `node` (path "parallelism") into `l`; `gpus` resolves `replicas: auto` (the GPUs a
// unified layout, or the decode pool, leaves).
Status ParseServingLayout(const YamlContext& ctx, const YAML::Node& node, int64_t gpus,
                          ServingLayout* l);

// Reads `node` (path "sweep") of a serving scenario.
Status ParseServingSweep(const YamlContext& ctx, const YAML::Node& node, ServingSweepSpec* sw);

}  // namespace parasim
