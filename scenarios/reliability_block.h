// A scenario's `reliability` block (docs/SCENARIO.md, "reliability"): failure rates,
// detection and relaunch, checkpoints, storage, stragglers and the Monte Carlo runs of the
// goodput model (strategies/goodput.h), or `none` to turn the model off.
//
//   Reliability r;
//   PARASIM_RETURN_IF_ERROR(ParseReliability(ctx, root["reliability"], &r));
#pragma once

#include <string_view>
#include <vector>

#include "sim/status.h"
#include "sim/yaml_context.h"
#include "strategies/reliability.h"

namespace parasim {

// The keys a `reliability` mapping accepts.
const std::vector<std::string_view>& ReliabilityKeys();

// Reads `node` (path "reliability": `none` or a mapping) into `r`.
Status ParseReliability(const YamlContext& ctx, const YAML::Node& node, Reliability* r);

}  // namespace parasim
