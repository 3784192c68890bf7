// Co-design tests: one scenario per cluster and model compared, each cluster's price per second,
// an entry's scenario and cluster, goodput only where the objective needs it, and what a token
// costs.
#include "strategies/sweep_codesign.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/load_scenario.h"

namespace parasim {
namespace {

Scenario Codesign() {
  return testing::LoadScenarioOrFail("scenarios/llama3-70b-cluster-codesign.yaml");
}

TEST_CASE("one scenario per cluster and model compared; the base alone otherwise") {
  const Scenario s = Codesign();
  const std::vector<Scenario> v = SweepHardwareScenarios(s);
  REQUIRE(v.size() == 6);  // 3 GPU types x 2 sizes
  for (size_t h = 0; h < v.size(); ++h) {
    CAPTURE(h);
    CHECK(v[h].cluster.gpu.id == s.sweep->hardware[h].cluster.gpu.id);
    CHECK(v[h].cluster.gpus() == s.sweep->hardware[h].cluster.gpus());
    CHECK(v[h].model.layers == s.sweep->hardware[h].model.layers);
    CHECK(v[h].training.global_batch == s.training.global_batch);
    // The sweep's keys, not its list of clusters: copied into each, it grew with the square
    // of the clusters (1,024: 1.4 GB).
    REQUIRE(v[h].sweep.has_value());
    CHECK(v[h].sweep->hardware.empty());
    CHECK(v[h].sweep->objective == s.sweep->objective);
  }
  Scenario plain = s;
  plain.sweep.reset();
  REQUIRE(SweepHardwareScenarios(plain).size() == 1);
  CHECK(SweepHardwareScenarios(plain)[0].cluster.gpu.id == "h100-sxm5-80gb");
}

TEST_CASE("each cluster's price per second, in money when every cluster is priced") {
  Scenario s = Codesign();
  CHECK(SweepPriced(s));
  // Priced by GPU type: 512 B200 cost 512 x 3.75 per hour.
  const ClusterSpec& b200 = s.sweep->hardware.back().cluster;
  CHECK(b200.gpu.id == "b200");
  CHECK(ClusterCostPerS(b200, true) == doctest::Approx(512 * 3.75 / 3600));
  CHECK(ClusterCostPerS(b200, false) == doctest::Approx(512.0 / 3600));  // GPU-hours
  s.sweep->hardware[2].cluster.gpu_hour_cost = 0;
  CHECK_FALSE(SweepPriced(s));  // one unpriced cluster: GPU-hours for all
  s.sweep.reset();
  CHECK(SweepPriced(s) == (s.cluster.gpu_hour_cost > 0));
}

TEST_CASE("an entry's scenario and cluster: its own in a co-design sweep") {
  const Scenario s = Codesign();
  SweepEntry e;
  e.hardware = 5;
  e.layout = s.layout;
  e.layout.tp = 4;
  e.training = s.training;
  e.training.micro_batch = 2;
  const Scenario one = WithLayout(s, e);
  CHECK(one.cluster.gpu.id == "b200");
  CHECK(one.layout.tp == 4);
  CHECK(one.training.micro_batch == 2);
  CHECK_FALSE(one.sweep);
  CHECK_FALSE(one.dp_auto);
  CHECK(&ClusterOf(s, e) == &s.sweep->hardware[5].cluster);
  Scenario plain = s;
  plain.sweep.reset();
  CHECK(&ClusterOf(plain, e) == &plain.cluster);
  CHECK(WithLayout(plain, e).cluster.gpu.id == "h100-sxm5-80gb");
}

TEST_CASE("goodput where the objective counts failures; what a token costs") {
  Scenario s = Codesign();  // objective: cost, reliability modelled by default
  SweepEntry e;
  e.layout = s.layout;
  e.training = s.training;
  e.fits = true;
  e.step_time_s = 5;
  e.tokens_per_s = 8192.0 * 512 / 5;
  e.cost_per_s = 2;
  FillGoodput(s, &e);
  CHECK(e.goodput > 0.5);
  CHECK(e.goodput < 1);
  CHECK(CostPerToken(e) == doctest::Approx(2 / (e.tokens_per_s * e.goodput)));
  CHECK(ObjectiveCost(s, e) == CostPerToken(e));
  // Other objectives rank by seconds a token kept, and keep goodput at 1.
  s.sweep->objective = Objective::kThroughput;
  SweepEntry t = e;
  t.goodput = 1;
  FillGoodput(s, &t);
  CHECK(t.goodput == 1);
  CHECK(ObjectiveCost(s, t) == doctest::Approx(1 / t.tokens_per_s));
  // A layout over memory keeps no tokens: infinitely dear.
  SweepEntry over;
  over.cost_per_s = 2;
  FillGoodput(s, &over);
  CHECK(over.goodput == 1);
  CHECK(std::isinf(CostPerToken(over)));
  CHECK(std::isinf(ObjectiveCost(s, over)));
}

}  // namespace
}  // namespace parasim
