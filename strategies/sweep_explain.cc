#include "strategies/sweep_explain.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "sim/parse_units.h"

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

namespace {

// The parts of an entry's step: its busiest stage's compute, its bubble (the mean over stages)
// and exposed communication per kind (the largest over stages), seconds, each times `scale`.
std::array<StepPartTime, kNumStepParts> EntryParts(const SweepEntry& e, double scale) {
  auto parts = StepParts(e.compute_s, e.bubble * e.step_time_s, e.exposed);
  for (StepPartTime& p : parts) p.s *= scale;
  return parts;
}

std::string_view PartWhat(StepPart p, bool same_gpu) {
  // More compute at the same work on the same GPU means recompute or smaller, less efficient
  // GEMMs; on another GPU, its rates first.
  if (p != StepPart::kCompute) return StepPartName(p);
  return same_gpu ? "compute (recompute or smaller GEMMs)"
                  : "compute (the other GPU's rates, recompute or GEMM sizes)";
}

}  // namespace

std::string WhyBehind(const SweepEntry& e, const SweepEntry& best, const StepReport* re,
                      const StepReport* rbest, bool same_gpu) {
  // The same work on both sides: at another global batch, the best's parts are scaled to this
  // layout's sequences per step.
  const int64_t gb = e.training.global_batch, best_gb = best.training.global_batch;
  const bool rebatched = gb > 0 && best_gb > 0 && gb != best_gb;
  const double scale = rebatched ? static_cast<double>(gb) / static_cast<double>(best_gb) : 1.0;
  auto mine = EntryParts(e, 1), theirs = EntryParts(best, scale);
  if (re != nullptr && rbest != nullptr) {
    mine = StepParts(*re);
    theirs = StepParts(*rbest);
    for (StepPartTime& p : theirs) p.s *= scale;
  }
  std::array<StepPartTime, kNumStepParts> d;
  for (int i = 0; i < kNumStepParts; ++i) d[i] = {mine[i].part, mine[i].s - theirs[i].s};
  std::sort(d.begin(), d.end(),
            [](const StepPartTime& a, const StepPartTime& b) { return a.s > b.s; });
  const double slower = best.tokens_per_s > 0 ? 1 - e.tokens_per_s / best.tokens_per_s : 0;
  std::string why;
  for (const StepPartTime& x : d) {
    if (x.s <= 0.005 * e.step_time_s || why.size() > 60) continue;
    why += fmt::format("{}+{:.2f} s {}", why.empty() ? "" : ", ", x.s, PartWhat(x.part, same_gpu));
  }
  if (why.empty() && d[0].s > 0) {
    // Every part within half a percent of the step: name the largest differences anyway.
    for (int i = 0; i < 2 && d[i].s > 0; ++i) {
      why += fmt::format("{}+{} {}", i > 0 ? ", " : "", FormatDuration(Duration::Seconds(d[i].s)),
                         PartWhat(d[i].part, same_gpu));
    }
    why += " (each under 0.5% of the step)";
  }
  const double longer = e.step_time_s - best.step_time_s * scale;
  if (why.empty() && longer > 0) {
    why = fmt::format(
        "a step {} longer with no part longer on its own (the parts overlap differently)",
        FormatDuration(Duration::Seconds(longer)));
  }
  if (why.empty()) why = "no part of its step is longer";
  const std::string batch =
      rebatched ? fmt::format("at global batch {} against {}, per {} sequences: ", gb, best_gb, gb)
                : "";
  return fmt::format("{:.1f}% less throughput: {}{}", 100 * slower, batch, why);
}

}  // namespace parasim
