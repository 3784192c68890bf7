// The self-contained HTML report (timeline, memory over time per stage against capacity, memory
// breakdown per stage, where the step time goes, goodput, what-if against B, and the sweep's
// scatter and table when given), and the report of a finished `sweep --json` or `scale --json`.
// No scripts, no network: inline SVG with <title> hover texts. The page is made of sections
// (tools/report_sections.h) drawn with charts (tools/report_charts.h) from SVG primitives
// (tools/report_svg.h).
//
//   ReportInput in{&scenario, &report, &lowered, &timeline, &memory};
//   WriteFileAtomic("report.html", ReportHtml(in));
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
#include "tools/report_charts.h"  // TimelineSvg, MemorySvg, GoodputSvg
#include "tools/report_svg.h"     // XmlEscape

namespace parasim {

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

std::string ReportHtml(const ReportInput& in);

// A report of a finished run from its JSON (`sweep --json` or `scale --json` output): the
// throughput vs memory scatter and table, or speedup vs GPUs with the ideal line and the Amdahl
// fit. Errors name the file.
StatusOr<std::string> ReportFromJson(const std::string& text, const std::string& file);

}  // namespace parasim
