// Scaling studies and advice: the best layout at each GPU count, speedup and parallel
// efficiency, the Amdahl parallel fraction fitted by least squares, Karp-Flatt serial fractions;
// whether to distribute at all, and the fewest GPUs that hold the model under each strategy.
//
//   StatusOr<ScaleOutcome> r = RunScale(scenario, {8, 16, 32, 64}, /*weak=*/false, {});
//   r->points[i].speedup, r->parallel_fraction
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/status.h"
#include "strategies/plan.h"
#include "strategies/sweep.h"

namespace parasim {

struct ScalePoint {
  int64_t gpus = 0;
  bool found = false;  // some layout fits at this size
  std::string reason;  // why not, when !found
  SweepEntry best;
  StepReport report;
  double speedup = 0;     // throughput over the first point's
  double efficiency = 0;  // speedup / (gpus / first gpus)
  // Experimentally determined serial fraction (0 at the first point; NaN under weak scaling).
  double karp_flatt = 0;
  // Throughput kept through failures, checkpoints and stragglers at this size (GoodputFactor;
  // 1 with `reliability: none`), and the efficiency with it, against the first point's.
  double goodput = 1;
  double goodput_efficiency = 0;
};

struct ScaleOutcome {
  std::vector<ScalePoint> points;
  // Amdahl p fitted over the points found, for strong scaling with at least two of them; else
  // 0 and why the fit was skipped.
  double parallel_fraction = 0;
  std::string amdahl_skipped;
  // The least-squares p before it is kept within [0, 1], and why it lies outside where it does.
  double raw_parallel_fraction = 0;
  std::string amdahl_note;
  bool weak = false;
  // What of the scenario's sweep block scale does not take, in words.
  std::vector<std::string> notes;
};

// Amdahl's law: speedup on n workers of a job whose fraction p parallelises.
double AmdahlSpeedup(double p, double n);
// Least-squares fit (Eigen) of Amdahl's p to speedups measured at relative sizes n (n[0] = 1).
double FitAmdahl(const std::vector<double>& n, const std::vector<double>& speedup);
// The same fit before it is kept within [0, 1].
double FitAmdahlRaw(const std::vector<double>& n, const std::vector<double>& speedup);
// Karp-Flatt serial fraction of a speedup s on n workers.
double KarpFlatt(double s, double n);

// The cluster resized to `gpus` (whole nodes, or one partial node).
StatusOr<ClusterSpec> Resize(const ClusterSpec& c, int64_t gpus);

// The scenario's sweep block (or, without one, tp/pp/dp auto, micro-batch 1-2, ZeRO 0/1/3,
// every recompute mode, SP with TP) at each GPU count. Strong scaling keeps the global batch; weak
// scaling keeps the batch per GPU.
StatusOr<ScaleOutcome> RunScale(const Scenario& base, const std::vector<int64_t>& gpus, bool weak,
                                const SweepOptions& options);

struct StrategyMinimum {
  std::string strategy;  // "DP", "ZeRO-3", "TP", "PP", "TP x PP", "TP x PP + ZeRO-1"
  int64_t gpus = 0;      // 0 = never fits
  std::string layout;    // the layout that fits on `gpus` (its DP included)
  std::string why_none;  // when none fits: the largest layout tried, its need and the limit
};

struct Advice {
  bool fits_one_gpu = false;
  double one_gpu_peak_bytes = 0;
  double one_gpu_capacity_bytes = 0;  // what a GPU holds for the step (the memory model's)
  double one_gpu_step_s = 0;
  double one_gpu_days = 0;  // time to train on one GPU (training.tokens), 0 if unknown
  std::string verdict;      // one paragraph
  std::vector<StrategyMinimum> minimums;
};

// The fewest GPUs per strategy are searched over powers of two: DP alone; ZeRO-3 over DP; TP
// within a node; PP up to a layer a stage; TP x PP; and TP x PP + ZeRO-1 over the least DP
// (2, 4, ...) with which it fits (its layout names that DP).
// `best_days`: time to train with the best layout found on the full cluster (0 if unknown).
Advice Advise(const Scenario& s, double best_days);

}  // namespace parasim
