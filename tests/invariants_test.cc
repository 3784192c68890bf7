// The invariant suite (issue 62, "What to build" 3): thousands of valid scenarios drawn with a
// fixed seed across the catalog's GPUs and models, every pipeline schedule, ZeRO stage,
// recompute mode and parallel layout (tests/invariants/scenario_gen.h), each replayed in this
// process through the library and checked (tests/invariants/checks.h): the parts add up to the
// step, the text says what the JSON holds, the Pareto front is non-dominated, the bubble per
// stage is the timeline's idle time, no NaN, infinity or negative time, MFU at most 1, a
// faster GPU or fabric is never slower (within 0.1%) and the faster GPU prices no compute
// slower, more memory never fits less, full recompute never needs more memory than none, the
// sweep's best is the best of what it replays, and the same input gives the same bytes.
//
// 3,000 scenarios by default (every 4th also through `run`'s views and a diff, every 10th also
// swept), 300 under AddressSanitizer; more with PARASIM_INVARIANT_SCENARIOS=N, another draw
// with PARASIM_INVARIANT_SEED=S:
//
//   PARASIM_INVARIANT_SCENARIOS=20000 tools/bazel test --test_env=PARASIM_INVARIANT_SCENARIOS
//       --test_output=all //tests:invariants_test   (one command line)
#include <doctest/doctest.h>
#include <fmt/core.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "tests/invariants/checks.h"
#include "tests/invariants/scenario_gen.h"
#include "tests/sanitized.h"

namespace parasim::testing {
namespace {

constexpr int64_t kDefaultScenarios = kSanitized ? 300 : 3000;

int64_t FromEnv(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 10) : fallback;
}

TEST_CASE("invariants over drawn scenarios") {
  const int64_t n = FromEnv("PARASIM_INVARIANT_SCENARIOS", kDefaultScenarios);
  const uint64_t seed = static_cast<uint64_t>(FromEnv("PARASIM_INVARIANT_SEED", 62));
  const Catalogs catalogs = *LoadCatalogs();
  ScenarioGen gen(seed, catalogs);
  const auto t0 = std::chrono::steady_clock::now();
  std::map<std::string, int64_t> broken;  // check -> scenarios that broke it
  int64_t checked = 0, pipelined = 0, fitting = 0, viewed = 0, swept = 0;
  for (int64_t i = 0; i < n; ++i) {
    const DrawnScenario d = gen.Next();
    const Scenario& s = d.scenario;
    Violations v;
    LoweredStep low;
    sim::Timeline tl;
    StatusOr<StepReport> r = SimulateStep(s.model, s.training, s.layout, s.cluster, {}, &low, &tl);
    if (!r.ok()) {
      v.push_back({"a scenario the loader accepts replays", r.status().message()});
    } else {
      CheckStep(s, *r, low, tl, &v);
      CheckMonotone(s, *r, low, &v);
      pipelined += s.layout.pp > 1 ? 1 : 0;
      fitting += r->fits ? 1 : 0;
    }
    if (i % 4 == 0) {
      CheckRunViews(d.yaml, s, &v);
      ++viewed;
    }
    if (i % 10 == 0) {
      CheckSweep(s, &v);
      ++swept;
    }
    ++checked;
    std::set<std::string> here;  // each check counted once a scenario
    for (const Violation& x : v) {
      if (!here.insert(x.check).second) continue;
      // The first few scenarios of each kind in full.
      if (broken[x.check]++ < 3) {
        MESSAGE(fmt::format("scenario {} breaks '{}': {}\n{}", i, x.check, x.detail, d.yaml));
      }
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string summary = fmt::format(
      "invariants: {} scenarios (seed {}; {} draws refused by the loader), {} pipelined, {} "
      "fitting, {} through run's views and a diff, {} swept, in {:.1f} s",
      checked, seed, gen.refused(), pipelined, fitting, viewed, swept, s);
  for (const auto& [check, count] : broken) {
    summary += fmt::format("\n  {} scenarios break '{}'", count, check);
  }
  MESSAGE(summary);
  fmt::print("{}\n", summary);
  CHECK(broken.empty());
}

}  // namespace
}  // namespace parasim::testing
