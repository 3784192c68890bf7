// Fitting the cost model to measurements (`parasim fit`): GEMM efficiency, memory-bound
// efficiency, launch overhead, and per fabric the latency per algorithm step (alpha) and the
// bus efficiency (beta) of the collectives, each by linear least squares (Eigen) on relative
// errors, with the algorithm the cost model would pick for each point. Reports the fit quality
// per family: R^2, MAPE and the worst point.
//
//   PARASIM_ASSIGN_OR_RETURN(FitResult r, FitMeasurements(measurements, cluster));
//   std::string yaml = FormatCalibrationProfile(r.profile);
//
// The families are fitted in parts: the kernels alone (hardware/kernel_fit.h), the collectives
// (hardware/collective_fit.h), and host copies, contention and sustained clocks
// (hardware/system_fit.h); what they share is in hardware/fit_family.h.
#pragma once

#include <string>
#include <vector>

#include "hardware/fit_family.h"
#include "hardware/measurements.h"
#include "hardware/profile.h"
#include "hardware/spec.h"
#include "sim/status.h"

namespace parasim {

// `cluster` names the GPU and fabrics measured (its efficiencies are the starting point).
StatusOr<FitResult> FitMeasurements(const std::vector<Measurements>& measurements,
                                    const ClusterSpec& cluster);

}  // namespace parasim
