// Pictures of a replayed step: the pipeline timeline as SVG, and a self-contained HTML report
// (timeline, memory over time per stage against capacity, memory breakdown per stage, where the
// step time goes, and the sweep's throughput vs memory scatter when given). No scripts, no
// network: inline SVG with <title> hover texts.
#pragma once

#include <string>
#include <vector>

#include "scenarios/scenario.h"
#include "sim/engine.h"
#include "sim/status.h"
#include "strategies/goodput.h"
#include "strategies/memory.h"
#include "strategies/robustness.h"
#include "strategies/step.h"
#include "strategies/sweep.h"
#include "tools/diff.h"

namespace parasim {

// One row per stage (compute stream) plus a thin row for its transfers; tasks shorter than a
// pixel are aggregated per pixel column by the category that fills most of it.
std::string TimelineSvg(const LoweredStep& low, const sim::Timeline& tl, int width = 1200);

// Peak-memory curves per stage over the step, with the GPU's capacity.
std::string MemorySvg(const LoweredStep& low, const sim::Timeline& tl, double capacity_bytes,
                      int width = 1200);

struct ReportInput {
  const Scenario* scenario = nullptr;
  const StepReport* report = nullptr;
  const LoweredStep* lowered = nullptr;
  const sim::Timeline* timeline = nullptr;
  const MemoryReport* memory = nullptr;
  const SweepOutcome* sweep = nullptr;     // optional
  const StepDiff* diff = nullptr;          // optional: report A --vs B
  const GoodputReport* goodput = nullptr;  // optional: failures, checkpoints, stragglers
  const Robustness* robust = nullptr;      // optional: report --robust, with the sweep
};

// One simulated training run: training time kept against the wall clock, with its failures
// (red ticks, the rollback to the last checkpoint), planned stops (grey) and the failure-free
// line.
std::string GoodputSvg(const GoodputReport& g, int width = 1200);

std::string ReportHtml(const ReportInput& in);

// A report of a finished run from its JSON (`sweep --json` or `scale --json` output): the
// throughput vs memory scatter and table, or speedup vs GPUs with the ideal line and the Amdahl
// fit. Errors name the file.
StatusOr<std::string> ReportFromJson(const std::string& text, const std::string& file);

// Escapes text for XML/HTML content and attributes.
std::string XmlEscape(std::string_view s);

}  // namespace parasim
