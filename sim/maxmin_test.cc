#include "sim/maxmin.h"

#include <doctest/doctest.h>

namespace parasim::sim {
namespace {

TEST_CASE("two flows on one link each get half") {
  std::vector<uint32_t> l0 = {0};
  auto r = MaxMinRates({l0, l0}, std::vector<double>{10.0});
  CHECK(r[0] == doctest::Approx(5));
  CHECK(r[1] == doctest::Approx(5));
}

TEST_CASE("a flow held by a narrow link leaves the rest to others") {
  std::vector<uint32_t> a = {0}, b = {0, 1};
  auto r = MaxMinRates({a, b}, std::vector<double>{10.0, 4.0});
  CHECK(r[1] == doctest::Approx(4));
  CHECK(r[0] == doctest::Approx(6));
}

TEST_CASE("classic three-link parking lot") {
  // Flow 0 crosses links 0 and 1; flows 1 and 2 use one link each. All capacities 1.
  std::vector<uint32_t> f0 = {0, 1}, f1 = {0}, f2 = {1};
  auto r = MaxMinRates({f0, f1, f2}, std::vector<double>{1.0, 1.0});
  CHECK(r[0] == doctest::Approx(0.5));
  CHECK(r[1] == doctest::Approx(0.5));
  CHECK(r[2] == doctest::Approx(0.5));
}

}  // namespace
}  // namespace parasim::sim
