#include "strategies/serving_sweep.h"

#include <doctest/doctest.h>

#include "strategies/serving_testing.h"

namespace parasim {
namespace {

ServingScenario Make(const std::string& model, int gpus) {
  ServingScenario s = testing::ServingOn("h100-sxm5-80gb", gpus, model);
  s.serving.requests.count = 400;
  return s;
}

TEST_CASE("the layouts a serving sweep spans") {
  ServingScenario s = Make("llama3-70b", 8);
  // TP 1..8 x PP 1, 2, 4 that divide 8 GPUs: (1,1) (1,2) (1,4) (2,1) (2,2) (2,4) (4,1) (4,2) (8,1).
  CHECK(ServingLayouts(s).size() == 9);
  ServingSweepSpec sw;
  sw.tp = {2, 4};
  sw.pp = {1};
  sw.disaggregated = {true};
  s.serving.sweep = sw;
  // Prefill and decode pools of TP2 or TP4, a quarter, half or three quarters prefill.
  const std::vector<ServingLayout> d = ServingLayouts(s);
  CHECK_FALSE(d.empty());
  for (const ServingLayout& l : d) {
    CHECK(l.disaggregated);
    CHECK(l.gpus() == 8);
  }
  sw.disaggregated = {false};
  sw.gpus = {4, 8};
  s.serving.sweep = sw;
  CHECK(ServingLayouts(s).size() == 4);  // tp2 x2, tp4 x1 on 4; tp2 x4, tp4 x2 on 8
  // Values that make no layout are an error, not an empty ranking with exit 0.
  sw.tp = {3};
  s.serving.sweep = sw;
  const StatusOr<ServingSweepOutcome> none = RunServingSweep(s, 1);
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().exit_code() == 2);
  CHECK(none.status().message().find("none of the layouts the sweep block spans is valid") !=
        std::string::npos);
}

TEST_CASE("an 8B model on 8 GPUs: replicas win, and the advice says so") {
  ServingScenario s = Make("llama3-8b", 8);
  s.serving.slo.targets = {{SloMetric::kTtft, 99, 2.0}, {SloMetric::kTpot, 99, 0.1}};
  ServingSweepSpec sw;
  sw.tp = {1, 8};
  sw.pp = {1};
  s.serving.sweep = sw;
  StatusOr<ServingSweepOutcome> o = RunServingSweep(s, 2);
  REQUIRE_MESSAGE(o.ok(), o.status().message());
  REQUIRE(o->ranked.size() == 2);
  CHECK(o->ranked[0].layout.unified.tp == 1);
  CHECK(o->ranked[0].score > o->ranked[1].score);
  REQUIRE_FALSE(o->advice.empty());
  CHECK(o->advice[0].find("replicate rather than shard") == 0);
  CHECK(o->elapsed_s > 0);
}

TEST_CASE("the same replicas on more GPUs score alike, the fewest GPUs first") {
  // Llama 3 8B as TP1 replicas on 8, 16 and 32 GPUs: each replays eight replicas, its rate
  // scaled by its share, so per GPU they serve alike; their order had been the scaled rates'
  // rounding (x8, x32, x16 in the serving example).
  ServingScenario s = Make("llama3-8b", 32);
  s.serving.slo.targets = {{SloMetric::kTtft, 99, 2.0}, {SloMetric::kTpot, 99, 0.1}};
  ServingSweepSpec sw;
  sw.tp = {1};
  sw.pp = {1};
  sw.gpus = {32, 8, 16};
  s.serving.sweep = sw;
  StatusOr<ServingSweepOutcome> o = RunServingSweep(s, 2);
  REQUIRE_MESSAGE(o.ok(), o.status().message());
  REQUIRE(o->ranked.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(o->ranked[i].layout.gpus() == int64_t{8} << i);
    CHECK(o->ranked[i].score == doctest::Approx(o->ranked[0].score).epsilon(1e-9));
  }
}

TEST_CASE("PP's advice sets a pipeline against the same GPUs a replica split by TP") {
  // Llama 3 8B on 8 GPUs, TP 1-2 x PP 1-2: tp1 pp2 x4 against tp2 x4 (the same two GPUs a
  // replica, the same replicas), not against tp1 x8 (twice the replicas, each with half the
  // load, whose lower TPOT is the load's).
  ServingScenario s = Make("llama3-8b", 8);
  s.serving.slo.targets = {{SloMetric::kTtft, 99, 2.0}, {SloMetric::kTpot, 99, 0.1}};
  ServingSweepSpec sw;
  sw.tp = {1, 2};
  sw.pp = {1, 2};
  s.serving.sweep = sw;
  StatusOr<ServingSweepOutcome> o = RunServingSweep(s, 2);
  REQUIRE_MESSAGE(o.ok(), o.status().message());
  std::string pp;
  for (const std::string& a : o->advice) {
    if (a.find("PP adds latency") == 0) pp = a;
  }
  CAPTURE(pp);
  CHECK(pp.find("tp1 pp2 x4") != std::string::npos);
  CHECK(pp.find("for tp2 x4") != std::string::npos);
  CHECK(pp.find("tp1 x8") == std::string::npos);
}

}  // namespace
}  // namespace parasim
