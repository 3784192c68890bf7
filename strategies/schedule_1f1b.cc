// 1F1B (PipeDream-Flush, Narayanan et al. 2021): stage s runs p-s-1 warm-up forwards, then
// alternates one forward and one backward, then drains; it holds min(p - s, m) micro-batches'
// activations (Korthikanti et al. 2022, Sec. 4.2.3).
#include <algorithm>

#include "strategies/schedule.h"

namespace parasim {
namespace {

class OneFOneBSchedule : public PipelineSchedule {
 public:
  std::string_view name() const override { return "1f1b"; }
  bool host_syncs_at_transfers() const override { return true; }
  std::vector<Unit> Order(const PipelineShape& shape, int s) const override {
    const int64_t m = shape.micro_batches;
    const int64_t warmup = std::min<int64_t>(shape.stages - s - 1, m);
    std::vector<Unit> out;
    for (int64_t j = 0; j < warmup; ++j) out.push_back({Phase::kF, 0, j});
    for (int64_t i = 0; i < m - warmup; ++i) {
      out.push_back({Phase::kF, 0, warmup + i});
      out.push_back({Phase::kB, 0, i});
    }
    for (int64_t i = m - warmup; i < m; ++i) out.push_back({Phase::kB, 0, i});
    return out;
  }
  double InFlight(const PipelineShape& shape, int s) const override {
    return static_cast<double>(std::min<int64_t>(shape.stages - s, shape.micro_batches));
  }
};

}  // namespace

std::unique_ptr<PipelineSchedule> Make1F1BSchedule() {
  return std::make_unique<OneFOneBSchedule>();
}

}  // namespace parasim
