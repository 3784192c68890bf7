// GPipe (Huang et al. 2019): every micro-batch's forward, then every backward; the stage holds
// the activations of all m micro-batches.
#include "strategies/schedule.h"

namespace parasim {
namespace {

class GpipeSchedule : public PipelineSchedule {
 public:
  std::string_view name() const override { return "gpipe"; }
  std::vector<Unit> Order(const PipelineShape& shape, int) const override {
    std::vector<Unit> out;
    for (int64_t j = 0; j < shape.micro_batches; ++j) out.push_back({Phase::kF, 0, j});
    for (int64_t j = 0; j < shape.micro_batches; ++j) out.push_back({Phase::kB, 0, j});
    return out;
  }
  double InFlight(const PipelineShape& shape, int) const override {
    return static_cast<double>(shape.micro_batches);
  }
};

}  // namespace

std::unique_ptr<PipelineSchedule> MakeGpipeSchedule() { return std::make_unique<GpipeSchedule>(); }

}  // namespace parasim
