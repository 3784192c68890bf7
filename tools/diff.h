// What-if diffs: two predicted steps side by side (parasim diff, report --vs, the Python
// module's diff): clusters and layouts, what moved by component (the busiest stage's step part
// by part: compute, bubble, each kind of exposed communication, which add up to the step time;
// memory per stage, MFU) and the one-line reason, as the sweep gives for its runners-up.
//
//   StepDiff d = DiffSteps(a, ra, b, rb);
//   for (const DiffRow& row : d.rows) ...;  d.reason
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "scenarios/scenario.h"
#include "strategies/step.h"

namespace parasim {

enum class DiffUnit : uint8_t { kSeconds, kTokensPerSecond, kPercent, kGiB };
std::string_view DiffUnitName(DiffUnit u);  // "s", "tokens/s", "%", "GiB"

struct DiffRow {
  std::string what;  // "step time", "gradient sync (DP)", "peak memory, stage 3"
  DiffUnit unit = DiffUnit::kSeconds;
  double a = 0, b = 0;
  bool in_a = true, in_b = true;  // a per-stage row that only one side has
  // One part of the busiest stage's step (StepParts): these rows add up to the step time.
  bool step_part = false;
};

struct StepDiff {
  std::string a_cluster, b_cluster;  // "1024 x NVIDIA A100-SXM4-80GB"
  std::string a_layout, b_layout;    // the sweep's short layout text
  std::vector<DiffRow> rows;
  std::string reason;  // "A is behind B: 12.3% less throughput: +0.80 s gradient sync"
};

// Memory rows go per stage up to this many stages, else one row for the worst stage.
inline constexpr size_t kDiffMaxStageRows = 16;

StepDiff DiffSteps(const Scenario& a, const StepReport& ra, const Scenario& b,
                   const StepReport& rb);

// "-3.872 s (-12.1%)", "+2.1 GiB", "-" when a side lacks the row.
std::string DiffChange(const DiffRow& row);
// The row's value on one side, with its unit: "31.972 s", "41.2%", "-".
std::string DiffValue(const DiffRow& row, bool side_b);

}  // namespace parasim
