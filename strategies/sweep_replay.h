// The replay phase of a sweep: every layout left after screening is tried in stages, each
// raising the bound on its step, and decided in fixed batches, most promising first (the order
// of ReplayOrder): batch b's layouts are pruned or replayed as the pruning state after batches
// 0..b-1 says, so the outcome does not depend on the thread or process count. In one process
// the threads try layouts of later batches while a batch's replays finish; over processes each
// tries its share of a batch, then all exchange what they decided.
//
//   ReplayPhase phase{hardware, spec, workers, /*pruning=*/true, /*batch=*/16, earlier, decided};
//   PARASIM_RETURN_IF_ERROR(ReplayAll(phase, ReplayOrder(entries, spec.objective), &entries));
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "sim/status.h"
#include "strategies/plan.h"
#include "strategies/sweep_entry.h"
#include "strategies/sweep_executor.h"

namespace parasim {

// One layout's replay, tried in stages, each raising the bound on its step: the first tier
// (screening), the schedule walked unit by unit (StepScheduleBound, cheaper than lowering), the
// lowered program's (sim::MakespanLowerBound: the replay without contention, and each link's
// bytes at its capacity), then the replay itself. A trial stops at the first bound that the
// pruning state it was given refuses.
struct SweepTrial {
  std::array<double, 3> bounds{};  // bound_s after each stage tried
  int stages = 0;                  // bounds filled
  Status error;                    // from the stage after the last bound filled
  // Replayed (or taken from an earlier run); empty when the trial stopped at a bound.
  std::optional<SweepEntry> result;
};

// Tries the stages of `e`'s replay on `base` (its cluster and model). With `pruning`, a stage
// whose bound `refuse` refuses ends the trial; `earlier` is its result from an earlier run
// (--resume), or null. An error ends it too, and is returned for the caller to keep in the
// trial (DecideLayout reports it if reached).
Status TryLayout(const Scenario& base, const SweepEntry& e, bool pruning,
                 const std::function<bool(const SweepEntry&)>& refuse, const SweepEntry* earlier,
                 SweepTrial* t);

// Decides `e` from its trial as `cannot_enter` (the state of its own batch; empty when not
// pruning) says: pruned at the first stage whose bound that state refuses, else replayed. The
// trial may have been run against an older state, which prunes less: it then went at least as
// far as this decision needs.
Status DecideLayout(const std::function<bool(const SweepEntry&)>& cannot_enter, SweepTrial* t,
                    SweepEntry* e);

// What the replay phase runs on and reports to.
struct ReplayPhase {
  const std::vector<Scenario>& hardware;  // the scenarios entries run on (SweepEntry::hardware)
  const SweepSpec& spec;
  SweepWorkers workers;
  bool pruning = true;  // false: replay every layout (--exhaustive)
  size_t batch = 16;    // replays decided together (SweepOptions::batch)
  // An entry's result from an earlier run (--resume), or null.
  std::function<const SweepEntry*(size_t)> earlier;
  // Runs once each entry is decided, here or by another process.
  std::function<void(size_t)> decided;
};

// Tries and decides the entries at `order` (indices into entries), in that order's batches.
Status ReplayAll(const ReplayPhase& phase, const std::vector<size_t>& order,
                 std::vector<SweepEntry>* entries);

}  // namespace parasim
