// `--launch megatron|torchtitan` of `run` and `sweep`: the layout as the Megatron-LM flags or
// the torchtitan config that launch it (scenarios/launch_export.h), in the verb's text and JSON.
//
//   PARASIM_RETURN_IF_ERROR(CheckLaunch(o.launch));
//   if (!o.launch.empty()) text += LaunchText(ExportLaunch(s), o.launch);
#pragma once

#include <string>

#include "scenarios/launch_export.h"
#include "sim/json.h"
#include "sim/status.h"

namespace parasim {

// "" (no launch asked), "megatron" or "torchtitan"; else an error naming what is accepted.
Status CheckLaunch(const std::string& format);
// The launch line (Megatron-LM) or config (torchtitan), then what it cannot carry.
std::string LaunchText(const LaunchConfig& l, const std::string& format);
// {format, megatron: [tokens], script | toml, not_exported: [{key, value, why}]}.
Json LaunchJson(const LaunchConfig& l, const std::string& format);

}  // namespace parasim
