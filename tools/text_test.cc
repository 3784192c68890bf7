#include "tools/text.h"

#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "strategies/sweep.h"

namespace parasim {
namespace {

TEST_CASE("counts in thousands, millions and billions; durations as FormatDuration writes them") {
  CHECK(Human(812) == "812");
  CHECK(Human(12345) == "12.3k");
  CHECK(Human(1.2e6) == "1.20M");
  CHECK(Human(1.75e9) == "1.75B");
  CHECK(Seconds(0.0123) == "12.300 ms");
  CHECK(Seconds(18.841) == "18.841 s");
}

TEST_CASE("the Pareto front compares throughputs as Human prints them") {
  // PrintedFrontOf's rounding and Human's text agree: two throughputs print alike exactly when
  // they round alike (the front never lists a point that looks dominated).
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> exponent(0, 10.5);
  for (int i = 0; i < 2000; ++i) {
    const double x = std::pow(10.0, exponent(rng)), y = x * (1 + 1e-3 * (i % 7 - 3));
    CAPTURE(x);
    CAPTURE(y);
    CHECK((Human(x) == Human(y)) == (TokensAsPrinted(x) == TokensAsPrinted(y)));
  }
}

TEST_CASE("a scenario's name, or its file without one") {
  Scenario s;
  s.file = "a.yaml";
  CHECK(ScenarioName(s) == "a.yaml");
  s.name = "GPT-3";
  CHECK(ScenarioName(s) == "GPT-3");
}

}  // namespace
}  // namespace parasim
