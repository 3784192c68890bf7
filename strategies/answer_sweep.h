// What a sweep's ranking answers beyond its order: the layouts that tie with the first (and the
// one of them that leaves the most memory free), the best layout on each cluster of a co-design
// sweep, what a million tokens cost and how long training takes on a layout, how a layout on
// another cluster compares with the first, and the learning-rate advice when the best layout
// changed the global batch. `parasim sweep` prints these and its --json reports them; they are
// computed here, once, so that the text and the JSON read the same numbers.
//
//   SweepOutcome r = *RunSweep(s, options);
//   TiedWithBest t = TiesWithBest(s, r.ranked);  // t.count layouts within kRankTie of #1
//   for (std::optional<size_t> i : BestOnEachCluster(s, r)) ...  // none: nothing fits there
//   LearningRateAdvice lr = LearningRateAdviceOf(s, r);       // lr.needed, lr.scale
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "strategies/step.h"
#include "strategies/sweep.h"

namespace parasim {

// Memory a layout leaves free on its cluster's GPUs, GiB.
double FreeGib(const Scenario& s, const SweepEntry& e);

// How many of a sweep's ranked layouts after the first are within kRankTie of it by the
// objective (cost a token, or GPU-seconds a token: the inverse of tokens a second kept), and
// which of those ties leaves the most memory free. Closer than that, the published runs parasim
// is validated against do not order two layouts (scenarios/validate.h). None for the memory
// objective, which ranks by memory.
struct TiedWithBest {
  size_t count = 0;
  size_t roomiest = 0;  // index into ranked
};
TiedWithBest TiesWithBest(const Scenario& s, const std::vector<SweepEntry>& ranked);

// A co-design sweep's answer per cluster (one per entry of the sweep's hardware): the index in
// r.ranked of its best layout (ranked is best first), or none where no layout fits. Empty for
// other sweeps.
std::vector<std::optional<size_t>> BestOnEachCluster(const Scenario& s, const SweepOutcome& r);

// Money (or GPU-hours, when not every cluster is priced) per million tokens on a layout.
double CostPerMillionTokens(const SweepEntry& e);

// Seconds to train the scenario's training.tokens at the throughput a layout keeps through
// failures (KeptTokensPerS); meaningful only with training.tokens.
double TimeToTrainS(const Scenario& s, const SweepEntry& e);

// How a layout compares with the first, relative changes: +0.05 = 5% more.
struct AgainstFirst {
  double cost_per_token = 0;
  double throughput = 0;  // tokens a second kept
};
AgainstFirst CompareWithFirst(const SweepEntry& e, const SweepEntry& first);

// When the best layout's global batch is not the scenario's: scale the learning rate by the
// ratio of the two (the linear scaling rule, Goyal et al. 2017, arXiv 1706.02677) and warm up
// over 5-10% of the steps (with training.tokens, the steps that are).
struct LearningRateAdvice {
  bool needed = false;
  int64_t global_batch = 0;       // the best layout's
  int64_t base_global_batch = 0;  // the scenario's
  double scale = 1;               // learning-rate multiplier
  double steps = 0;               // optimizer steps to train the tokens; 0 without them
  double warmup_lo_steps = 0;     // 5% of the steps
  double warmup_hi_steps = 0;     // 10% of the steps
};
LearningRateAdvice LearningRateAdviceOf(const Scenario& s, const SweepOutcome& r);

}  // namespace parasim
