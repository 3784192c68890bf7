// The calibration program's sustained part: clocks under sustained load. 8192^3 bf16 GEMMs back
// to back for 30 s (5 with --quick), after 2 s idle; the median GEMM of the first second against
// that of the last quarter.
//
//   MeasureSustained(options, &measurements);  // measurements.sustained
#pragma once

#include "hardware/measurements.h"
#include "tools/calibrate/options.h"

namespace parasim::calibrate {

void MeasureSustained(const Options& o, Measurements* m);

}  // namespace parasim::calibrate
