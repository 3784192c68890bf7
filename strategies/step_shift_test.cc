// Steady-state shift tests: the period is taken only where enough periods are left to skip,
// and each unit's tasks map onto the same unit a period later, with the anchors on stage 0's
// forwards after the pipeline's fill.
#include "strategies/step_shift.h"

#include <doctest/doctest.h>

#include <vector>

namespace parasim {
namespace {

using sim::kNone;
using sim::TaskId;

TEST_CASE("the period: one micro-batch, or p for interleaved orders, where enough are left") {
  const PipelineSchedule& one = ScheduleOf(kSchedule1F1B);
  CHECK(ShiftPeriod(one, 4, 16) == 1);
  CHECK(ShiftPeriod(one, 4, 15) == 0);  // fewer than 16 periods
  CHECK(ShiftPeriod(one, 8, 31) == 0);  // fewer than 4p micro-batches
  CHECK(ShiftPeriod(one, 8, 32) == 1);
  const PipelineSchedule& interleaved = ScheduleOf(kScheduleInterleaved);
  CHECK(ShiftPeriod(interleaved, 4, 64) == 4);
  CHECK(ShiftPeriod(interleaved, 4, 96, 6) == 6);  // groups of 6: 16 periods of 6
  CHECK(ShiftPeriod(interleaved, 4, 64, 6) == 0);  // 10 periods of 6: too few
  CHECK(ShiftPeriod(interleaved, 4, 32) == 0);
}

// A 1F1B pipeline's orders on p stages, each unit emitting tasks(unit) tasks, stage by stage.
struct Emitted {
  std::vector<std::vector<Unit>> order;
  EmittedTasks emitted;
  TaskId tasks = 0;
};
template <class Tasks>
Emitted Emit1F1B(int p, int64_t m, Tasks tasks) {
  Layout l;
  l.pp = p;
  l.schedule = kSchedule1F1B;
  Emitted e{*SharedLayoutOrders(l, {p, 1, m}), EmittedTasks(p), 0};
  for (int s = 0; s < p; ++s) {
    for (const Unit& u : e.order[s]) {
      const TaskId n = tasks(u);
      e.emitted[s].push_back({e.tasks, e.tasks + n});
      e.tasks += n;
    }
  }
  return e;
}

TEST_CASE("each unit's tasks map onto the same unit a period on") {
  // 1F1B on 2 stages, 16 micro-batches; each unit emitted 3 tasks.
  const int64_t m = 16;
  const Emitted e = Emit1F1B(2, m, [](const Unit&) { return TaskId{3}; });
  LoweredStep out;
  BuildShift(e.order, e.emitted, 1, 1, m, e.tasks, &out);
  REQUIRE(out.shift.size() == e.tasks);
  // The tasks of a unit, by stage, phase and micro-batch.
  auto first = [&](size_t s, Phase ph, int64_t mb) {
    for (size_t i = 0; i < e.order[s].size(); ++i) {
      if (e.order[s][i].phase == ph && e.order[s][i].mb == mb) return e.emitted[s][i].first;
    }
    return kNone;
  };
  for (size_t s = 0; s < 2; ++s) {
    for (Phase ph : {Phase::kF, Phase::kB}) {
      for (int64_t mb = 0; mb + 1 < m; ++mb) {
        const TaskId a = first(s, ph, mb), b = first(s, ph, mb + 1);
        for (TaskId k = 0; k < 3; ++k) CHECK(out.shift[a + k] == b + k);
      }
      CHECK(out.shift[first(s, ph, m - 1)] == kNone);  // the last has none
    }
  }
  // Anchors: stage 0's forwards from micro-batch p on.
  REQUIRE(out.anchors.size() == static_cast<size_t>(m - 2));
  CHECK(out.anchors.front() == first(0, Phase::kF, 2));
  CHECK(out.anchors.back() == first(0, Phase::kF, m - 1));
}

TEST_CASE("units of different shapes are not each other's counterparts") {
  // One stage, 4 micro-batches; micro-batch 2's units emitted one task fewer.
  const int64_t m = 4;
  const Emitted e = Emit1F1B(1, m, [](const Unit& u) { return TaskId{u.mb == 2 ? 2u : 3u}; });
  LoweredStep out;
  BuildShift(e.order, e.emitted, 1, 1, m, e.tasks, &out);
  for (size_t i = 0; i < e.order[0].size(); ++i) {
    const bool mapped = out.shift[e.emitted[0][i].first] != kNone;
    CHECK(mapped == (e.order[0][i].mb == 0));  // 0 -> 1 alone: 1 -> 2 and 2 -> 3 differ
  }
}

}  // namespace
}  // namespace parasim
