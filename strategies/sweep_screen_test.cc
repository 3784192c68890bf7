// Screening and pruning tests: the memory planner's verdict and the first-tier bounds of a
// layout, the replay order by bound, and a pruning state that prunes only what cannot enter
// the top or the Pareto front (in a co-design sweep, nor its own cluster's best).
#include "strategies/sweep_screen.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "strategies/memory.h"
#include "tests/load_scenario.h"

namespace parasim {
namespace {

// A replayed layout that fits: `tokens_per_s` at `peak` bytes (one sequence of 1,000 tokens a
// step, so its throughput bound is 1,000 / bound_s).
SweepEntry Replayed(double tokens_per_s, double peak, size_t hardware = 0) {
  SweepEntry e;
  e.training.global_batch = 1;
  e.training.seq_len = 1000;
  e.fits = e.replayed = true;
  e.tokens_per_s = tokens_per_s;
  e.peak_memory_bytes = peak;
  e.hardware = hardware;
  e.cost_per_s = 1;
  return e;
}

// A candidate whose bounds allow at most `tokens_per_s` at no less than `min_peak` bytes.
SweepEntry Candidate(double tokens_per_s, double min_peak, size_t hardware = 0) {
  SweepEntry e = Replayed(0, 0, hardware);
  e.fits = e.replayed = false;
  e.bound_s = 1000 / tokens_per_s;
  e.min_peak_bytes = min_peak;
  return e;
}

TEST_CASE("a layout is pruned only when it can enter neither the top nor the front") {
  SweepSpec spec;
  spec.top = 2;
  PruneState state(spec);
  state.Add(Replayed(100, 50));
  CHECK_FALSE(state.CannotEnter(Candidate(90, 60)));  // one ahead of it: it could be second
  state.Add(Replayed(120, 40));
  CHECK(state.CannotEnter(Candidate(90, 60)));         // two ahead, and dominated
  CHECK_FALSE(state.CannotEnter(Candidate(90, 30)));   // leaner than any: it could join the front
  CHECK_FALSE(state.CannotEnter(Candidate(110, 60)));  // could be second
  SweepEntry over = Replayed(500, 10);
  over.fits = false;  // a replay over memory enters neither
  state.Add(over);
  CHECK_FALSE(state.CannotEnter(Candidate(200, 60)));
}

TEST_CASE("pruning by the batches before a layout's own") {
  SweepSpec spec;
  spec.top = 1;
  PruneState state(spec);
  state.Add(Replayed(100, 50), /*batch=*/0);
  state.Add(Replayed(200, 20), /*batch=*/2);
  const SweepEntry e = Candidate(150, 60);
  CHECK_FALSE(state.CannotEnter(e, 1));  // batch 0's alone: it could still lead
  CHECK_FALSE(state.CannotEnter(e, 2));
  CHECK(state.CannotEnter(e, 3));
  CHECK(state.CannotEnter(e));  // every batch
}

TEST_CASE("co-design: a layout is kept while none of its own cluster beats its bound") {
  SweepSpec spec;
  spec.top = 1;
  spec.hardware.resize(2);
  PruneState state(spec);
  state.Add(Replayed(300, 10, /*hardware=*/0));
  CHECK_FALSE(state.CannotEnter(Candidate(100, 60, /*hardware=*/1)));  // cluster 1's best yet
  CHECK(state.CannotEnter(Candidate(100, 60, /*hardware=*/0)));
  state.Add(Replayed(150, 50, /*hardware=*/1));
  CHECK(state.CannotEnter(Candidate(100, 60, /*hardware=*/1)));
}

TEST_CASE("the memory objective ranks by the peak bound") {
  SweepSpec spec;
  spec.top = 1;
  spec.objective = Objective::kMemory;
  PruneState state(spec);
  state.Add(Replayed(100, 50));
  CHECK_FALSE(state.CannotEnter(Candidate(50, 40)));  // could use less memory
  CHECK(state.CannotEnter(Candidate(50, 60)));
  CHECK(RankedBound(Candidate(50, 60), Objective::kMemory) == -60);
  CHECK(RankedBound(Candidate(50, 60), Objective::kThroughput) == doctest::Approx(50));
  const FrontPoint best = FrontBound(Candidate(50, 60), false);
  CHECK(best.tokens == doctest::Approx(50));
  CHECK(best.other == 60);
}

TEST_CASE("replays are tried most promising bound first, ties by key") {
  std::vector<SweepEntry> entries = {Candidate(100, 1), Candidate(300, 1), Candidate(300, 1),
                                     Candidate(200, 1)};
  entries[0].key = "a";
  entries[1].key = "c";
  entries[2].key = "b";
  entries[3].key = "d";
  entries[3].reason = "needs 90.0 GiB of 80.0 GiB";  // rejected by screening
  CHECK(ReplayOrder(entries, Objective::kThroughput) == std::vector<size_t>{2, 1, 0});
}

TEST_CASE("screening: the planner's verdict, and for a layout that fits its first-tier bounds") {
  Scenario s = testing::LoadScenarioOrFail("scenarios/gpt3-175b-1024-a100.yaml");
  SweepEntry fits;
  fits.layout = s.layout;
  fits.training = s.training;
  REQUIRE(ScreenLayout(s, /*bound=*/true, &fits).ok());
  CHECK(fits.reason.empty());
  const MemoryReport mem = EstimateMemory(s.model, s.training, s.layout, s.cluster);
  double held = 0;
  for (const StageMemory& st : mem.stages) held = std::max(held, st.held_bytes());
  CHECK(fits.bound_s > 0);
  CHECK(fits.min_peak_bytes > held);  // its activations on top of its states
  SweepEntry unbounded = fits;
  unbounded.bound_s = unbounded.min_peak_bytes = 0;
  REQUIRE(ScreenLayout(s, /*bound=*/false, &unbounded).ok());
  CHECK(unbounded.bound_s == 0);
  CHECK(unbounded.min_peak_bytes == held);  // states alone
  // GPT-3 175B without pipeline stages: its states alone exceed an 80 GB A100.
  SweepEntry over = fits;
  over.layout.pp = 1;
  over.layout.dp = 128;
  over.bound_s = over.min_peak_bytes = 0;
  REQUIRE(ScreenLayout(s, true, &over).ok());
  CHECK(over.reason.rfind("needs ", 0) == 0);
  CHECK(over.reason.find(" GiB of 80.0 GiB") != std::string::npos);
  CHECK(over.bound_s == 0);  // not bounded: it is not replayed
  CHECK(over.peak_memory_bytes > s.cluster.gpu.memory.bytes());
}

}  // namespace
}  // namespace parasim
