// The least squares every family solves, and the quality each reports.
#include "hardware/fit_family.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

namespace parasim {
namespace {

TEST_CASE("least squares on relative errors recovers an exact line and weighs points by 1/t") {
  // y = 3 + 2 x, exactly: any weighting finds it.
  std::vector<std::vector<double>> a;
  std::vector<double> y, t;
  for (double x : {1.0, 10.0, 100.0, 1000.0}) {
    a.push_back({1.0, x});
    y.push_back(3 + 2 * x);
    t.push_back(3 + 2 * x);
  }
  std::vector<double> sol = SolveRelative(a, y, t);
  REQUIRE(sol.size() == 2);
  CHECK(sol[0] == doctest::Approx(3));
  CHECK(sol[1] == doctest::Approx(2));
  // y = k x through two points 10% off in opposite directions, at times 1 and 100: relative
  // errors weigh them alike, so k sits between 0.9 and 1.1 (an absolute fit would take the big
  // point's 1.1 almost exactly).
  sol = SolveRelative({{1.0}, {100.0}}, {0.9, 110.0}, {0.9, 110.0});
  REQUIRE(sol.size() == 1);
  CHECK(sol[0] > 0.95);
  CHECK(sol[0] < 1.05);
}

TEST_CASE("quality: R^2, MAPE and the worst point with its signed error") {
  const FamilyFit f =
      Quality("memory", {1.0, 2.0, 4.0}, {1.1, 2.0, 3.0}, {"small", "middle", "large"});
  CHECK(f.family == "memory");
  CHECK(f.points == 3);
  CHECK(f.mape == doctest::Approx((0.1 + 0 + 0.25) / 3));
  CHECK(f.worst == "large");
  CHECK(f.worst_error == doctest::Approx(-0.25));
  // ss_res = 0.01 + 0 + 1, ss_tot about the mean 7/3: 16/9 + 1/9 + 25/9 = 42/9.
  CHECK(f.r2 == doctest::Approx(1 - 1.01 / (42.0 / 9)));
  // Measured values that do not vary leave R^2 undefined (it counted as 1, a pass): the fit is
  // judged by its worst point instead.
  const FamilyFit exact = Quality("one", {2.0}, {2.0}, {"only"});
  CHECK(std::isnan(exact.r2));
  const FamilyFit flat = Quality("flat", {2.0, 2.0, 2.0}, {1.93, 1.89, 2.17}, {"a", "b", "c"});
  CHECK(std::isnan(flat.r2));
  CHECK(PoorFit(flat.r2, flat.worst_error, flat.points).find("all equal (R^2 undefined)") !=
        std::string::npos);
  CHECK(PoorFit(flat.r2, 0.04, 3).empty());
  CHECK(PoorFit(0.95, 0.3, 3).empty());
  CHECK(PoorFit(0.5, 0.3, 3).find("R^2 0.500 is below 0.9") == 0);
  CHECK(exact.mape == 0.0);
  CHECK(Quality("none", {}, {}, {}).points == 0);
}

TEST_CASE("a fit context prices kernels as microbenchmarks run them: alone") {
  ClusterSpec c;
  c.gpu.sustained_factor = 0.8;
  c.gpu.launch_overhead = Duration::Microseconds(4);
  const std::vector<Measurements> ms(2);
  const FitContext f(ms, c);
  CHECK(f.cluster.gpu.sustained_factor == 1.0);
  CHECK(f.launch_s() == doctest::Approx(4e-6));
  CHECK(&f.measurements == &ms);
}

}  // namespace
}  // namespace parasim
