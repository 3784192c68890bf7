// A walk of every stage's order of units (strategies/schedule.h) as the pipeline runs them:
// stages in turn, each as far as its units are ready (a forward after the previous chunk's
// forward, a backward after the next chunk's backward, a weight gradient after its own
// backward). Step lowering emits the units in this order, so that a unit is emitted after the
// unit it receives from; the schedule bound times them in it.
//
//   UnitsDone done{route, m, std::vector<char>(slots), std::vector<char>(slots)};
//   bool acyclic = WalkOrders(order, schedule, done, [&](int s, size_t at, int g, size_t idx) {
//     ...;                // run order[s][at], marking done.f[idx] or done.b[idx]
//     return size_t{1};   // units taken (0: the stage waits for another)
//   });
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "strategies/schedule.h"

namespace parasim {

// Which units have run, by slot (virtual stage x micro-batch, StepLowering::Slot), and so which
// a stage may run next: F after the previous chunk's F; B after the next chunk's B (the route's
// last chunk's B after its own F); W after its own B.
struct UnitsDone {
  int route;
  int64_t m;
  std::vector<char> f, b;
  size_t Slot(int g, int64_t mb) const { return static_cast<size_t>(g) * m + mb; }
  bool BackwardReady(int g, size_t idx) const {
    return (g % route == route - 1 ? f[idx] : b[idx + m]) != 0;
  }
  bool Ready(const Unit& u, int g, size_t idx) const {
    return u.phase == Phase::kF   ? (g % route == 0 || f[idx - m] != 0)
           : u.phase == Phase::kW ? b[idx] != 0
                                  : BackwardReady(g, idx);
  }
};

// Walks every stage's order, stages in turn, each as far as its units are ready: `take(stage,
// at, g, idx)` consumes units from order[stage][at] (virtual stage g, slot idx) and returns
// how many (0: the stage waits for another). False when no stage can proceed (a cycle).
template <class Take>
bool WalkOrders(const std::vector<std::vector<Unit>>& order, const PipelineSchedule& schedule,
                const UnitsDone& done, Take take) {
  const int p = static_cast<int>(order.size());
  size_t remaining = 0;
  for (const auto& units : order) remaining += units.size();
  std::vector<size_t> pos(order.size(), 0);
  while (remaining > 0) {
    bool progress = false;
    for (int s = 0; s < p; ++s) {
      while (pos[s] < order[s].size()) {
        const Unit& u = order[s][pos[s]];
        const int g = VirtualStageOf(schedule, p, s, u.chunk);
        const size_t idx = done.Slot(g, u.mb);
        if (!done.Ready(u, g, idx)) break;
        const size_t n = take(s, pos[s], g, idx);
        if (n == 0) break;
        pos[s] += n;
        remaining -= n;
        progress = true;
      }
    }
    if (!progress) return false;
  }
  return true;
}

}  // namespace parasim
