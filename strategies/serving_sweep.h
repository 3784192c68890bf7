// A serving sweep: the layouts of a serving scenario's model over its GPUs (TP x PP x EP
// replicas, and prefill/decode pools with their splits), each replayed, ranked by the output
// tokens a second per GPU that meet the latency targets (at the highest arrival rate that holds
// them; without targets, at the scenario's own arrivals), with advice in the terms of the seeds'
// inference lessons: replicate rather than shard a model that fits, PP adds latency to every
// token, and when disaggregating prefill from decode pays.
//
//   PARASIM_ASSIGN_OR_RETURN(ServingSweepOutcome o, RunServingSweep(scenario, /*jobs=*/0));
//   o.ranked[0].layout, o.ranked[0].score, o.advice
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/status.h"
#include "strategies/serving_report.h"
#include "strategies/serving_spec.h"

namespace parasim {

struct ServingCandidate {
  ServingLayout layout;
  ServingReport report;
  // Output tokens a second per GPU meeting the targets (see the header); 0 when none holds.
  double score = 0;
  bool ok = false;     // fits and holds the targets at some rate
  std::string reason;  // why not
};

struct ServingSweepOutcome {
  std::vector<ServingCandidate> ranked;    // ok, best first
  std::vector<ServingCandidate> excluded;  // not ok, with the reason
  int64_t layouts = 0;                     // enumerated
  double elapsed_s = 0;                    // wall clock of the whole sweep
  std::vector<std::string> advice;
};

// Every layout the sweep block (or, without one, the defaults) spans on the scenario's GPUs that
// passes CheckServingLayout; `refused`, when given, says why the first that did not was refused.
std::vector<ServingLayout> ServingLayouts(const ServingScenario& s, std::string* refused = nullptr);

// `jobs`: threads, 0 = every core.
StatusOr<ServingSweepOutcome> RunServingSweep(const ServingScenario& s, int jobs);

}  // namespace parasim
