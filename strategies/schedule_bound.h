// The schedule bound: a lower bound on a replayed step from its stages' orders replayed unit by
// unit with given durations (StepLowering::ScheduleBound gathers them from the planners). Each
// unit runs on its stage's compute stream after the unit it receives from and that transfer,
// and after the data-parallel gathers it waits for; each stage's reductions run one after
// another from the units that issue them; the optimizer follows both. Every collective and
// transfer at its time alone on the fabric, no contention: the replay can only be longer. The
// cost is linear in the step's units, and the walk reads nothing but its input.
//
//   ScheduleBoundInput in(ScheduleOf(kSchedule1F1B));
//   in.stages = in.route = 2;
//   in.micro_batches = 4;
//   in.times = {{{F, B, Zero, B}}, {{F, B, Zero, B}}};   // [stage][chunk]: f, b, w, bw
//   in.comm = {{{}}, {{}}};
//   in.into_f = in.into_b = in.optimizer = {Zero, Zero};
//   Duration d = WalkScheduleBound(in, order);          // 1F1B: (m + p - 1) (F + B)
#pragma once

#include <cstdint>
#include <vector>

#include "sim/units.h"
#include "strategies/schedule.h"

namespace parasim {

// A chunk's units as the bounds time them (compute and blocking collectives): F, B with its
// recompute, W when the backward is split, and an F&B unit's backward taking its W along (the
// whole backward, its reduction beside W, at most B then W).
struct UnitDurations {
  Duration f, b, w, bw;
};

// Per chunk, the data-parallel collectives as its units issue them: the reductions of a unit
// that reduces, the first segment's last (its backward gives those gradients last); under
// ZeRO 3 the gathers of each F (first segment first) and B (last segment first); the start
// gathers of ZeRO 1/2 before its first forward (start_wait from the step start, start_after
// from when the forward is otherwise ready: DataParallelLowering::StartGatherWait); ZeRO 3's
// copies out of the gathers, on the
// compute stream beside each F and B.
struct ChunkComm {
  Duration reduce_rest, reduce_last, gather, gather_f, gather_b, start_wait, start_after, copy;
};

struct ScheduleBoundInput {
  explicit ScheduleBoundInput(const PipelineSchedule& s) : schedule(s) {}

  const PipelineSchedule& schedule;
  int stages = 1;             // p
  int chunks = 1;             // model chunks per stage
  int64_t micro_batches = 1;  // m
  int route = 1;              // virtual stages on a micro-batch's route (RouteLength)
  bool split = false;         // the schedule splits the backward (B, then W)
  bool per_layer = false;     // ZeRO 3: gathers layer by layer (gather_f, gather_b, copy)
  // ZeRO 3 as parallelism.zero3_reshard frees the layers: every forward gathers them (else
  // micro-batch 0's alone), and every backward gathers them again.
  bool gathers_every_forward = true;
  bool gathers_backward = true;
  bool waits = false;  // a stage's compute waits for its reductions (overlap_dp)
  // Which micro-batches' backwards reduce the gradients: none without data-parallel
  // synchronisation, else every one or the last (`last_micro_batch`).
  bool dp_reduces = false;
  bool reduces_every_micro_batch = false;
  int64_t last_micro_batch = 0;
  std::vector<std::vector<UnitDurations>> times;  // [stage][chunk]
  std::vector<std::vector<ChunkComm>> comm;       // [stage][chunk]
  // Per virtual stage: the transfer into its F (from the virtual stage before it) and into
  // its B (from the one after it); zero where none.
  std::vector<Duration> into_f, into_b;
  std::vector<Duration> optimizer;  // per stage: the optimizer's pass after everything else

  bool Reduces(int64_t mb) const {
    return dp_reduces && (reduces_every_micro_batch || mb == last_micro_batch);
  }
};

// The bound of `in` over every stage's order (the schedule's, SharedLayoutOrders); zero when
// the orders have a cycle (step lowering reports it).
Duration WalkScheduleBound(const ScheduleBoundInput& in,
                           const std::vector<std::vector<Unit>>& order);

}  // namespace parasim
