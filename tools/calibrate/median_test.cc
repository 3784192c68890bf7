#include "tools/calibrate/median.h"

#include <doctest/doctest.h>

namespace parasim::calibrate {
namespace {

TEST_CASE("the median of timed runs, and their spread over it") {
  CHECK(Median({3.0, 1.0, 2.0}) == 2.0);
  CHECK(Median({4.0, 1.0, 3.0, 2.0}) == 3.0);  // the upper of the middle two
  CHECK(Median({}) == 0.0);
  const auto [med, spread] = MedianSpread({1.2e-3, 1.0e-3, 1.1e-3});
  CHECK(med == doctest::Approx(1.1e-3));
  CHECK(spread == doctest::Approx(0.2e-3 / 1.1e-3));
  CHECK(MedianSpread({5.0}) == std::pair{5.0, 0.0});
  CHECK(MedianSpread({0.0, 0.0, 1.0}).second == 0.0);  // no spread over a zero median
  CHECK(MedianSpread({}) == std::pair{0.0, 0.0});
}

}  // namespace
}  // namespace parasim::calibrate
