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
#include "strategies/sweep.h"

namespace parasim {

// The scenario's layout: parallelism, schedule, batch, recompute; optional keys only when set.
Json LayoutJson(const Scenario& s);
// Failures, checkpoints and stragglers of one goodput model ("reliability").
Json GoodputJson(const GoodputReport& g);
// One replayed step of the scenario, with the goodput model's figures when given.
Json RunJson(const Scenario& s, const StepReport& r, const GoodputReport* g = nullptr);
// The layout keys a sweep holds at the scenario's values (its block does not list them: sp,
// zero, the schedule, ...), as LayoutJson writes them; dp when derived per layout and the
// global batch under {max: N} are not held. Empty without a sweep block.
Json HeldKeysJson(const Scenario& s);
// Every layout a sweep replayed, a flat record each (no nested values: a table for pandas):
// the ranked ones best first with their `rank`, then those over memory (`rank` null); its
// layout's keys as LayoutJson writes them, the replay's figures, and the worst stage's peak.
Json EveryLayoutJson(const Scenario& s, const SweepOutcome& r);

}  // namespace parasim
