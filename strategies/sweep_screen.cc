#include "strategies/sweep_screen.h"

#include <fmt/core.h>

#include <algorithm>

#include "strategies/memory.h"
#include "strategies/step.h"

namespace parasim {
namespace {

// The best throughput a layout can reach: its tokens per step over its bound (goodput, at
// most 1, only lowers it).
double BestTokensPerS(const SweepEntry& e) {
  const double tokens = static_cast<double>(e.training.global_batch) * e.training.seq_len;
  return e.bound_s > 0 ? tokens / e.bound_s : std::numeric_limits<double>::infinity();
}

}  // namespace

double RankedBound(const SweepEntry& e, Objective o) {
  if (o == Objective::kMemory) return -e.min_peak_bytes;
  const double best = BestTokensPerS(e);
  return o == Objective::kCost ? best / e.cost_per_s : best;
}

FrontPoint FrontBound(const SweepEntry& e, bool codesign) {
  const double best = BestTokensPerS(e);
  return {best, codesign ? e.cost_per_s / best : e.min_peak_bytes};
}

Status ScreenLayout(const Scenario& base, bool bound, SweepEntry* e) {
  MemoryReport mem = EstimateMemory(base.model, e->training, e->layout, base.cluster);
  double worst = 0;
  std::vector<double> held;
  for (const auto& st : mem.stages) {
    worst = std::max(worst, st.total());
    held.push_back(st.held_bytes());
    e->min_peak_bytes = std::max(e->min_peak_bytes, st.held_bytes());
  }
  e->peak_memory_bytes = worst;
  if (!mem.fits) {
    e->reason = fmt::format("needs {:.1f} GiB of {:.1f} GiB", Bytes(worst).gib(),
                            Bytes(mem.capacity_bytes).gib());
    return Status::Ok();
  }
  if (bound) {
    PARASIM_ASSIGN_OR_RETURN(
        StepBounds b, StepLowerBounds(base.model, e->training, e->layout, base.cluster, held));
    e->bound_s = b.step_s;
    e->min_peak_bytes = b.peak_bytes;
  }
  return Status::Ok();
}

std::vector<size_t> ReplayOrder(const std::vector<SweepEntry>& entries, Objective o) {
  std::vector<size_t> order;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].reason.empty()) order.push_back(i);
  }
  auto promise = [&](size_t i) { return RankedBound(entries[i], o); };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const double pa = promise(a), pb = promise(b);
    if (pa != pb) return pa > pb;
    return entries[a].key < entries[b].key;
  });
  return order;
}

void PruneState::Add(const SweepEntry& e, size_t batch) {
  if (!e.fits) return;
  feasible_.push_back({RankedValue(e, objective_), FrontOf(e, codesign_), e.hardware, batch});
}

bool PruneState::CannotEnter(const SweepEntry& e, size_t before) const {
  const double best = RankedBound(e, objective_);
  const FrontPoint front = FrontBound(e, codesign_);
  int ahead = 0;
  bool dominated = false, beaten_on_own = false;
  for (const Point& y : feasible_) {
    if (y.batch >= before) continue;
    ahead += y.value > best ? 1 : 0;
    dominated = dominated || (y.front.tokens > front.tokens && y.front.other <= front.other);
    beaten_on_own = beaten_on_own || (y.hardware == e.hardware && y.value > best);
  }
  if (codesign_ && !beaten_on_own) return false;
  return ahead >= top_ && dominated;
}

}  // namespace parasim
