#include "strategies/answer_run.h"

#include <doctest/doctest.h>

#include "tests/load_scenario.h"

namespace parasim {
namespace {

TEST_CASE("time to train, GPU-hours and cost through failures scale together") {
  Scenario s;
  StepReport r;
  r.time_to_train_s = 100;
  r.gpu_hours = 10;
  r.cost = 20;
  GoodputReport g;
  g.time_to_train_s = 125;
  WithGoodput(s, g, &r);  // no training.tokens: nothing to scale
  CHECK(r.time_to_train_s == 100);
  s.training.tokens = 1e12;
  WithGoodput(s, g, &r);
  CHECK(r.time_to_train_s == 125);
  CHECK(r.gpu_hours == doctest::Approx(12.5));
  CHECK(r.cost == doctest::Approx(25));
}

TEST_CASE("GPU-hours per trillion tokens: DeepSeek-V3's 2.788M H800 hours over 14.8T tokens") {
  // arXiv 2412.19437 Table 1: 2.788M GPU-hours for the whole run, pre-training 14.8T tokens
  // (2.664M of those hours): 180K per trillion tokens (Sec. 1).
  StepReport r;
  r.gpu_hours = 2.664e6;
  CHECK(GpuHoursPerTrillionTokens(r, 14.8e12) == doctest::Approx(180e3));
}

TEST_CASE("a scaling study tries one node up to the cluster, doubling") {
  ClusterSpec c;
  c.gpus_per_node = 8;
  c.nodes = 12;
  CHECK(DefaultGpuCounts(c) == std::vector<int64_t>{8, 16, 32, 64, 96});
  c.nodes = 1;
  CHECK(DefaultGpuCounts(c) == std::vector<int64_t>{8});
}

TEST_CASE("days to train at the cluster's size: the point found there, 0 otherwise") {
  Scenario s;
  s.cluster.gpus_per_node = 8;
  s.cluster.nodes = 2;
  s.training.tokens = 1e9;
  ScaleOutcome r;
  r.points.resize(2);
  r.points[0].gpus = 8;
  r.points[0].found = true;
  r.points[0].report.time_to_train_s = 4 * 86400;
  r.points[1].gpus = 16;
  r.points[1].found = true;
  r.points[1].report.time_to_train_s = 2 * 86400;
  CHECK(BestDaysAtClusterSize(s, r) == doctest::Approx(2));
  r.points[1].found = false;
  CHECK(BestDaysAtClusterSize(s, r) == 0);
  r.points[1].found = true;
  s.training.tokens = 0;
  CHECK(BestDaysAtClusterSize(s, r) == 0);
}

TEST_CASE("the Llama 3 405B example: failures lengthen the time to train") {
  const Scenario s = testing::LoadScenarioOrFail("scenarios/llama3-405b-16k-h100.yaml");
  REQUIRE(GoodputModelled(s));
  LoweredStep low;
  auto r = SimulateStep(s.model, s.training, s.layout, s.cluster, StepOptions{}, &low);
  REQUIRE(r.ok());
  auto g = ModelGoodput(s, r->step_time_s, low);
  REQUIRE(g.ok());
  StepReport with = *r;
  WithGoodput(s, *g, &with);
  CHECK(with.time_to_train_s > r->time_to_train_s);
  CHECK(with.gpu_hours / r->gpu_hours ==
        doctest::Approx(with.time_to_train_s / r->time_to_train_s));
}

}  // namespace
}  // namespace parasim
