// Screening and pruning: the memory planner's verdict on each layout and the lower bounds of
// its replay (step time and peak memory), and the pruning state that tells, from the layouts
// replayed so far, whether a layout whose replay is so bounded could still enter the first
// `top` by the objective or the Pareto front. A layout that cannot is not replayed: its bounds
// already lose.
//
//   ScreenLayout(scenario, /*bound=*/true, &e);          // e.reason set when over memory
//   PruneState state(spec);
//   for (...) state.Add(replayed);                 // the layouts replayed so far
//   if (state.CannotEnter(e)) ...                  // prune e
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

#include "sim/status.h"
#include "strategies/plan.h"
#include "strategies/sweep_entry.h"
#include "strategies/sweep_rank.h"

namespace parasim {

// The most an objective's ranked value (RankedValue) can reach by a layout's bounds.
double RankedBound(const SweepEntry& e, Objective o);
// The best a layout can reach on both axes of the Pareto front (FrontOf) by its bounds.
FrontPoint FrontBound(const SweepEntry& e, bool codesign);

// The memory planner's verdict on one layout, and for one that fits the lower bounds of its
// replay: the peak memory (its states, held from the start, and when `bound` the activations
// its schedule's order must hold) and, when `bound` (pruning), the step (StepLowerBounds).
// A layout over memory gets its peak and a reason.
Status ScreenLayout(const Scenario& base, bool bound, SweepEntry* e);

// The layouts left for replay (no reason after screening), most promising bound first (ties by
// key): the order in which the replays are tried and decided.
std::vector<size_t> ReplayOrder(const std::vector<SweepEntry>& entries, Objective o);

// The replayed layouts that fit, as far as pruning needs them: whether a layout whose replay
// is bounded by (step >= bound, peak >= min_peak) could still enter the first `top` by the
// objective, or the Pareto front of throughput against memory.
class PruneState {
 public:
  explicit PruneState(const SweepSpec& spec)
      : objective_(spec.objective),
        top_(std::max(1, spec.top)),
        codesign_(!spec.hardware.empty()) {}

  // `batch`: the replay batch `e` was decided in (or, ahead of the decisions, tried in).
  void Add(const SweepEntry& e, size_t batch = 0);
  // From the layouts of batches before `before` only. A co-design sweep also keeps every
  // cluster's best layout: one is pruned only when a replayed layout on its own cluster
  // already beats its bound.
  bool CannotEnter(const SweepEntry& e, size_t before = std::numeric_limits<size_t>::max()) const;

 private:
  struct Point {
    double value;
    FrontPoint front;
    size_t hardware;
    size_t batch;
  };
  Objective objective_;
  int top_;
  bool codesign_;
  std::vector<Point> feasible_;
};

}  // namespace parasim
