// Serving validation (docs/SERVING.md, "Validation"): a validation file whose cases are serving
// scenarios (defaults and cases as in SCENARIO.md "Validation file", each case naming its
// primary source), each measured by any of throughput, TTFT and TPOT at a percentile; every case
// is replayed at its stated settings (no fit per case) and what was measured is compared.
//
// A run served near its capacity (MLPerf's Server runs sit a few percent below it) has latencies
// that a small error in the predicted capacity moves a lot, so a case may also be compared in
// views that take the load out, each beside the stated settings, never in their place:
//   - at the run's load fraction (`measured.offline_case`): its arrival rate scaled by the
//     predicted over the measured throughput of the Offline case of the same system;
//   - at the run's concurrency (`measured.e2e_mean`, `tpot_mean`): a closed loop of rate x mean
//     latency clients (Little's law), the iteration at the run's batch; its mean TPOT compared;
//   - (`search`) the highest rate within the case's `serving.slo` against the rate the run held;
//   - at the stated rate x (1 -/+ kLoadBand): whether a capacity error of kLoadBand alone would
//     bring a latency figure within kWithin (BandWithin).
//
//   if (IsServingValidationFile(input)) {
//     StatusOr<ServingValidationReport> r = ValidateServing(input, {}, /*jobs=*/2, false);
//     r->throughput.mape, r->ttft.within, r->cases[i].tokens.error, r->cases[i].at_load.tpot_p99
//   }
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/status.h"
#include "sim/yaml_context.h"
#include "strategies/serving_report.h"
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

// TTFT and TPOT at P99 and P50, seconds.
struct LatencyFigures {
  ServingFigure ttft_p99, tpot_p99, ttft_p50, tpot_p50;
};

struct ServingValidationCase {
  std::string name;
  std::string source;  // the case's primary source
  std::string note;
  std::string layout;     // as replayed
  double rate_per_s = 0;  // the case's Poisson arrival rate (the rate the run held); 0: none
  ServingFigure tokens;   // output tokens/s, all GPUs
  LatencyFigures latency;
  // At the run's load fraction: the rate scaled by load_scale, the Offline case's predicted over
  // measured throughput (0: no view).
  std::string offline_case;
  double load_scale = 0;
  LatencyFigures at_load;
  // At the run's concurrency: rate x e2e_mean clients (0: no view), the mean TPOT there.
  double e2e_mean = 0;  // measured, seconds
  double concurrency = 0;
  ServingFigure tpot_mean;
  // The highest Poisson rate within the case's targets (predicted, searched) against the rate
  // the run held (measured).
  ServingFigure max_rate;
  // A Poisson case's load against the replay's capacity (ServingReport::load; 0: none), and its
  // latencies replayed at the rate x (1 - kLoadBand) and x (1 + kLoadBand): the span an error of
  // kLoadBand in the predicted capacity alone gives each figure.
  double load = 0;
  double capacity_per_s = 0;
  LatencyFigures band_lo, band_hi;
  bool ok = true;
  std::string failure;  // why there is no prediction
};

// MAPE, the largest |error| and the figures within kWithin of one figure over the cases that
// give it.
struct FigureSummary {
  int cases = 0;
  double mape = 0;
  double max_abs_error = 0;
  int within = 0;
};
// The latency target: TTFT and TPOT within 20% where published (issue 63).
inline constexpr double kWithin = 0.20;

struct ServingValidationReport {
  std::string source;
  std::vector<ServingValidationCase> cases;
  FigureSummary throughput, ttft, tpot;  // TTFT and TPOT: their P99 and P50 together
  FigureSummary load_ttft, load_tpot;    // at the run's load fraction
  FigureSummary concurrency_tpot;        // the mean TPOT at the run's concurrency
  FigureSummary max_rate;                // max_rate_at_slo against the run's rate
  // TTFT and TPOT figures of which some prediction in the span x (1 -/+ kLoadBand) of the rate
  // (or, for a case without one, the prediction at the stated rate) lies within kWithin of the
  // measurement (out of ttft.cases and tpot.cases).
  int band_ttft_within = 0, band_tpot_within = 0;
  int failed = 0;
};

// The lowest and highest of a figure's predictions at the stated rate and at x (1 - kLoadBand)
// and x (1 + kLoadBand) (a P99 need not rise with the rate).
std::pair<double, double> PredictedSpan(const ServingFigure& stated, const ServingFigure& lo,
                                        const ServingFigure& hi);
// Whether some prediction in that span lies within kWithin of the measurement.
bool BandWithin(const ServingFigure& stated, const ServingFigure& lo, const ServingFigure& hi);

struct ServingValidationInput {
  ServingValidationCase measured;
  ServingScenario scenario;
  // The file's case that measured.offline_case names (the first of that name that gives a
  // throughput), resolved at load; -1 without one.
  int64_t offline_index = -1;
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
// Replays every case (on `jobs` threads, 0 = every core) and compares; with `search`, also
// searches max_rate_at_slo of the cases with targets (a replay per rate tried).
StatusOr<ServingValidationReport> ValidateServing(const YamlInput& input,
                                                  const std::vector<std::string>& sets, int jobs,
                                                  bool search);

}  // namespace parasim
