// The sections of the HTML report of a scenario (tools/report.h puts them on a page): the
// summary of the replayed step, the memory breakdown per stage, where the step time goes, the
// goodput of a simulated run, the what-if against B, the sweep's scatter and table, and how far
// the sweep's answer holds. Each returns HTML (with inline SVG) to append to the page's body.
//
//   std::string h = SummaryHtml(scenario, report) + StepTimeHtml(report);
#pragma once

#include <string>
#include <vector>

#include "strategies/goodput.h"
#include "strategies/memory.h"
#include "strategies/robustness.h"
#include "strategies/step.h"
#include "strategies/sweep.h"
#include "tools/diff.h"

namespace parasim {

// The scenario's title, its layout in words, and a table of the step's figures; the warnings.
std::string SummaryHtml(const Scenario& s, const StepReport& r);

// Memory per GPU by stage: parameters, gradients, optimizer states, activations and other,
// against the capacity.
std::string MemoryBreakdownSvg(const MemoryReport& m);

// Compute, bubble and each kind of exposed communication of the busiest stage.
std::string StepTimeHtml(const StepReport& r);

// The goodput in words and the first simulated run.
std::string GoodputHtml(const GoodputReport& g);

// The what-if table (report A --vs B): both layouts, what moved, and why.
std::string DiffHtml(const StepDiff& d);

// A sweep's scatter (throughput against peak memory, or a co-design sweep's cost per token) with
// its Pareto front, and its top ten; with --robust, the swings. `capacity_bytes` is the GPU's.
std::string SweepSectionHtml(const Scenario& base, const SweepOutcome& sw, double capacity_bytes,
                             const Robustness* robust);

// One swing of `sweep --robust` as the report shows it.
struct SwingRow {
  std::string swing;    // "scale-out fabric x0.78"
  std::string applied;  // "eth-100g efficiency 0.7 -> 0.546"
  int first_rank = 1;
  std::string first_layout;
  double behind = 0;
  bool holds = true;
};

// How far the answer holds: each swing, what it moves, which leader is first and by how much.
std::string RobustnessHtml(const std::vector<SwingRow>& rows, int held);

}  // namespace parasim
