// The calibration program's contention part: compute beside communication. NCCL runs a
// collective as a kernel of one block per channel that holds its SM until the collective ends,
// waiting on the network or streaming data through HBM; GEMMs and memory-bound kernels of the
// step that overlap it get the other SMs. Each victim (the GEMMs of a TP-8 layer and a large one,
// and a 1 GiB copy) is timed alone, then beside a stand-in holding 8, 16 or 32 SMs that spins (a
// collective waiting on the network) or streams HBM at full rate (the copies and reductions of
// NVLink traffic).
//
//   MeasureContention(options, /*device=*/0, &measurements);  // measurements.contention
#pragma once

#include "hardware/measurements.h"
#include "tools/calibrate/options.h"

namespace parasim::calibrate {

void MeasureContention(const Options& o, int device, Measurements* m);

}  // namespace parasim::calibrate
