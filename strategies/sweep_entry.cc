#include "strategies/sweep_entry.h"

#include <algorithm>

namespace parasim {
namespace {

// A field added to SweepEntry stops this from compiling: say whether the grid gives it (then
// add it here) or the sweep finds it (then add it to ForEachFound too, which the results file,
// the exchange between processes and CopyFound go through).
[[maybe_unused]] void EveryFieldIsNamed(const SweepEntry& e) {
  [[maybe_unused]] const auto& [key, layout, training, fits, reason, step_time_s, tokens_per_s, mfu,
                                bubble, exposed, peak_memory_bytes, compute_s, replayed, pruned,
                                bound_s, min_peak_bytes, goodput, hardware, cost_per_s] = e;
}

}  // namespace

void CopyFound(const SweepEntry& from, SweepEntry* to) {
  ForEachFound([](const auto& a, auto& b) { b = a; }, from, *to);
}

SweepEntry EntryOf(const Layout& layout, const Training& training, const StepReport& r) {
  SweepEntry e;
  e.layout = layout;
  e.training = training;
  e.replayed = true;
  e.fits = r.fits;
  e.step_time_s = r.step_time_s;
  e.tokens_per_s = r.tokens_per_s;
  e.mfu = r.mfu;
  e.bubble = r.bubble_fraction;
  e.exposed = r.exposed;
  if (!r.peak_memory_bytes.empty()) {
    e.peak_memory_bytes = *std::max_element(r.peak_memory_bytes.begin(), r.peak_memory_bytes.end());
  }
  e.compute_s = BusiestCompute(r);
  return e;
}

}  // namespace parasim
