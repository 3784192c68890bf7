// The calibration program's collectives part: NCCL all-reduce, all-gather, reduce-scatter,
// all-to-all (grouped send/recv) and send/recv, out-of-place in bf16, 1 KiB to --max-bytes (4
// GiB by default; fewer if memory is short), on groups of 2, 4, ... and all visible GPUs of the
// node, in one process (one communicator per GPU), each timed with the host clock around the
// NCCL group. The cost model prices each group size on its own when the profile has it
// (hardware/spec.h, FabricSpec::collectives). Several nodes: run nccl-tests under mpirun and
// give its logs to `parasim fit` (docs/CALIBRATION.md).
//
//   MeasureCollectives(options, gpus, &measurements);  // measurements.collectives
#pragma once

#include "hardware/measurements.h"
#include "tools/calibrate/options.h"

namespace parasim::calibrate {

// Skipped, with a note, with fewer than two visible GPUs.
void MeasureCollectives(const Options& o, int gpus, Measurements* m);

}  // namespace parasim::calibrate
