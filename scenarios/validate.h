// Validation against published measurements (SCENARIO.md "Validation file"): each case is a
// scenario fragment deep-merged over the file's defaults; a case with a sweep block (knobs the
// publication did not state) is predicted by the best layout its sweep finds. A case whose
// layout (or every layout of its sweep) does not fit in memory is reported as failed, with the
// reason, and the file goes on; MAPE is over the cases predicted.
//
//   StatusOr<ValidationReport> r = Validate("tests/validation/megatron-sc21-table1.yaml", {});
//   r->mape, r->cases[i].error   // signed: predicted / measured - 1
//
// `parasim fit --runs` loads the cases once (LoadValidationFile) and predicts them again under
// each candidate set of parameters (PredictCase on a changed cluster).
#pragma once

#include <string>
#include <vector>

#include "sim/status.h"
#include "sim/yaml_context.h"
#include "strategies/sweep.h"

namespace parasim {

struct ValidationCase {
  std::string name;
  double predicted_s = 0;
  double measured_s = 0;  // 0: no measured step time (a case that gives only peak memory)
  double error = 0;       // predicted / measured - 1
  std::string layout;     // the layout predicted (the sweep's best when the case sweeps)
  std::string note;       // the measurement's note
  bool ok = true;         // false: no prediction (nothing fits); `failure` says why
  std::string failure;
  // Why the case could not even be loaded (an `import:` that parasim cannot express, a node
  // count not given): the case is failed with it and the file goes on; "" = loaded.
  std::string load_failure;
  // measured.peak_memory (0 = not given) against the prediction of the stage it was measured on
  // (`peak_memory_stage: last`, the last pipeline stage, as Megatron-LM's last rank logs it; or
  // `max`, the largest stage). memory_error = predicted / measured - 1.
  double measured_peak_bytes = 0;
  double predicted_peak_bytes = 0;
  double memory_error = 0;
  bool peak_stage_last = false;
  bool has_time() const { return measured_s > 0; }
  bool has_memory() const { return measured_peak_bytes > 0; }
  // measured.basis: `step` (a steady-state step) or `wall_clock` (a published average over a
  // whole run, failures, restarts and checkpoints included, such as GPU-hours per token): then
  // the prediction compared is the step time over the goodput of the case's training.tokens.
  bool wall_clock = false;
  double goodput = 1;  // the goodput applied (wall_clock), else 1
  // Ranking: cases that train the same architecture at the same sequence length share a group
  // (the index of its first case), and their costs per sequence compare as layouts a planner
  // ranks. -1: not ranked (its sweep varies the global batch or the hardware).
  int rank_group = -1;
  double gpus_per_sequence = 0;  // GPUs / global batch: step time x this = GPU-seconds a sequence
  // validate --robust: the predicted layout replayed under each of sweep --robust's swings
  // (strategies/robustness.h), the shortest and longest prediction and the swings that give
  // them; 0 when not asked.
  double swing_lo_s = 0, swing_hi_s = 0;
  std::string swing_lo, swing_hi;
  bool within_swings() const { return swing_lo_s <= measured_s && measured_s <= swing_hi_s; }
};

// Two cases of one rank group, their GPU-seconds per sequence as a ratio (a over b).
struct RankedPair {
  std::string a, b;
  double measured_ratio = 1;
  double predicted_ratio = 1;
};

// How many pairs of a file's cases the predictions order as the measurements do: what a
// planner's choice between two layouts of the same model rests on. Pairs whose measured costs
// lie within kRankTie (strategies/sweep.h) of each other are ties, where either choice is right,
// and are not scored.
struct Ranking {
  int scored = 0;   // pairs whose measured costs differ by more than kRankTie
  int ordered = 0;  // of those, the pairs the predictions order as measured
  int ties = 0;
  std::vector<RankedPair> misordered;
};

struct ValidationReport {
  std::string source;
  // What the subsets.yaml beside the file states for its cases (key=value, as --set).
  std::vector<std::string> stated;
  std::vector<ValidationCase> cases;
  double mape = 0;           // mean of |error| over the cases predicted
  double max_abs_error = 0;  // largest |error|
  int failed = 0;            // cases without a prediction
  int timed = 0;             // cases predicted with a measured step time (mape's)
  // Peak memory over the cases predicted that give measured.peak_memory.
  double memory_mape = 0;
  double max_abs_memory_error = 0;
  int memory_cases = 0;
  Ranking ranking;  // over the cases predicted
  // validate --robust: the cases predicted with their swings, and those whose measured step
  // lies within the range the swings span.
  int swung = 0, within_swings = 0;
};

// One case as loaded: its measurement and its scenario (defaults merged, --set applied); a case
// whose `import:` failed holds its reason in measured.load_failure and no scenario.
struct ValidationInput {
  ValidationCase measured;  // name, measured_s and note
  Scenario scenario;
};

struct ValidationFile {
  std::string path;
  std::string source;
  std::vector<std::string> stated;  // applied to every case (ValidationReport::stated)
  std::vector<ValidationInput> cases;
};

// Which of a file's cases to load (validate and fit --runs: --subset, --gpu, --nodes): those the
// subset `subset` of the subsets.yaml beside the file holds (the file itself, or a case by its
// name up to " (", as tests/validation/megatron-ci/subsets.yaml lists cases), on catalog GPU
// `gpu`, on `nodes` nodes. Empty or 0 keeps every case.
struct CaseFilter {
  std::string subset;
  std::string gpu;
  int64_t nodes = 0;
  bool empty() const { return subset.empty() && gpu.empty() && nodes == 0; }
};

StatusOr<ValidationFile> LoadValidationFile(const YamlInput& input,
                                            const std::vector<std::string>& sets,
                                            const CaseFilter& filter = {});
// A case's sweep: the options' threads and cap, no results file, no resume.
StatusOr<SweepOutcome> SweepCase(const Scenario& s, const SweepOptions& options);
// Why a case's sweep ranked nothing: no valid layout, or the leanest one and its memory.
std::string NoLayoutFits(const SweepOutcome& r);
// Predicts one case into `c` (predicted_s, error, layout, or ok = false with the reason); with
// `robust`, also the range sweep --robust's swings span (swing_lo_s, swing_hi_s).
Status PredictCase(const Scenario& s, const SweepOptions& options, ValidationCase* c,
                   bool robust = false);
// MAPE, max |error|, failures and the ranking over the cases.
ValidationReport Summarize(std::string source, std::vector<ValidationCase> cases);

StatusOr<ValidationReport> Validate(const YamlInput& input, const std::vector<std::string>& sets,
                                    const SweepOptions& options, bool robust = false,
                                    const CaseFilter& filter = {});

}  // namespace parasim
