// The calibration program's memory part: HBM streaming (copy and triad over fp32 buffers of
// 0.25 to 2 GiB) and the memory-bound kernels a training step runs (GeLU, row softmax at seq 2048,
// LayerNorm at hidden 8192, over the same buffers as bf16), then the launch overhead of an empty
// kernel.
//
//   MeasureMemory(options, &measurements);  // measurements.memory, measurements.launch
#pragma once

#include "hardware/measurements.h"
#include "tools/calibrate/options.h"

namespace parasim::calibrate {

void MeasureMemory(const Options& o, Measurements* m);

}  // namespace parasim::calibrate
