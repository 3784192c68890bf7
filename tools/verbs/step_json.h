// The JSON objects several verbs share (SCENARIO.md "JSON keys"): a layout, a replayed step (the
// object `run --json` prints, which sweep's results and diff's sides repeat), and the goodput
// model's reliability block.
//
//   Json j = RunJson(scenario, report);  // {"scenario": ..., "step_time_s": ..., "layout": {...}}
#pragma once

#include "sim/json.h"
#include "strategies/goodput.h"
#include "strategies/plan.h"
#include "strategies/step.h"

namespace parasim {

// The scenario's layout: parallelism, schedule, batch, recompute; optional keys only when set.
Json LayoutJson(const Scenario& s);
// Failures, checkpoints and stragglers of one goodput model ("reliability").
Json GoodputJson(const GoodputReport& g);
// One replayed step of the scenario, with the goodput model's figures when given.
Json RunJson(const Scenario& s, const StepReport& r, const GoodputReport* g = nullptr);

}  // namespace parasim
