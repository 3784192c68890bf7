// What `parasim run` and `parasim scale` answer beyond the replayed step: the time to train,
// GPU-hours and cost through failures and stragglers, GPU-hours per 10^12 tokens; the GPU
// counts a scaling study tries by default, and the days to train at the cluster's own size.
// Computed here, once, so that the text and the JSON read the same numbers.
//
//   StepReport r = *SimulateStep(...);
//   GoodputReport g = *ModelGoodput(s, r.step_time_s, lowered);
//   WithGoodput(s, g, &r);  // (strategies/goodput.h) r's time to train now includes failures
//   GpuHoursPerTrillionTokens(r, s.training.tokens);
#pragma once

#include <cstdint>
#include <vector>

#include "strategies/goodput.h"
#include "strategies/scale.h"
#include "strategies/step.h"

namespace parasim {

// GPU-hours per trillion tokens: the unit published whole-run costs come in (DeepSeek-V3's
// 180K H800 GPU-hours, arXiv 2412.19437 Sec. 1).
double GpuHoursPerTrillionTokens(const StepReport& r, double tokens);

// The GPU counts of a scaling study without --gpus: from one node up to the cluster, doubling.
std::vector<int64_t> DefaultGpuCounts(const ClusterSpec& cluster);

// Days to train the scenario's tokens with the best layout found at the cluster's own GPU count
// (0 when none was found there, or without training.tokens): what Advise weighs one GPU against.
double BestDaysAtClusterSize(const Scenario& s, const ScaleOutcome& r);

}  // namespace parasim
