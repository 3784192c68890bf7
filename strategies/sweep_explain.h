// Explanations of a sweep's ranking in words: what bounds a replayed step (the largest
// non-compute part of its busiest stage's step), and why a layout loses to the best (the step
// parts it spends longer in, per sequence when the global batches differ; the largest
// differences however small, never a cause that is the same on both sides).
//
//   Bottleneck(report)          // "exposed TP communication (12% of the step)"
//   WhyBehind(entry, best)      // "4.1% less throughput: +0.31 s pipeline bubble, ..."
#pragma once

#include <string>

#include "strategies/step_summary.h"
#include "strategies/sweep_entry.h"

namespace parasim {

// The largest non-compute part of the busiest stage's step (StepParts), in words
// ("exposed TP communication (12% of the step)").
std::string Bottleneck(const StepReport& r);

// Why `entry` loses to `best`, in words: from the entries' figures (the busiest stage's
// compute, the mean bubble, exposed communication per kind), or, given both replayed reports,
// from their busiest stages' steps part by part (StepParts), which add up to each step.
// `same_gpu` false (diff's sides on different GPUs): more compute is put down to the GPU too.
std::string WhyBehind(const SweepEntry& entry, const SweepEntry& best,
                      const StepReport* entry_report = nullptr,
                      const StepReport* best_report = nullptr, bool same_gpu = true);

}  // namespace parasim
