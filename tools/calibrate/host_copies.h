// The calibration program's host part: pinned host memory <-> GPU copies, 1 MiB to 1 GiB (256
// MiB with --quick), each direction.
//
//   MeasureHostCopies(options, &measurements);  // measurements.host_copies
#pragma once

#include "hardware/measurements.h"
#include "tools/calibrate/options.h"

namespace parasim::calibrate {

// Reported and skipped when the pinned buffer cannot be allocated.
void MeasureHostCopies(const Options& o, Measurements* m);

}  // namespace parasim::calibrate
