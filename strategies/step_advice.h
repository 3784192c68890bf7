// Warnings about a replayed step: the anti-patterns a planner should name (TP across nodes,
// fewer micro-batches than stages, a global batch smaller than the DP width, accumulation
// where one larger micro-batch fits, communication above a fifth of the step, memory that does
// not fit), each threshold with its source.
#pragma once

#include <string>
#include <vector>

#include "hardware/spec.h"
#include "models/model_spec.h"
#include "models/training.h"
#include "strategies/layout.h"
#include "strategies/step_summary.h"

namespace parasim {

// Exposed communication above this fraction of the step: "for >80% efficiency communication
// must stay under 20% of step time" (KNOWLEDGE.md, scaling laws of thumb, seed 004).
inline constexpr double kExposedCommWarnFraction = 0.2;
// Micro-batches per stage advised when a pipeline has fewer micro-batches than stages: with
// m = 4p the 1F1B bubble (p-1)/m stays under 25% (KNOWLEDGE.md, pipelines: (p-1)/m).
inline constexpr int kAdvisedMicroBatchesPerStage = 4;

std::vector<std::string> StepWarnings(const StepReport& r, const ModelSpec& model,
                                      const Training& training, const Layout& layout,
                                      const ClusterSpec& cluster);

}  // namespace parasim
