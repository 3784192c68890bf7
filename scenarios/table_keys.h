// The loader's reading of the keys the sweep's key table holds (strategies/sweep_keys.h): in a
// scenario's `parallelism` and `training` blocks those keys are read by the table's own parse
// and apply, so that a key's accepted values, limits and error wording live in one place and are
// the same in its block, in a sweep block and in `--set`. This file only locates an error at the
// key (file:line:col). The blocks' other keys keep their own readers (stage_layers, overlap,
// bucket, ...); no key has two.
//
//   PARASIM_ASSIGN_OR_RETURN(MapReader m, MapReader::Open(ctx, node, "training", keys));
//   PARASIM_RETURN_IF_ERROR(ReadTableKeys(m, "training", &layout, &training));
//   // training.precision: 'fp9' is not accepted; expected one of: fp32, tf32, fp16, bf16, fp8
#pragma once

#include <string_view>
#include <vector>

#include "models/training.h"
#include "sim/status.h"
#include "sim/yaml_context.h"
#include "strategies/layout.h"

namespace parasim {

// Reads each key of the table that belongs to `block` and that `m` has, in the table's order,
// through the table, into `l` and `t`. `skip` names keys the caller reads itself (dp: auto).
Status ReadTableKeys(const MapReader& m, std::string_view block, Layout* l, Training* t,
                     const std::vector<std::string_view>& skip = {});

}  // namespace parasim
