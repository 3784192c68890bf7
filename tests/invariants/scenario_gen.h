// Valid scenarios drawn at random for the invariant suite (tests/invariants_test.cc): every
// catalog GPU and model (cut to a few layers and a short sequence, so that thousands replay in
// seconds), small clusters of one to four nodes, and every pipeline schedule, ZeRO stage,
// recompute mode and parallel layout the draw can make valid. Each draw is a scenario file's
// text, loaded by the scenario loader as a user's file would be; a draw the loader refuses is
// drawn again (and counted), so that every scenario handed out is one parasim accepts.
//
//   ScenarioGen gen(/*seed=*/62, catalogs);
//   for (int i = 0; i < 2000; ++i) {
//     const DrawnScenario d = gen.Next();   // d.yaml, d.scenario
//   }
//
// The same seed draws the same scenarios (a splitmix64 stream, no library distributions).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scenarios/scenario.h"

namespace parasim::testing {

struct DrawnScenario {
  std::string yaml;  // the scenario file's text
  Scenario scenario;
};

class ScenarioGen {
 public:
  ScenarioGen(uint64_t seed, const Catalogs& catalogs);
  // The next scenario the loader accepts.
  DrawnScenario Next();
  // Draws the loader refused so far (a layout that does not divide, a schedule's constraint).
  int64_t refused() const { return refused_; }

 private:
  uint64_t Bits();
  // A uniform pick in [0, n).
  int64_t Below(int64_t n);
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(Below(static_cast<int64_t>(v.size())))];
  }
  // One draw's text, valid or not.
  std::string Draw();

  uint64_t state_;
  const Catalogs& catalogs_;
  std::vector<std::string> gpus_, intra_, inter_, models_;
  int64_t refused_ = 0;
};

}  // namespace parasim::testing
