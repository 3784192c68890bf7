// A lower bound on a replay's makespan (sim/engine.h) without replaying its events, for
// screening a sweep's candidates: the longest path through the program with every task at its
// shortest, or the busiest link's bytes at its capacity, whichever is longer.
//
//   StatusOr<Duration> bound = MakespanLowerBound(program, costs);
//   // *bound <= Engine().Run(program, costs)->makespan
#pragma once

#include "sim/program.h"
#include "sim/status.h"
#include "sim/units.h"

namespace parasim::sim {

// A lower bound on Engine::Run's makespan with default options, without replaying the events:
// every task at its shortest (a compute task at its cost, never slowed by a collective beside
// it; a flow at its latency plus its bytes at its route's slowest link, as if alone), started
// once its dependencies and the earlier tasks of each of its streams are done (Run's rule); and
// no link moves more than its capacity, so the step lasts at least each link's bytes over its
// capacity. One pass over the tasks and dependencies in topological order. Finalizes the
// program; an error for a dependency cycle.
StatusOr<Duration> MakespanLowerBound(Program& program, const CostProvider& costs);

}  // namespace parasim::sim
