// Co-design and cost: the clusters and models a sweep compares (each swept over the layout axes),
// what a layout's cluster costs, and what a token costs on it, through failures when the sweep
// models goodput (the time_to_train and cost objectives).
//
//   for (const Scenario& v : SweepHardwareScenarios(base)) ...  // one per cluster and model
//   e.cost_per_s = ClusterCostPerS(v.cluster, SweepPriced(base));
//   FillGoodput(base, &e);   // after its replay
//   CostPerToken(e)          // money (or GPU-hours) per token kept
#pragma once

#include <vector>

#include "hardware/spec.h"
#include "strategies/plan.h"
#include "strategies/sweep_entry.h"

namespace parasim {

// The scenarios a sweep replays on: the base, or for a co-design sweep one per cluster and
// model it compares (SweepEntry::hardware indexes them).
std::vector<Scenario> SweepHardwareScenarios(const Scenario& base);
// Whether every cluster a co-design sweep compares has a price (cost_per_s is then money).
bool SweepPriced(const Scenario& base);
// What a cluster costs per second: GPUs x price per GPU-hour / 3600 when the sweep is priced,
// else GPU-hours per second.
double ClusterCostPerS(const ClusterSpec& cluster, bool priced);

// The base scenario with an entry's layout and training (and a co-design sweep's cluster and
// model) applied.
Scenario WithLayout(const Scenario& base, const SweepEntry& e);
// The cluster an entry runs on: a co-design sweep's, else the base scenario's.
const ClusterSpec& ClusterOf(const Scenario& base, const SweepEntry& e);

// Sets a fitting entry's goodput (the time_to_train and cost objectives of a scenario that
// models failures) from its step time; leaves it at 1 otherwise.
// Whether the sweep's objective ranks `e` by its goodput (time or cost to train, reliability
// modelled, the layout fits): FillGoodput computes it there, and leaves 1 elsewhere.
bool RanksByGoodput(const Scenario& base, const SweepEntry& e);
void FillGoodput(const Scenario& base, SweepEntry* e);
// What one token costs on an entry's layout: money (or GPU-hours, unpriced) per token, through
// failures when the sweep models goodput.
double CostPerToken(const SweepEntry& e);
// What the sweep's objective ranks an entry by, lower first: money (or GPU-hours) a token for
// `cost`, seconds a token kept otherwise; infinite for an entry that keeps no tokens. Not for
// the memory objective.
double ObjectiveCost(const Scenario& base, const SweepEntry& e);

}  // namespace parasim
