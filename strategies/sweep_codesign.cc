#include "strategies/sweep_codesign.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "strategies/goodput.h"

namespace parasim {

std::vector<Scenario> SweepHardwareScenarios(const Scenario& base) {
  if (!base.sweep || base.sweep->hardware.empty()) return {base};
  // Each cluster's scenario keeps the sweep's keys but not the list of clusters, which copied
  // into every one grew with its square (1,024 clusters: 1.4 GB; 4,096, the limit, ran out).
  Scenario shared = base;
  shared.sweep->hardware.clear();
  std::vector<Scenario> out;
  out.reserve(base.sweep->hardware.size());
  for (const SweepHardware& h : base.sweep->hardware) {
    Scenario s = shared;
    s.cluster = h.cluster;
    s.model = h.model;
    out.push_back(std::move(s));
  }
  return out;
}

bool SweepPriced(const Scenario& base) {
  if (!base.sweep || base.sweep->hardware.empty()) return base.cluster.gpu_hour_cost > 0;
  return std::all_of(base.sweep->hardware.begin(), base.sweep->hardware.end(),
                     [](const SweepHardware& h) { return h.cluster.gpu_hour_cost > 0; });
}

double ClusterCostPerS(const ClusterSpec& cluster, bool priced) {
  return static_cast<double>(cluster.gpus()) * (priced ? cluster.gpu_hour_cost : 1.0) / 3600;
}

Scenario WithLayout(const Scenario& base, const SweepEntry& e) {
  Scenario s = base;
  if (base.sweep && e.hardware < base.sweep->hardware.size()) {
    s.cluster = base.sweep->hardware[e.hardware].cluster;
    s.model = base.sweep->hardware[e.hardware].model;
  }
  s.layout = e.layout;
  s.training = e.training;
  s.dp_auto = false;
  s.sweep.reset();
  return s;
}

const ClusterSpec& ClusterOf(const Scenario& base, const SweepEntry& e) {
  const bool codesign = base.sweep && e.hardware < base.sweep->hardware.size();
  return codesign ? base.sweep->hardware[e.hardware].cluster : base.cluster;
}

bool RanksByGoodput(const Scenario& base, const SweepEntry& e) {
  return e.fits && base.sweep && base.reliability.enabled &&
         (base.sweep->objective == Objective::kTimeToTrain ||
          base.sweep->objective == Objective::kCost);
}

void FillGoodput(const Scenario& base, SweepEntry* e) {
  if (RanksByGoodput(base, *e)) {
    Scenario s = base;
    s.layout = e->layout;
    s.training = e->training;
    e->goodput = GoodputFactor(s, e->step_time_s);
  }
}

double CostPerToken(const SweepEntry& e) {
  const double kept = KeptTokensPerS(e);
  return kept > 0 ? e.cost_per_s / kept : std::numeric_limits<double>::infinity();
}

double ObjectiveCost(const Scenario& base, const SweepEntry& e) {
  if (base.sweep && base.sweep->objective == Objective::kCost) return CostPerToken(e);
  const double kept = KeptTokensPerS(e);
  return kept > 0 ? 1 / kept : std::numeric_limits<double>::infinity();
}

}  // namespace parasim
