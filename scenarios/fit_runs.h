// `parasim fit --runs FILE`: fits a few named, physically meaningful parameters of the cost model,
// within bounds, to the step times of a validation-format file (a team's own measured jobs, or
// the project's published runs), and writes them as a calibration profile.
//
// Parameters (each bounded, each a key of the calibration profile):
//   sustained_factor   in-step kernel rate over the rate benchmarked alone, per GPU [0.5, 1];
//   launch_overhead    host time per kernel (dispatch, framework), per GPU [1 us, 40 us];
//   host_op_time       host time to issue one framework op (a kernel or a collective) on the
//                      rank's host stream (RankTopology::Issue) [1 us, 200 us];
//   host_micro_batch_time  host time per micro-batch and stage beside its ops [0, 20 ms];
//   host_step_time     host time per step beside its ops (optimizer, logging) [0, 500 ms];
//   <inter>.efficiency achieved fraction of the inter-node fabric's bandwidth [0.5, 1], fitted
//                      only when some case crosses nodes.
// Least squares on relative errors by a bounded Levenberg-Marquardt on finite differences. A case
// that sweeps (knobs its source did not state) keeps the layout its sweep picks at the starting
// parameters while fitting. Leave-one-out: each case predicted with the parameters fitted on the
// others (one linearised step from the full fit, then replayed).
#pragma once

#include <string>
#include <vector>

#include "hardware/profile.h"
#include "scenarios/validate.h"
#include "sim/status.h"

namespace parasim {

struct RunsParam {
  std::string name;  // profile key
  double lo = 0, hi = 0, start = 0, fitted = 0;
  std::string unit;  // "" or "us"
};

struct RunsCase {
  std::string name;
  std::string layout;
  double measured_s = 0, before_s = 0, after_s = 0, held_out_s = 0;
};

struct RunsFit {
  std::string gpu;
  std::vector<RunsParam> params;
  std::vector<RunsCase> cases;
  std::vector<std::string> skipped;  // cases left out, with the reason
  // What the subsets.yaml beside each file stated for its cases ("file: key=value").
  std::vector<std::string> stated;
  double mape_before = 0, mape_after = 0, mape_held_out = 0;
  CalibrationProfile profile;
};

// The parameters FitRuns can fit, by name ("efficiency" is the inter-node fabric's).
const std::vector<std::string>& RunsParamNames();

// One or more files, fitted together (one parameter set; every case on one GPU). `only` names
// the parameters to fit (RunsParamNames; empty = all); the others keep the cluster's values.
StatusOr<RunsFit> FitRuns(const std::vector<std::string>& paths,
                          const std::vector<std::string>& sets, const SweepOptions& options,
                          const std::vector<std::string>& only = {}, const CaseFilter& filter = {});

}  // namespace parasim
