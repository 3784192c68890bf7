#include "strategies/answer_run.h"

#include <algorithm>

namespace parasim {

double GpuHoursPerTrillionTokens(const StepReport& r, double tokens) {
  return r.gpu_hours / tokens * 1e12;
}

std::vector<int64_t> DefaultGpuCounts(const ClusterSpec& cluster) {
  std::vector<int64_t> gpus;
  for (int64_t n = cluster.gpus_per_node; n < cluster.gpus(); n *= 2) gpus.push_back(n);
  gpus.push_back(cluster.gpus());
  return gpus;
}

double BestDaysAtClusterSize(const Scenario& s, const ScaleOutcome& r) {
  double best_days = 0;
  for (const auto& pt : r.points) {
    if (pt.found && pt.gpus == s.cluster.gpus() && s.training.tokens > 0) {
      best_days = pt.report.time_to_train_s / 86400;
    }
  }
  return best_days;
}

}  // namespace parasim
