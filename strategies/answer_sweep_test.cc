#include "strategies/answer_sweep.h"

#include <doctest/doctest.h>

#include "tests/load_scenario.h"

namespace parasim {
namespace {

// A scenario on 80 GiB GPUs with a sweep block ranking by `objective`.
Scenario Base(Objective objective = Objective::kThroughput) {
  Scenario s;
  s.cluster.gpu.memory = Bytes::GiB(80);
  s.sweep.emplace();
  s.sweep->objective = objective;
  s.training.seq_len = 2048;
  return s;
}

SweepEntry Entry(double tokens_per_s, double peak_gib, double goodput = 1, double cost_per_s = 0) {
  SweepEntry e;
  e.tokens_per_s = tokens_per_s;
  e.peak_memory_bytes = Bytes::GiB(peak_gib).bytes();
  e.goodput = goodput;
  e.cost_per_s = cost_per_s;
  return e;
}

TEST_CASE("ties with the best: within 2% by the objective, and the roomiest of them") {
  const Scenario s = Base();
  // #2 is 1% slower a token and leaves 20 GiB; #3 1.9% and 30 GiB; #4 5% slower: no tie.
  const std::vector<SweepEntry> ranked = {Entry(1000, 70), Entry(1000 / 1.01, 60),
                                          Entry(1000 / 1.019, 50), Entry(1000 / 1.05, 10)};
  const TiedWithBest t = TiesWithBest(s, ranked);
  CHECK(t.count == 2);
  CHECK(t.roomiest == 2);
  CHECK(FreeGib(s, ranked[2]) == doctest::Approx(30));
  // The first is the roomiest when no tie leaves more memory free than it.
  const TiedWithBest first = TiesWithBest(s, {Entry(1000, 10), Entry(995, 20 + 60)});
  CHECK(first.count == 1);
  CHECK(first.roomiest == 0);
  // The memory objective ranks by memory: no ties by speed; nothing ranked, none either.
  CHECK(TiesWithBest(Base(Objective::kMemory), ranked).count == 0);
  CHECK(TiesWithBest(s, {}).count == 0);
}

TEST_CASE("ties by throughput kept through failures, or by cost for the cost objective") {
  // The same raw speed, but #2 keeps 10% less through failures: no tie.
  CHECK(TiesWithBest(Base(), {Entry(1000, 70, 1.0), Entry(1000, 70, 0.9)}).count == 0);
  // Cost: #2 is 1.5x as fast at 1.51x the price a second, 0.7% dearer a token: a tie.
  const Scenario cost = Base(Objective::kCost);
  CHECK(TiesWithBest(cost, {Entry(1000, 70, 1, 1.0), Entry(1500, 70, 1, 1.51)}).count == 1);
}

TEST_CASE("cost per million tokens, time to train, and a layout against the first") {
  Scenario s = Base();
  s.training.tokens = 1e12;
  const SweepEntry e = Entry(2e6, 70, 0.8, 10.0);  // keeps 1.6M tokens a second
  CHECK(CostPerMillionTokens(e) == doctest::Approx(10.0 / 1.6));
  CHECK(TimeToTrainS(s, e) == doctest::Approx(1e12 / 1.6e6));
  const AgainstFirst d = CompareWithFirst(Entry(1e6, 70, 1, 4.0), Entry(2e6, 70, 1, 10.0));
  CHECK(d.cost_per_token == doctest::Approx(4.0 / 1e6 / (10.0 / 2e6) - 1));  // -20%
  CHECK(d.throughput == doctest::Approx(-0.5));
}

TEST_CASE("best layout on each cluster of a co-design sweep; none for other sweeps") {
  Scenario s = Base();
  SweepOutcome r;
  r.ranked = {Entry(3, 1), Entry(2, 1), Entry(1, 1)};
  CHECK(BestOnEachCluster(s, r).empty());
  s.sweep->hardware.resize(3);
  r.ranked[0].hardware = 2;
  r.ranked[1].hardware = 0;
  r.ranked[2].hardware = 2;
  const std::vector<std::optional<size_t>> best = BestOnEachCluster(s, r);
  REQUIRE(best.size() == 3);
  CHECK(best[0] == 1u);
  CHECK_FALSE(best[1].has_value());  // nothing fits on cluster 1
  CHECK(best[2] == 0u);
}

TEST_CASE("learning-rate advice when the best layout changes the global batch") {
  Scenario s = Base();
  SweepOutcome r;
  r.base_global_batch = 512;
  CHECK_FALSE(LearningRateAdviceOf(s, r).needed);  // nothing ranked
  r.ranked = {Entry(1, 1)};
  r.ranked[0].training.global_batch = 512;
  CHECK_FALSE(LearningRateAdviceOf(s, r).needed);
  r.ranked[0].training.global_batch = 1536;
  LearningRateAdvice a = LearningRateAdviceOf(s, r);
  CHECK(a.needed);
  CHECK(a.scale == doctest::Approx(3));
  CHECK(a.steps == 0);  // no training.tokens
  // 300B tokens at 1536 x 2048 a step: 95,367 steps, warm-up over 4,768 to 9,537 of them.
  s.training.tokens = 300e9;
  a = LearningRateAdviceOf(s, r);
  CHECK(a.steps == doctest::Approx(95367.4).epsilon(1e-5));
  CHECK(a.warmup_lo_steps == doctest::Approx(0.05 * a.steps));
  CHECK(a.warmup_hi_steps == doctest::Approx(0.10 * a.steps));
}

TEST_CASE("the GPT-3 175B sweep: several layouts tie with the first") {
  const Scenario s = testing::LoadScenarioOrFail("scenarios/gpt3-175b-1024-a100-sweep.yaml");
  SweepOptions o;
  o.jobs = 2;
  auto r = RunSweep(s, o);
  REQUIRE(r.ok());
  const TiedWithBest t = TiesWithBest(s, r->ranked);
  CHECK(t.count >= 1);
  CHECK(t.roomiest < r->ranked.size());
  CHECK(FreeGib(s, r->ranked[t.roomiest]) >= FreeGib(s, r->ranked[0]));
}

}  // namespace
}  // namespace parasim
