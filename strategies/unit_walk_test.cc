// Unit walk tests: every unit of a pipeline's orders is taken once, each after the units it
// receives from, and orders that wait on each other are found to be a cycle.
#include "strategies/unit_walk.h"

#include <doctest/doctest.h>

#include <vector>

namespace parasim {
namespace {

TEST_CASE("a 1F1B pipeline's units, each after what it receives") {
  Layout l;
  l.pp = 3;
  l.schedule = kSchedule1F1B;
  const int64_t m = 5;
  const auto orders = SharedLayoutOrders(l, {3, 1, m});
  const std::vector<std::vector<Unit>>& order = *orders;
  const PipelineSchedule& schedule = ScheduleOf(l.schedule);
  UnitsDone done{3, m, std::vector<char>(3 * m, 0), std::vector<char>(3 * m, 0)};
  std::vector<std::vector<int>> f_at(3, std::vector<int>(m, -1)), b_at = f_at;
  int step = 0;
  const bool walked = WalkOrders(order, schedule, done, [&](int s, size_t at, int g, size_t idx) {
    const Unit& u = order[s][at];
    CHECK(g == s);  // one chunk per stage: virtual stage s
    if (u.phase == Phase::kF) {
      if (s > 0) CHECK(f_at[s - 1][u.mb] >= 0);  // after the forward it receives
      f_at[s][u.mb] = step++;
      done.f[idx] = 1;
    } else {
      CHECK(f_at[s][u.mb] >= 0);
      if (s < 2) CHECK(b_at[s + 1][u.mb] >= 0);  // after the backward it receives
      b_at[s][u.mb] = step++;
      done.b[idx] = 1;
    }
    return size_t{1};
  });
  CHECK(walked);
  CHECK(step == 2 * 3 * m);  // every F and B once
}

TEST_CASE("orders waiting on each other are a cycle") {
  // Stage 0 wants its backward of micro-batch 0 before its forward; stage 1 needs that forward.
  const std::vector<std::vector<Unit>> order = {
      {{Phase::kB, 0, 0}, {Phase::kF, 0, 0}},
      {{Phase::kF, 0, 0}, {Phase::kB, 0, 0}},
  };
  UnitsDone done{2, 1, std::vector<char>(2, 0), std::vector<char>(2, 0)};
  int taken = 0;
  CHECK_FALSE(
      WalkOrders(order, ScheduleOf(kSchedule1F1B), done, [&](int, size_t, int, size_t) -> size_t {
        ++taken;
        return 1;
      }));
  CHECK(taken == 0);
}

}  // namespace
}  // namespace parasim
