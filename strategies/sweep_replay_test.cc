// Replay phase tests: a trial stops at the first bound refused and keeps the bounds it passed;
// a layout is decided by its own batch's state (pruned at the first bound it refuses, else
// replayed, its earlier result taken back when resumed); the decisions are the same on 1 and 2
// threads and whatever the trials ran ahead against.
#include "strategies/sweep_replay.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "strategies/schedule.h"
#include "strategies/sweep_screen.h"
#include "tests/load_scenario.h"

namespace parasim {
namespace {

// GPT-3 175B on 1,024 A100 at the example's layout, screened with its first-tier bounds.
SweepEntry Screened(const Scenario& s) {
  SweepEntry e;
  e.key = "gpt3";
  e.layout = s.layout;
  e.training = s.training;
  REQUIRE(ScreenLayout(s, true, &e).ok());
  REQUIRE(e.reason.empty());
  return e;
}

TEST_CASE("a trial goes through its stages, each bound at least the one before") {
  const Scenario s = testing::LoadScenarioOrFail("scenarios/gpt3-175b-1024-a100.yaml");
  const SweepEntry e = Screened(s);
  // Refused at once: one bound, no replay.
  SweepTrial first;
  REQUIRE(TryLayout(
              s, e, true, [](const SweepEntry&) { return true; }, nullptr, &first)
              .ok());
  CHECK(first.stages == 1);
  CHECK(first.bounds[0] == e.bound_s);
  CHECK_FALSE(first.result);
  // Never refused: three bounds, raised stage by stage, then the replay above them all.
  SweepTrial all;
  REQUIRE(TryLayout(
              s, e, true, [](const SweepEntry&) { return false; }, nullptr, &all)
              .ok());
  CHECK(all.stages == 3);
  CHECK(all.bounds[1] >= all.bounds[0]);
  CHECK(all.bounds[2] >= all.bounds[1]);
  REQUIRE(all.result);
  CHECK(all.result->replayed);
  CHECK(all.result->fits);
  CHECK(all.result->key == "gpt3");
  CHECK(all.result->step_time_s >= all.bounds[2]);
  CHECK(all.result->bound_s == all.bounds[2]);
  CHECK(all.result->min_peak_bytes == e.min_peak_bytes);
  // Not pruning: no bounds, the replay alone, the same figures.
  SweepTrial plain;
  REQUIRE(TryLayout(s, e, false, nullptr, nullptr, &plain).ok());
  CHECK(plain.stages == 0);
  REQUIRE(plain.result);
  CHECK(plain.result->step_time_s == all.result->step_time_s);
  // Resumed: the earlier run's figures, with this run's bounds, and no replay.
  SweepEntry earlier = *plain.result;
  earlier.step_time_s = 123;
  earlier.bound_s = earlier.min_peak_bytes = 0;
  SweepTrial resumed;
  REQUIRE(TryLayout(
              s, e, true, [](const SweepEntry&) { return false; }, &earlier, &resumed)
              .ok());
  REQUIRE(resumed.result);
  CHECK(resumed.stages == 1);
  CHECK(resumed.result->step_time_s == 123);
  CHECK(resumed.result->bound_s == e.bound_s);
  CHECK(resumed.result->min_peak_bytes == e.min_peak_bytes);
  CHECK(resumed.result->replayed);
}

TEST_CASE("a layout is decided by its own batch's state") {
  SweepTrial t;
  t.bounds = {1.0, 2.0, 3.0};
  t.stages = 3;
  SweepEntry replayed;
  replayed.key = "x";
  replayed.step_time_s = 4;
  replayed.replayed = replayed.fits = true;
  t.result = replayed;
  // Pruned at the first bound the state refuses (here 2 s and above).
  SweepEntry e;
  SweepTrial pruned = t;
  REQUIRE(DecideLayout([](const SweepEntry& x) { return x.bound_s >= 2; }, &pruned, &e).ok());
  CHECK(e.pruned);
  CHECK_FALSE(e.replayed);
  CHECK(e.bound_s == 2);
  CHECK(e.reason == std::string(kPrunedNote) + " its step is at least 2 s");
  // A state that refuses none (or no pruning at all): the replay.
  for (bool pruning : {true, false}) {
    SweepEntry d;
    SweepTrial kept = t;
    std::function<bool(const SweepEntry&)> never;
    if (pruning) never = [](const SweepEntry&) { return false; };
    REQUIRE(DecideLayout(never, &kept, &d).ok());
    CHECK(d.replayed);
    CHECK(d.step_time_s == 4);
  }
  // An error after the bounds passed is reported; one past a refused bound is not reached.
  SweepTrial failed = t;
  failed.result.reset();
  failed.error = Internal("replay failed");
  SweepEntry f;
  CHECK(DecideLayout([](const SweepEntry&) { return false; }, &failed, &f).message() ==
        "replay failed");
  CHECK(DecideLayout([](const SweepEntry&) { return true; }, &failed, &f).ok());
  // A trial that stopped before its batch's state would have: an internal error.
  SweepTrial short_trial = t;
  short_trial.result.reset();
  CHECK(!DecideLayout([](const SweepEntry&) { return false; }, &short_trial, &f).ok());
}

TEST_CASE("the same decisions on 1 and 2 threads, in batches of 1 or 3") {
  const Scenario s = testing::LoadScenarioOrFail("scenarios/gpt3-175b-1024-a100.yaml");
  // A few layouts of the example: micro-batches and schedules.
  std::vector<SweepEntry> listed;
  for (int mb : {1, 2}) {
    for (const char* schedule : {"1f1b", "gpipe", "zb-h1"}) {
      SweepEntry e;
      e.layout = s.layout;
      e.training = s.training;
      e.training.micro_batch = mb;
      e.layout.schedule = *FindSchedule(schedule);
      e.key = std::string(schedule) + " mb" + std::to_string(mb);
      REQUIRE(ScreenLayout(s, true, &e).ok());
      listed.push_back(e);
    }
  }
  SweepSpec spec;
  spec.top = 1;
  const std::vector<Scenario> hardware = {s};
  std::vector<std::string> decided_first;
  for (size_t batch : {1, 3}) {
    for (int jobs : {1, 2}) {
      CAPTURE(batch);
      CAPTURE(jobs);
      std::vector<SweepEntry> entries = listed;
      std::vector<size_t> decided;
      const ReplayPhase phase{hardware,
                              spec,
                              SweepWorkers{jobs, nullptr},
                              true,
                              batch,
                              [](size_t) { return nullptr; },
                              [&](size_t i) { decided.push_back(i); }};
      const std::vector<size_t> order = ReplayOrder(entries, spec.objective);
      REQUIRE(ReplayAll(phase, order, &entries).ok());
      CHECK(decided == order);  // in order, whatever ran ahead
      int pruned = 0, replayed = 0;
      std::vector<std::string> outcome;
      for (const SweepEntry& e : entries) {
        pruned += e.pruned ? 1 : 0;
        replayed += e.replayed ? 1 : 0;
        outcome.push_back(e.key + (e.pruned ? " pruned" : " replayed"));
      }
      CHECK(pruned + replayed == static_cast<int>(order.size()));  // the rest over memory
      CHECK(replayed >= 1);
      if (batch == 1) CHECK(pruned > 0);  // one at a time: the first replay prunes the rest
      if (jobs == 1) decided_first = outcome;
      CHECK(outcome == decided_first);
    }
  }
}

}  // namespace
}  // namespace parasim
