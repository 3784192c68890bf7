// Explanations of a sweep's ranking in words: what bounds a replayed step (its largest
// non-compute share), and why a layout loses to the best (the step parts it spends longer in).
//
//   Bottleneck(report)          // "exposed TP communication (12% of the step)"
//   WhyBehind(entry, best)      // "4.1% less throughput: +0.31 s pipeline bubble, ..."
#pragma once

#include <string>

#include "strategies/step_summary.h"
#include "strategies/sweep_entry.h"

namespace parasim {

// The largest non-compute share of a step, in words ("exposed TP communication (12%)").
std::string Bottleneck(const StepReport& r);

// Why `entry` loses to `best`, in words.
std::string WhyBehind(const SweepEntry& entry, const SweepEntry& best);

}  // namespace parasim
