// Megatron-LM's interleaved 1F1B (Narayanan et al. SC21, Sec. 2.2): each stage holds v model
// chunks; micro-batches run in groups of p, chunk by chunk, which divides the bubble by v and
// multiplies the activations in flight by 1 + (p-1)/(p v) (Korthikanti et al. 2022, Sec. 4.2.3).
// With one chunk it is 1F1B.
#include <fmt/core.h>

#include <algorithm>

#include "strategies/schedule.h"

namespace parasim {

std::unique_ptr<PipelineSchedule> Make1F1BSchedule();

namespace {

class InterleavedSchedule : public PipelineSchedule {
 public:
  std::string_view name() const override { return "interleaved-1f1b"; }
  std::vector<std::string_view> aliases() const override { return {"interleaved"}; }
  bool interleaves() const override { return true; }

  std::vector<Unit> Order(const PipelineShape& shape, int s) const override {
    const int p = shape.stages, v = shape.chunks;
    if (v <= 1) return one_f_one_b_->Order(shape, s);
    const int64_t total = shape.micro_batches * v;
    const int64_t warmup =
        std::min<int64_t>(static_cast<int64_t>(p - s - 1) * 2 + (v - 1) * p, total);
    auto mb_of = [&](int64_t k) { return (k / (static_cast<int64_t>(p) * v)) * p + k % p; };
    auto fwd = [&](int64_t k) { return Unit{Phase::kF, static_cast<int>((k / p) % v), mb_of(k)}; };
    auto bwd = [&](int64_t k) {
      return Unit{Phase::kB, static_cast<int>(v - 1 - (k / p) % v), mb_of(k)};
    };
    std::vector<Unit> out;
    for (int64_t k = 0; k < warmup; ++k) out.push_back(fwd(k));
    for (int64_t i = 0; i < total - warmup; ++i) {
      out.push_back(fwd(warmup + i));
      out.push_back(bwd(i));
    }
    for (int64_t i = total - warmup; i < total; ++i) out.push_back(bwd(i));
    return out;
  }

  double InFlight(const PipelineShape& shape, int s) const override {
    double in_flight = one_f_one_b_->InFlight(shape, s);
    if (shape.chunks > 1) {
      in_flight *= 1.0 + static_cast<double>(shape.stages - 1) / (shape.stages * shape.chunks);
    }
    return in_flight;
  }

  std::string Constraint(const PipelineShape& shape) const override {
    if (shape.chunks > 1 && shape.micro_batches % shape.stages != 0) {
      return fmt::format(
          "interleaved-1f1b needs the number of micro-batches (global_batch/(dp*micro_batch) = "
          "{}) to be a multiple of pp = {}",
          shape.micro_batches, shape.stages);
    }
    return "";
  }

 private:
  std::unique_ptr<PipelineSchedule> one_f_one_b_ = Make1F1BSchedule();
};

}  // namespace

std::unique_ptr<PipelineSchedule> MakeInterleavedSchedule() {
  return std::make_unique<InterleavedSchedule>();
}

}  // namespace parasim
