// libFuzzer target, property-based: the input's bytes seed the invariant suite's scenario
// generator (tests/invariants/scenario_gen.h), and the drawn scenario's answers must keep every
// invariant the suite checks (tests/invariants/checks.h): the replay (run), and from the
// input's first byte, run's text and JSON views and a diff, or a small sweep. A violation is
// printed and aborts, so the fuzzer keeps the input that shows it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "tests/invariants/checks.h"
#include "tests/invariants/scenario_gen.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const parasim::Catalogs cat = *parasim::LoadCatalogs();
  if (size == 0) return 0;
  uint64_t seed = 0;
  for (size_t i = 0; i < size && i < 64; ++i) seed = seed * 131 + data[i];
  parasim::testing::ScenarioGen gen(seed, cat);
  const parasim::testing::DrawnScenario d = gen.Next();
  const parasim::Scenario& s = d.scenario;
  parasim::testing::Violations v;
  parasim::LoweredStep low;
  parasim::sim::Timeline tl;
  auto r = parasim::SimulateStep(s.model, s.training, s.layout, s.cluster, {}, &low, &tl);
  if (!r.ok()) {
    v.push_back({"a scenario the loader accepts replays", r.status().message()});
  } else {
    parasim::testing::CheckStep(s, *r, low, tl, &v);
    parasim::testing::CheckMonotone(s, *r, low, &v);
  }
  if (data[0] % 4 == 1) parasim::testing::CheckRunViews(d.yaml, s, &v);
  if (data[0] % 8 == 2) parasim::testing::CheckSweep(s, &v);
  for (const auto& x : v)
    std::fprintf(stderr, "%s: %s\n%s\n", x.check.c_str(), x.detail.c_str(), d.yaml.c_str());
  if (!v.empty()) std::abort();
  return 0;
}
