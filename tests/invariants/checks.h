// The invariants every answer of parasim keeps, checked on one drawn scenario at a time
// (tests/invariants_test.cc draws them). Each check appends what it saw break, never aborts:
// the suite reports every violation with the scenario that shows it.
//
//   Violations v;
//   CheckStep(scenario, report, lowered, timeline, &v);  // parts, bubbles, numbers, bytes
//   CheckMonotone(scenario, report, &v);                  // faster, roomier, recomputing
//   CheckRunViews(yaml, &v);                              // `run`'s text against its JSON
//   CheckSweep(scenario, &v);                             // front, best, threads, memory
#pragma once

#include <string>
#include <vector>

#include "scenarios/scenario.h"
#include "strategies/step.h"

namespace parasim::testing {

struct Violation {
  std::string check;   // "parts add up", "faster GPU is never slower", ...
  std::string detail;  // the numbers seen
};
using Violations = std::vector<Violation>;

// One replayed step: no NaN, infinity or negative number anywhere in its JSON; MFU and HFU at
// most 1; the busiest stage's parts add up to the step; each stage's bubble is the idle time
// of its rank in the timeline (recomputed here from the tasks' intervals); the mean bubble is
// the stages' mean; replayed again, the same JSON to the byte.
void CheckStep(const Scenario& s, const StepReport& r, const LoweredStep& low,
               const sim::Timeline& tl, Violations* out);

// A faster GPU (peaks and HBM x1.25) or fabric (bandwidth x1.25, latency x0.8) is never
// slower (within 0.1%: flows sharing a link can finish in a worse order) and the faster GPU
// prices no compute slower; overlapping TP collectives is never slower than blocking on them; more
// memory (x2) never fits less; full recompute never peaks above none.
void CheckMonotone(const Scenario& s, const StepReport& r, const LoweredStep& low, Violations* out);

// `run`'s text view says what its JSON view holds (step time, throughput, MFU, HFU, the bubble
// per stage, exposed communication, the verdict on memory), and a diff against the scenario on
// a faster GPU gives each side's parts adding up to its step.
void CheckRunViews(const std::string& yaml, const Scenario& s, Violations* out);

// A small sweep around the scenario (TP, PP, ZeRO, recompute, micro-batch, SP): its best is at
// least as good as every layout an exhaustive sweep replays, and the same layout; the Pareto
// front is the exhaustive one and non-dominated as printed; one and two threads give the same
// ranking and front; twice the memory fits every layout that fitted.
void CheckSweep(const Scenario& s, Violations* out);

}  // namespace parasim::testing
