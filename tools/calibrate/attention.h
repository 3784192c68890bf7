// The calibration program's attention part: attention as `attention: standard` runs it, for
// `batch` heads of seq x head_dim in bf16. Forward: QK^T and AV (cuBLAS strided-batched GEMMs)
// around a row softmax; backward: the four GEMMs around the softmax backward. The given shapes
// (--attention) and 32 heads' worth at 4k tokens for seq 1024 to 4096 and head_dim 64 and 128.
//
//   MeasureAttention(options, &measurements);  // measurements.attention, kind standard
#pragma once

#include "hardware/measurements.h"
#include "tools/calibrate/options.h"

namespace parasim::calibrate {

// A shape with rows longer than the softmax kernel takes, or that does not fit in GPU memory,
// is reported and skipped.
void MeasureAttention(const Options& o, Measurements* m);

}  // namespace parasim::calibrate
