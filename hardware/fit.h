// Fitting the cost model to measurements (`parasim fit`): GEMM efficiency, memory-bound
// efficiency, launch overhead, and per fabric the latency per algorithm step (alpha) and the
// bus efficiency (beta) of the collectives, each by linear least squares (Eigen) on relative
// errors, with the algorithm the cost model would pick for each point. Reports the fit quality
// per family: R^2, MAPE and the worst point.
#pragma once

#include <string>
#include <vector>

#include "hardware/measurements.h"
#include "hardware/profile.h"
#include "hardware/spec.h"
#include "sim/status.h"

namespace parasim {

struct FamilyFit {
  std::string family;  // "gemm", "memory", "collectives nvlink4-h100", ...
  int points = 0;
  double r2 = 0;
  double mape = 0;
  double worst_error = 0;  // signed relative error of the worst point
  std::string worst;       // that point, in words
  std::string fitted;      // the parameters, in words
};

struct FitResult {
  CalibrationProfile profile;
  std::vector<FamilyFit> families;
  std::vector<std::string> skipped;  // points left out, with the reason
};

// `cluster` names the GPU and fabrics measured (its efficiencies are the starting point).
StatusOr<FitResult> FitMeasurements(const std::vector<Measurements>& measurements,
                                    const ClusterSpec& cluster);

}  // namespace parasim
