#include "tools/text.h"

#include <doctest/doctest.h>

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

TEST_CASE("a scenario's name, or its file without one") {
  Scenario s;
  s.file = "a.yaml";
  CHECK(ScenarioName(s) == "a.yaml");
  s.name = "GPT-3";
  CHECK(ScenarioName(s) == "GPT-3");
}

}  // namespace
}  // namespace parasim
