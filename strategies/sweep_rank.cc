#include "strategies/sweep_rank.h"

#include <algorithm>
#include <limits>

#include "strategies/sweep_codesign.h"

namespace parasim {

double RankedThroughput(const SweepEntry& e, Objective o) {
  if (o == Objective::kCost) return KeptTokensPerS(e) / e.cost_per_s;
  return o == Objective::kTimeToTrain ? KeptTokensPerS(e) : e.tokens_per_s;
}

double RankedValue(const SweepEntry& e, Objective o) {
  return o == Objective::kMemory ? -e.peak_memory_bytes : RankedThroughput(e, o);
}

FrontPoint FrontOf(const SweepEntry& e, bool codesign) {
  return codesign ? FrontPoint{KeptTokensPerS(e), CostPerToken(e)}
                  : FrontPoint{e.tokens_per_s, e.peak_memory_bytes};
}

bool RanksBefore(const SweepEntry& a, const SweepEntry& b, Objective o) {
  if (o == Objective::kMemory && a.peak_memory_bytes != b.peak_memory_bytes) {
    return a.peak_memory_bytes < b.peak_memory_bytes;
  }
  const double ga = RankedThroughput(a, o), gb = RankedThroughput(b, o);
  if (ga != gb) return ga > gb;
  if (a.tokens_per_s != b.tokens_per_s) return a.tokens_per_s > b.tokens_per_s;
  return a.key < b.key;
}

namespace {

// The front of `ranked`: sorted by throughput (ties by the other axis, then by rank), each
// point kept when it is lower on the other axis than every faster one.
std::vector<size_t> ParetoFront(const std::vector<SweepEntry>& ranked, bool codesign) {
  std::vector<size_t> order(ranked.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const FrontPoint x = FrontOf(ranked[a], codesign);
    const FrontPoint y = FrontOf(ranked[b], codesign);
    if (x.tokens != y.tokens) return x.tokens > y.tokens;
    if (x.other != y.other) return x.other < y.other;
    return a < b;  // exact ties: the first in the ranking (by key) stands for them
  });
  std::vector<size_t> front;
  double best_other = std::numeric_limits<double>::infinity();
  for (size_t i : order) {
    const double other = FrontOf(ranked[i], codesign).other;
    if (other < best_other) {
      front.push_back(i);
      best_other = other;
    }
  }
  return front;
}

}  // namespace

SweepRanking RankEntries(const SweepSpec& spec, const std::vector<SweepEntry>& entries) {
  SweepRanking out;
  for (const SweepEntry& e : entries) {
    if (e.fits) out.ranked.push_back(e);
  }
  for (const SweepEntry& e : entries) {
    if (!e.fits && !e.pruned &&
        (out.leanest.key.empty() || e.peak_memory_bytes < out.leanest.peak_memory_bytes)) {
      out.leanest = e;
    }
  }
  std::sort(out.ranked.begin(), out.ranked.end(), [&](const SweepEntry& a, const SweepEntry& b) {
    return RanksBefore(a, b, spec.objective);
  });
  out.pareto = ParetoFront(out.ranked, !spec.hardware.empty());
  return out;
}

}  // namespace parasim
