#include "strategies/answer_sweep.h"

#include <cmath>

namespace parasim {

double FreeGib(const Scenario& s, const SweepEntry& e) {
  return ClusterOf(s, e).gpu.memory.gib() - Bytes(e.peak_memory_bytes).gib();
}

TiedWithBest TiesWithBest(const Scenario& s, const std::vector<SweepEntry>& ranked) {
  TiedWithBest t;
  if (ranked.empty() || (s.sweep && s.sweep->objective == Objective::kMemory)) return t;
  const double best = ObjectiveCost(s, ranked[0]);
  // A leader whose run never ends (goodput 0: an infinite cost) ties with nothing.
  if (!std::isfinite(best) || !(best > 0)) return t;
  for (size_t i = 1; i < ranked.size(); ++i) {
    if (!(ObjectiveCost(s, ranked[i]) / best - 1 <= kRankTie)) continue;
    ++t.count;
    if (FreeGib(s, ranked[i]) > FreeGib(s, ranked[t.roomiest])) t.roomiest = i;
  }
  return t;
}

std::vector<std::optional<size_t>> BestOnEachCluster(const Scenario& s, const SweepOutcome& r) {
  const bool codesign = s.sweep && !s.sweep->hardware.empty();
  std::vector<std::optional<size_t>> best_on(codesign ? s.sweep->hardware.size() : 0);
  for (size_t i = 0; i < r.ranked.size(); ++i) {
    if (codesign && !best_on[r.ranked[i].hardware]) best_on[r.ranked[i].hardware] = i;
  }
  return best_on;
}

double CostPerMillionTokens(const SweepEntry& e) { return 1e6 * CostPerToken(e); }

double TimeToTrainS(const Scenario& s, const SweepEntry& e) {
  return s.training.tokens / KeptTokensPerS(e);
}

AgainstFirst CompareWithFirst(const SweepEntry& e, const SweepEntry& first) {
  return {CostPerToken(e) / CostPerToken(first) - 1, KeptTokensPerS(e) / KeptTokensPerS(first) - 1};
}

LearningRateAdvice LearningRateAdviceOf(const Scenario& s, const SweepOutcome& r) {
  LearningRateAdvice a;
  if (r.ranked.empty()) return a;
  const SweepEntry& best = r.ranked[0];
  a.global_batch = best.training.global_batch;
  a.base_global_batch = r.base_global_batch;
  if (a.global_batch == a.base_global_batch) return a;
  a.needed = true;
  a.scale = static_cast<double>(best.training.global_batch) / r.base_global_batch;
  if (s.training.tokens > 0) {
    a.steps = s.training.tokens / (best.training.global_batch * s.training.seq_len);
    a.warmup_lo_steps = 0.05 * a.steps;
    a.warmup_hi_steps = 0.10 * a.steps;
  }
  return a;
}

}  // namespace parasim
