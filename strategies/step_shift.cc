#include "strategies/step_shift.h"

#include <algorithm>

namespace parasim {

using sim::kNone;
using sim::TaskId;

int64_t ShiftPeriod(const PipelineSchedule& schedule, int64_t stages, int64_t micro_batches,
                    int64_t group) {
  // The period in micro-batches: one for 1F1B, zero-bubble and DualPipe orders; the stage count
  // for interleaved and V orders, which run micro-batches in groups of p per chunk (an
  // interleaved order in groups of n: n).
  const int64_t m = micro_batches;
  const int64_t d = schedule.interleaves() && group > 0            ? group
                    : schedule.interleaves() || schedule.v_shape() ? stages
                                                                   : 1;
  // Skipping periods pays once the pipeline's fill and drain (about p micro-batches each) and
  // the periods compared leave many to skip: from 4p micro-batches and 16 periods (measured:
  // GPT-3 175B PP8 1F1B, 96 periods, and DeepSeek-V3's DualPipe, 120, replay faster; the
  // interleaved 175B and 530B of Korthikanti et al., 8 periods of p, twice as slow).
  return m >= 4 * stages && m >= 16 * d ? d : 0;
}

void BuildShift(const std::vector<std::vector<Unit>>& order, const EmittedTasks& emitted, int64_t d,
                int chunk_count, int64_t m, size_t num_tasks, LoweredStep* out) {
  // A unit's counterpart one period later is the unit of its stage with the same phase and
  // chunk and the micro-batch a period on (an F&B pair's, the pair whose units are each a
  // period on); when both emitted as many tasks, the k-th task of one plays the k-th of the
  // other's part. The engine checks the program's structure before it relies on this
  // (sim::RunOptions::shift); stage 0's forwards of chunk 0 are where it compares states.
  const int64_t stages = static_cast<int64_t>(order.size());
  auto& shift = out->shift;
  shift.assign(num_tasks, kNone);
  // (phase, chunk, micro-batch) -> a dense index (Phase has four values).
  const size_t chunks = static_cast<size_t>(chunk_count);
  auto key = [&](const Unit& u) {
    return (static_cast<size_t>(u.phase) * chunks + static_cast<size_t>(u.chunk)) *
               static_cast<size_t>(m) +
           static_cast<size_t>(u.mb);
  };
  std::vector<uint32_t> at_of(4 * chunks * static_cast<size_t>(m));
  // How many units an emission starting at o[i] took (1, or 2-3 for an F&B pair).
  auto taken = [&](const std::vector<std::pair<TaskId, TaskId>>& em, size_t i) {
    size_t k = 1;
    while (i + k < em.size() && em[i + k].first == kNone && k < 3) ++k;
    return k;
  };
  for (size_t s = 0; s < order.size(); ++s) {
    const std::vector<Unit>& o = order[s];
    const auto& em = emitted[s];
    // (phase, chunk, mb) -> 1 + the place of the emission that began with that unit, or 0.
    std::fill(at_of.begin(), at_of.end(), 0);
    for (size_t i = 0; i < o.size(); ++i) {
      if (em[i].first != kNone) at_of[key(o[i])] = static_cast<uint32_t>(i + 1);
    }
    for (size_t i = 0; i < o.size(); ++i) {
      const auto [b, e] = em[i];
      if (b == kNone) continue;
      // Anchors from the end of the pipeline's fill (about p micro-batches), where a steady
      // state can begin.
      if (s == 0 && o[i].phase == Phase::kF && o[i].chunk == 0 && o[i].mb % d == 0 &&
          o[i].mb >= stages) {
        out->anchors.push_back(b);
      }
      Unit next = o[i];
      next.mb += d;
      if (next.mb >= m || at_of[key(next)] == 0) continue;
      const size_t j = at_of[key(next)] - 1;
      const auto [b2, e2] = em[j];
      const size_t ki = taken(em, i), kj = taken(em, j);
      if (e2 - b2 != e - b || ki != kj) continue;
      bool same = true;
      for (size_t k = 1; k < ki && same; ++k) {
        same = o[j + k].phase == o[i + k].phase && o[j + k].chunk == o[i + k].chunk &&
               o[j + k].mb == o[i + k].mb + d;
      }
      if (!same) continue;
      for (TaskId t = b; t < e; ++t) shift[t] = b2 + (t - b);
    }
  }
}

}  // namespace parasim
