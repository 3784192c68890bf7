// Megatron-LM's interleaved 1F1B (Narayanan et al. SC21, Sec. 2.2): each stage holds v model
// chunks; micro-batches run in groups of p (or of Layout::microbatch_group), chunk by chunk,
// which divides the bubble by v and multiplies the activations in flight by 1 + (p-1)/(p v)
// (Korthikanti et al. 2022, Sec. 4.2.3) for groups of p.
// With one chunk it is 1F1B.
#include <fmt/core.h>

#include <algorithm>
#include <utility>
#include <vector>

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
    const int64_t m = shape.micro_batches, n = Group(shape);
    const int64_t total = m * v;
    // Megatron-Core's schedule table (schedules.py, get_schedule_table): micro-batches in
    // groups of n, each group run chunk by chunk; the last group takes what is left. The
    // backward runs the same table with the chunks reversed. Warm-up (get_pp_rank_microbatches):
    // 2 (p - s - 1) + (v - 1) n forwards.
    std::vector<std::pair<int64_t, int>> table;
    table.reserve(static_cast<size_t>(total));
    for (int64_t g0 = 0; g0 < m; g0 += n) {
      const int64_t g1 = std::min(g0 + n, m);
      for (int c = 0; c < v; ++c) {
        for (int64_t mb = g0; mb < g1; ++mb) table.push_back({mb, c});
      }
    }
    const int64_t warmup =
        std::min<int64_t>(static_cast<int64_t>(p - s - 1) * 2 + (v - 1) * n, total);
    auto fwd = [&](int64_t k) {
      return Unit{Phase::kF, table[static_cast<size_t>(k)].second,
                  table[static_cast<size_t>(k)].first};
    };
    auto bwd = [&](int64_t k) {
      return Unit{Phase::kB, v - 1 - table[static_cast<size_t>(k)].second,
                  table[static_cast<size_t>(k)].first};
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
      // A group of n micro-batches a chunk holds (v - 1) n forwards before the first backward
      // where SC21's holds (v - 1) p: Korthikanti's factor with n for p in the warm-up's term.
      in_flight *= 1.0 + static_cast<double>(shape.stages - 1) / (shape.stages * shape.chunks);
      in_flight +=
          static_cast<double>((Group(shape) - shape.stages) * (shape.chunks - 1)) / shape.chunks;
    }
    return in_flight;
  }

  std::string Constraint(const PipelineShape& shape) const override {
    if (shape.chunks <= 1) return "";
    const int64_t m = shape.micro_batches, p = shape.stages;
    if (shape.group <= 0 || shape.group == p) {
      if (m % p != 0) {
        return fmt::format(
            "interleaved-1f1b needs the number of micro-batches (global_batch/(dp*micro_batch) "
            "= {}) to be a multiple of pp = {}, or a parallelism.microbatch_group from pp to "
            "that number whose remainder is 0 or at least pp",
            m, p);
      }
      return "";
    }
    // Megatron-Core refuses both (forward_backward_pipelining_with_interleaving).
    const int64_t n = shape.group;
    if (n < p || n > m) {
      return fmt::format(
          "interleaved-1f1b's micro-batch group (parallelism.microbatch_group = {}) must be from "
          "pp = {} to the number of micro-batches ({})",
          n, p, m);
    }
    if (m % n != 0 && m % n < p) {
      return fmt::format(
          "interleaved-1f1b's last micro-batch group ({} of {} micro-batches in groups of {}) "
          "must hold none or at least pp = {}: a smaller one stalls the pipeline",
          m % n, m, n, p);
    }
    return "";
  }

 private:
  static int64_t Group(const PipelineShape& shape) {
    return shape.group > 0 ? shape.group : shape.stages;
  }
  std::unique_ptr<PipelineSchedule> one_f_one_b_ = Make1F1BSchedule();
};

}  // namespace

std::unique_ptr<PipelineSchedule> MakeInterleavedSchedule() {
  return std::make_unique<InterleavedSchedule>();
}

}  // namespace parasim
