#include "strategies/sweep_rank.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "sim/parse_units.h"
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

// The throughput as the tables print it (tools' Human is FormatCount), read back.
double TokensAsPrinted(double x) { return PrintedCount(x); }

double PeakTenthsOfGib(double bytes) { return std::round(10 * Bytes(bytes).gib()); }

FrontPoint PrintedFrontOf(const SweepEntry& e, bool codesign) {
  const FrontPoint p = FrontOf(e, codesign);
  if (!codesign) return {TokensAsPrinted(p.tokens), PeakTenthsOfGib(p.other)};
  const double per_million = 1e6 * p.other;
  return {TokensAsPrinted(p.tokens),
          std::isfinite(per_million) ? std::stod(fmt::format("{:.4g}", per_million)) : per_million};
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

// The front of `ranked` as printed: sorted by printed throughput, then the printed other axis,
// then the exact figures (so that of points printed alike, one the exact figures dominate never
// stands for them), then by rank; each point kept when it is lower on the printed other axis
// than every point before it.
std::vector<size_t> ParetoFront(const std::vector<SweepEntry>& ranked, bool codesign) {
  std::vector<size_t> order(ranked.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<FrontPoint> printed(ranked.size()), exact(ranked.size());
  for (size_t i = 0; i < ranked.size(); ++i) {
    printed[i] = PrintedFrontOf(ranked[i], codesign);
    exact[i] = FrontOf(ranked[i], codesign);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    for (const std::vector<FrontPoint>* v : {&printed, &exact}) {
      const FrontPoint x = (*v)[a], y = (*v)[b];
      if (x.tokens != y.tokens) return x.tokens > y.tokens;
      if (x.other != y.other) return x.other < y.other;
    }
    return a < b;  // exact ties: the first in the ranking (by key) stands for them
  });
  std::vector<size_t> front;
  double best_other = std::numeric_limits<double>::infinity();
  for (size_t i : order) {
    const double other = printed[i].other;
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
