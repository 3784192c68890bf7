// Fitting the collectives (`parasim fit`): single-node points fit the intra-node fabric,
// multi-node points the inter-node one (after the intra-node one, which hierarchical algorithms
// also use). Each fabric gets its latency per algorithm step (alpha) and its bus efficiency
// (beta) by linear least squares on relative errors, every point priced with the algorithm the
// cost model picks for it and read through that algorithm's own terms
// (hardware/collective_algorithm.h, FitFeature); then each collective x algorithm x group shape
// with 3 or more points at 2 or more sizes gets an alpha-beta of its own, which the profile
// carries beside the fabric's.
//
//   FitContext f(measurements, cluster);
//   FitCollectives(&f);  // f.result.profile.fabrics: one FabricFit per fabric measured
#pragma once

#include "hardware/fit_family.h"

namespace parasim {

// Fits the collective points of `f`'s measurements into its profile and cluster, and reports
// the quality per fabric and per case.
void FitCollectives(FitContext* f);

}  // namespace parasim
