// Fitting the kernels alone (`parasim fit`): the launch overhead, GEMM efficiency (one scalar per
// precision class for the shape curve, and every measured shape's own), memory-bound efficiency
// (reported per kernel too) and the attention cores' efficiencies, each by linear least squares
// on relative errors (hardware/fit_family.h). Run in this order: each later family prices with
// the launch overhead and efficiencies the earlier ones fitted.
//
//   FitContext f(measurements, cluster);
//   FitLaunch(&f);
//   FitGemms(&f, /*fp8=*/false);
//   FitMemory(&f);
//   FitAttention(&f, /*fused=*/true);
//   // f.result.profile.gemm_efficiency, .memory_efficiency, .attention_flash, ...
#pragma once

#include "hardware/fit_family.h"

namespace parasim {

// Launch overhead: the median of the measured empty-kernel launches.
void FitLaunch(FitContext* f);
// GEMM efficiency of the 16-bit GEMMs, or of the fp8 ones: t - launch = FLOPs / (peak x shape)
// x (1 / e).
void FitGemms(FitContext* f, bool fp8);
// Memory-bound efficiency: t - launch = bytes / HBM x (1 / m), over every streaming kernel.
void FitMemory(FitContext* f);
// The efficiency of materialised (fused = false) or fused attention, per direction.
void FitAttention(FitContext* f, bool fused);

}  // namespace parasim
