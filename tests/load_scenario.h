// Test helper: loads a scenario file of the repository (paths relative to the runfiles root) or
// fails the test with the loader's message.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "scenarios/scenario.h"

namespace parasim::testing {

inline Scenario LoadScenarioOrFail(const std::string& path) {
  static const Catalogs cat = *LoadCatalogs();
  auto s = LoadScenario(path, {}, cat);
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  return *s;
}

}  // namespace parasim::testing
