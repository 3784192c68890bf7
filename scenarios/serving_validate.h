// Serving validation (docs/SERVING.md, "Validation"): a validation file whose cases are serving
// scenarios (defaults and cases as in SCENARIO.md "Validation file", each case naming its
// primary source), each measured by any of throughput, TTFT and TPOT at a percentile; every case
// is replayed at its stated settings (no fit per case) and what was measured is compared.
//
//   if (IsServingValidationFile(input)) {
//     StatusOr<ServingValidationReport> r = ValidateServing(input, {}, /*jobs=*/2);
//     r->throughput.mape, r->ttft.mape, r->cases[i].tokens.error
//   }
#pragma once

#include <string>
#include <vector>

#include "sim/status.h"
#include "sim/yaml_reader.h"
#include "strategies/serving_spec.h"

namespace parasim {

// The keys a serving case's `measured` accepts: the throughput and latencies it may give.
const std::vector<std::string_view>& ServingMeasuredKeys();

// One figure of a case: measured (0 = not given), predicted, signed error predicted/measured-1.
struct ServingFigure {
  double measured = 0;
  double predicted = 0;
  double error = 0;
  bool given() const { return measured > 0; }
};

struct ServingValidationCase {
  std::string name;
  std::string source;  // the case's primary source
  std::string note;
  std::string layout;                                    // as replayed
  ServingFigure tokens;                                  // output tokens/s, all GPUs
  ServingFigure ttft_p99, tpot_p99, ttft_p50, tpot_p50;  // seconds
  bool ok = true;
  std::string failure;  // why there is no prediction
};

// MAPE and the largest |error| of one figure over the cases that give it.
struct FigureSummary {
  int cases = 0;
  double mape = 0;
  double max_abs_error = 0;
};

struct ServingValidationReport {
  std::string source;
  std::vector<ServingValidationCase> cases;
  FigureSummary throughput, ttft, tpot;  // TTFT and TPOT: their P99 and P50 together
  int failed = 0;
};

struct ServingValidationInput {
  ServingValidationCase measured;
  ServingScenario scenario;
};
struct ServingValidationFile {
  std::string path, source;
  std::vector<ServingValidationInput> cases;
};

// Whether a validation file's cases are serving ones (its defaults or first case hold a
// `serving` block); false when it does not parse.
bool IsServingValidationFile(const YamlInput& input);
StatusOr<ServingValidationFile> LoadServingValidationFile(const YamlInput& input,
                                                          const std::vector<std::string>& sets);
// Replays every case (on `jobs` threads, 0 = every core) and compares.
StatusOr<ServingValidationReport> ValidateServing(const YamlInput& input,
                                                  const std::vector<std::string>& sets, int jobs);

}  // namespace parasim
