#include "strategies/sweep_explain.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <string_view>

namespace parasim {

std::string Bottleneck(const StepReport& r) {
  if (r.step_time_s <= 0) return "";
  const auto parts = StepParts(r);
  // The largest of everything but compute.
  const StepPartTime* top =
      std::max_element(parts.begin() + 1, parts.end(),
                       [](const StepPartTime& a, const StepPartTime& b) { return a.s < b.s; });
  if (top->s < 0.05 * r.step_time_s) {
    return fmt::format("compute-bound (MFU {:.0f}%)", 100 * r.mfu);
  }
  return fmt::format("{} ({:.0f}% of the step)", StepPartName(top->part),
                     100 * top->s / r.step_time_s);
}

std::string WhyBehind(const SweepEntry& e, const SweepEntry& best) {
  const auto mine = StepParts(e.compute_s, e.bubble, e.exposed);
  const auto theirs = StepParts(best.compute_s, best.bubble, best.exposed);
  std::array<StepPartTime, kNumStepParts> d;
  for (int i = 0; i < kNumStepParts; ++i) d[i] = {mine[i].part, mine[i].s - theirs[i].s};
  std::sort(d.begin(), d.end(),
            [](const StepPartTime& a, const StepPartTime& b) { return a.s > b.s; });
  const double slower = best.tokens_per_s > 0 ? 1 - e.tokens_per_s / best.tokens_per_s : 0;
  std::string why;
  for (const StepPartTime& x : d) {
    if (x.s <= 0.005 * best.step_time_s || why.size() > 60) continue;
    // More compute at the same work means recompute or smaller, less efficient GEMMs.
    const std::string_view what = x.part == StepPart::kCompute
                                      ? "compute (recompute or smaller GEMMs)"
                                      : StepPartName(x.part);
    why += fmt::format("{}+{:.2f} s {}", why.empty() ? "" : ", ", x.s, what);
  }
  if (why.empty()) why = "per-sequence costs (larger global batch per step)";
  return fmt::format("{:.1f}% less throughput: {}", 100 * slower, why);
}

}  // namespace parasim
