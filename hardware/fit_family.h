// What every measurement family's fit shares (`parasim fit`, hardware/fit.h): the state a fit
// carries from one family to the next, the least squares on relative errors each family solves,
// and the quality each reports (R^2, MAPE and the worst point).
//
//   FitContext f(measurements, cluster);
//   // y = time - known, a = the coefficients of the unknowns, t = the measured times:
//   std::vector<double> x = SolveRelative(a, y, t);
//   f.result.families.push_back(Quality("gemm", measured, predicted, names));
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hardware/measurements.h"
#include "hardware/profile.h"
#include "hardware/spec.h"

namespace parasim {

struct FamilyFit {
  std::string family;  // "gemm", "memory", "collectives nvlink4-h100", ...
  int points = 0;
  double r2 = 0;
  double mape = 0;
  double worst_error = 0;  // signed relative error of the worst point
  std::string worst;       // that point, in words
  std::string fitted;      // the parameters, in words
  // The points furthest from the fit, worst first (up to 3): each in words with its source
  // ("file:line"), and its signed relative error.
  std::vector<std::pair<std::string, double>> disagree;
  // Fitted values that left their bounds and were kept at them, in words: a fit that does not
  // hold (FitRefusals).
  std::vector<std::string> at_bound;
  // Whether the profile carries what this family fits; false: reported only (host copies,
  // sustained clocks), a per-kernel view of a family fitted as a whole, or a check.
  bool written = true;
};

struct FitResult {
  CalibrationProfile profile;
  std::vector<FamilyFit> families;
  std::vector<std::string> skipped;  // points left out, with the reason
};

// One fit as its families run in turn: the measurements, the cluster it prices with, which each
// family refines for the later ones (collectives see the fitted launch overhead, the inter-node
// fabric the intra-node one), and the result so far. Each family reads the measurements, adds
// its parameters to the profile and its quality to the families.
struct FitContext {
  // `cluster` names the GPU and fabrics measured; its efficiencies are the starting point.
  FitContext(const std::vector<Measurements>& ms, const ClusterSpec& cluster);

  const std::vector<Measurements>& measurements;
  ClusterSpec cluster;  // sustained factor 1: microbenchmarks run kernels alone
  FitResult result;

  double launch_s() const { return cluster.gpu.launch_overhead.seconds(); }
};

// Least squares of y = A x on relative errors: each row (of A and y) divided by the measured
// time `t`. Returns x, one value per column of A.
std::vector<double> SolveRelative(const std::vector<std::vector<double>>& a,
                                  const std::vector<double>& y, const std::vector<double>& t);

// The quality of a family's fit: R^2 of the times, their mean absolute relative error, and the
// point (`names`) whose relative error is the largest (the last of equals), with the two next.
FamilyFit Quality(std::string family, const std::vector<double>& measured,
                  const std::vector<double>& predicted, const std::vector<std::string>& names);

// `raw` kept within [lo, hi]. Outside, the bound it is kept at, and a line in `at_bound` that
// names `what` ("bus efficiency 1.37 fitted, kept at its bound 1").
double Bounded(double raw, double lo, double hi, std::string_view what,
               std::vector<std::string>* at_bound);

// The R^2 below which a family's fit explains too little to be written as a profile.
inline constexpr double kMinProfileR2 = 0.9;
// Where the measured values do not vary, R^2 is undefined (NaN): the fit holds where its worst
// point is within this (the validation files' MAPE target, issue 16).
inline constexpr double kMaxFlatError = 0.05;
// Why a fit of `points` points with fit quality r2 and worst error is refused, or "".
std::string PoorFit(double r2, double worst_error, int points);

// Why the fit does not hold for a profile, one line per family written to it: a fitted value on
// its bound, or R^2 below kMinProfileR2, each with the points that disagree most. Empty: it
// holds.
std::vector<std::string> FitRefusals(const FitResult& r);

}  // namespace parasim
