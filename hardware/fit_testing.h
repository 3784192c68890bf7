// Test helpers of the fit tests: the catalog's H100 cluster, and measurements that the cost
// model itself makes with known ("true") parameters, for a fit to recover.
//
//   ClusterSpec truth = H100Cluster(4);
//   truth.inter.efficiency = 0.85;
//   Measurements m = Synthetic(truth);  // GEMMs, copies and collectives priced with `truth`
//   FitResult r = RunFit(m, H100Cluster(4), {FitCollectives});
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "hardware/fit_family.h"
#include "hardware/measurements.h"
#include "hardware/spec.h"

namespace parasim {

// `nodes` DGX H100 nodes (8 GPUs, NVLink 4, NDR InfiniBand) with the catalog's parameters.
ClusterSpec H100Cluster(int nodes);

// Launch, 16-bit GEMMs, copies, and all-reduce, all-gather and reduce-scatter on one node (8)
// and four (32 ranks), and all-to-all on four, 1 MiB to 4 GiB, priced by the cost model with
// `truth` (sustained factor 1: microbenchmarks run kernels alone).
Measurements Synthetic(const ClusterSpec& truth);

// A contention row on a 132-SM H100: an 8192^3 GEMM or a 2 GiB copy (`victim`), alone and
// beside a stand-in (`background`: spin, or copy at 450 GB/s) on `blocks` SMs.
ContentionPoint ContentionRow(std::string victim, std::string background, int64_t blocks,
                              double alone_us, double with_us);

// The fit's `parts` (FitLaunch, FitCollectives, ...) in turn on `m` alone, from `cluster`.
FitResult RunFit(const Measurements& m, const ClusterSpec& cluster,
                 std::initializer_list<void (*)(FitContext*)> parts);

}  // namespace parasim
