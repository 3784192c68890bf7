// Fitting what surrounds the kernels (`parasim fit`): host <-> GPU copies (latency and bandwidth
// per direction, reported only), the slowdown of kernels beside a running collective (into the
// profile's contended_compute and contended_memory), and the clocks under sustained load
// (reported only: the sustained factor is fitted to measured steps, `parasim fit --runs`).
//
//   FitContext f(measurements, cluster);
//   FitHostCopies(&f);
//   FitContention(&f);  // f.result.profile.contended_compute, contended_memory
//   FitSustained(&f);
#pragma once

#include "hardware/fit_family.h"

namespace parasim {

// Host <-> GPU copies: latency + bytes / bandwidth per direction. Reported, not in the profile:
// parasim does not model offloading (yet), so nothing would use them.
void FitHostCopies(FitContext* f);
// Contention: the mean slowdown, beside the communication stand-in, of the GEMMs (compute) and
// of the copy (memory-bound), at the stand-in's SM count nearest 16 (NCCL's usual channel count
// on a DGX; hardware/spec.h kDefaultContendedCompute) while it spins, as a collective waiting on
// the network does.
void FitContention(FitContext* f);
// Sustained clocks: how much slower back-to-back GEMMs run at the end of a long run than in its
// first second (reported only: the sustained factor is fitted to measured steps, fit --runs).
void FitSustained(FitContext* f);

}  // namespace parasim
