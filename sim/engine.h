// The discrete-event engine: replays a Program against a CostProvider.
//
//   Engine engine;
//   StatusOr<Timeline> tl = engine.Run(program, costs, {.record_memory = true});
//   tl->makespan, tl->start[t], tl->end[t], tl->peak_memory[rank], tl->critical_path
//
// Events are ordered by (time, sequence number), so the same program gives the same timeline
// bit for bit. Flows over links share bandwidth max-min fairly, recomputed whenever a flow
// starts or ends. No globals: engines run side by side in one process.
//
// The engine in its parts: the options and the timeline (sim/timeline.h); the replay's state
// (sim/replay_state.h) and its event loop (sim/engine.cc); the steady-state jump
// (sim/steady_state.h); the deadlock report (sim/deadlock.h); and a lower bound on the makespan
// without replaying (sim/lower_bound.h, MakespanLowerBound, included here).
#pragma once

#include "sim/lower_bound.h"
#include "sim/program.h"
#include "sim/status.h"
#include "sim/timeline.h"

namespace parasim::sim {

class Engine {
 public:
  // The program is finalized (dependency rows frozen) if it was not already.
  StatusOr<Timeline> Run(Program& program, const CostProvider& costs, RunOptions options = {});
};

}  // namespace parasim::sim
