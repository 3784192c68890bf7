// A scenario's `parallelism` block (docs/SCENARIO.md, "parallelism"): the layout. Its keys that
// a sweep may vary (tp, pp, dp, cp, ep, etp, sp, zero, schedule, virtual_stages, grad_reduce,
// cp_comm) are read by the sweep's key table (scenarios/table_keys.h); the others, which take
// lists, mappings or units, here (stage_layers, account_for, overlap, zero3_copies, bucket,
// compression, order). `dp: auto` (or no dp) leaves dp to the loader: GPUs / (tp*pp*cp).
//
//   Scenario s;
//   PARASIM_RETURN_IF_ERROR(ParseParallelism(ctx, root["parallelism"], &s));
//   s.layout.tp, s.dp_auto
#pragma once

#include <string_view>
#include <vector>

#include "sim/status.h"
#include "sim/yaml_context.h"
#include "strategies/layout.h"
#include "strategies/plan.h"

namespace parasim {

// The keys a `parallelism` block accepts (the table's among them).
const std::vector<std::string_view>& ParallelismKeys();

// Reads `node` (path "parallelism") into s->layout and s->dp_auto.
Status ParseParallelism(const YamlContext& ctx, const YAML::Node& node, Scenario* s);

// A DP gradient compression: none, fp16, int8, topk:FRACTION or powersgd:RANK.
Status ParseCompression(std::string_view text, Layout* l);

}  // namespace parasim
