// Why a replay stopped before every task finished (its events ran out): a dependency cycle
// (Program::Validate's error), or a task ready but for the stream order, named with its label,
// rank and stream, or else how many tasks finished.
//
//   if (state.done != program.num_tasks()) return DeadlockError(state);
//   // "deadlock: task 1 ('recv' on rank0/comm) is ready but waits behind another task in its
//   //  stream order; 0 of 2 tasks finished"
#pragma once

#include "sim/replay_state.h"
#include "sim/status.h"

namespace parasim::sim {

// The error for a replay stuck in `state` (InvalidArgument, or the program's cycle error).
Status DeadlockError(const ReplayState& state);

}  // namespace parasim::sim
