// The calibration program's GEMM part: cuBLASLt GEMMs (fp32 accumulation) in bf16 and fp16, and
// fp8 (E4M3 in, bf16 out, per-tensor scales) where the GPU has it (compute capability 8.9 and
// up), over a grid of shapes plus the given ones (--shapes; --fp8-shapes times those in fp8
// too).
//
//   MeasureGemms(options, /*device=*/0, &measurements);  // measurements.gemm
#pragma once

#include "hardware/measurements.h"
#include "tools/calibrate/options.h"

namespace parasim::calibrate {

// Times every shape on `device`; a shape no cuBLASLt algorithm takes is reported and skipped.
void MeasureGemms(const Options& o, int device, Measurements* m);

}  // namespace parasim::calibrate
