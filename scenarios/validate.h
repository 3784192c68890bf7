// Validation against published measurements (SCENARIO.md "Validation file"): each case is a
// scenario fragment deep-merged over the file's defaults; a case with a sweep block (knobs the
// publication did not state) is predicted by the best layout its sweep finds.
//
//   StatusOr<ValidationReport> r = Validate("tests/validation/megatron-sc21-table1.yaml", {});
//   r->mape, r->cases[i].error   // signed: predicted / measured - 1
#pragma once

#include <string>
#include <vector>

#include "sim/status.h"
#include "strategies/sweep.h"

namespace parasim {

struct ValidationCase {
  std::string name;
  double predicted_s = 0;
  double measured_s = 0;
  double error = 0;    // predicted / measured - 1
  std::string layout;  // the layout predicted (the sweep's best when the case sweeps)
  std::string note;    // the measurement's note
};

struct ValidationReport {
  std::string source;
  std::vector<ValidationCase> cases;
  double mape = 0;           // mean of |error|
  double max_abs_error = 0;  // largest |error|
};

StatusOr<ValidationReport> Validate(const std::string& path, const std::vector<std::string>& sets,
                                    const SweepOptions& options);

}  // namespace parasim
