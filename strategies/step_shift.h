// The steady-state shift of a lowered step (LoweredStep::shift, anchors): for each task, its
// counterpart one period later, so that the engine can place whole periods of a long pipeline
// from one it replayed (sim::RunOptions::shift) instead of replaying each. A unit's counterpart
// is the unit of its stage with the same phase and chunk and the micro-batch a period on.
//
//   const int64_t d = ShiftPeriod(schedule, p, m);   // 0: not worth it
//   ... emit the units, recording each one's tasks in `emitted` ...
//   if (d > 0) BuildShift(order, emitted, d, chunks, m, program.num_tasks(), &out);
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/program.h"
#include "strategies/lowered_step.h"
#include "strategies/schedule.h"

namespace parasim {

// The steady-state period in micro-batches, or 0 when the step has too few periods for
// skipping them to pay; `group` an interleaved order's micro-batch group (0 = stages).
int64_t ShiftPeriod(const PipelineSchedule& schedule, int64_t stages, int64_t micro_batches,
                    int64_t group = 0);

// Per stage, per unit of its order: the tasks [first, end) the emission that began with that
// unit added, or (kNone, kNone) for a unit an F&B unit took along (or one that emitted none).
using EmittedTasks = std::vector<std::vector<std::pair<sim::TaskId, sim::TaskId>>>;

// Fills out->shift (for each of the step's `num_tasks` tasks its counterpart `period`
// micro-batches later, kNone where it has none) and adds out->anchors (stage 0's forwards of
// chunk 0 from the end of the pipeline's fill, a period apart), from every stage's order
// (`chunks` per stage, `micro_batches` of them) and the tasks each unit emitted.
void BuildShift(const std::vector<std::vector<Unit>>& order, const EmittedTasks& emitted,
                int64_t period, int chunks, int64_t micro_batches, size_t num_tasks,
                LoweredStep* out);

}  // namespace parasim
