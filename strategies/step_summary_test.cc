#include "strategies/step_summary.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

TEST_CASE("Merge sorts, joins overlapping and touching intervals, drops empty ones") {
  Intervals v = {{5, 7}, {0, 2}, {1, 3}, {3, 4}, {9, 9}};
  Merge(&v);
  CHECK(v == Intervals{{0, 4}, {5, 7}});
}

TEST_CASE("Uncovered: the part of a not covered by b, within the window") {
  const Intervals a = {{0, 10}, {20, 30}};
  const Intervals b = {{2, 4}, {8, 22}};
  CHECK(Uncovered(a, b, 100) == 2 + 4 + 8);
  CHECK(Uncovered(a, b, 25) == 2 + 4 + 3);
  CHECK(Uncovered(a, {}, 100) == 20);
  CHECK(Uncovered({}, b, 100) == 0);
}

TEST_CASE("Percent rounds to whole percent") {
  CHECK(Percent(0.2) == "20%");
  CHECK(Percent(0.18749) == "19%");
}

}  // namespace
}  // namespace parasim
