// The report's charts, each a self-contained inline SVG with <title> hover texts: the pipeline
// timeline of a replayed step, memory over the step per stage, horizontal stacked bars, a
// throughput scatter, a simulated training run through its failures, and speedup against GPUs.
//
//   std::string svg = TimelineSvg(lowered, timeline);  // `parasim run --svg` writes this
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine.h"
#include "strategies/goodput.h"
#include "strategies/step.h"  // TaskCat

namespace parasim {

// One row per stage (compute stream) plus a thin row for its transfers; tasks shorter than a
// pixel are aggregated per pixel column by the category that fills most of it.
std::string TimelineSvg(const LoweredStep& low, const sim::Timeline& tl, int width = 1200);

// Peak-memory curves per stage over the step, with the GPU's capacity.
std::string MemorySvg(const LoweredStep& low, const sim::Timeline& tl, double capacity_bytes,
                      int width = 1200);

// One segment of a stacked bar: its value (bytes or seconds), colour and name.
struct Segment {
  double value;
  const char* colour;
  std::string name;
};

// Horizontal stacked bars, one per row, against `full` (a dashed line; 0 = none); a single bar
// gets a legend with every segment's value. Values are bytes when `bytes`, else seconds.
std::string StackedBars(const std::string& title, const std::vector<std::string>& rows,
                        const std::vector<std::vector<Segment>>& segs, double full,
                        const std::string& unit_note, bool bytes);

// One layout on a throughput scatter: its x (peak memory in GiB, or cost per million tokens).
struct ScatterPoint {
  double x;
  double tokens_per_s;
  bool front;         // on the Pareto front: drawn larger, in red
  std::string title;  // hover text
};

// The scatter's x axis: what it shows, a value marked by a dashed line when the axis reaches
// it (the memory capacity; 0 = none), and a tick label.
struct ScatterAxis {
  std::string label;
  double mark;
  std::function<std::string(double)> tick;
  std::string mark_title = "memory capacity";
};
ScatterAxis MemoryAxis(double capacity_bytes);
ScatterAxis CostAxis(bool priced);

// Throughput against x, both axes fitted to the points with 5% room (FitRange), ticked and
// labelled.
std::string ScatterSvg(const std::string& title, const std::vector<ScatterPoint>& pts,
                       const ScatterAxis& axis, int width);

// One simulated training run: training time kept against the wall clock, with its failures
// (red ticks, the rollback to the last checkpoint), planned stops (grey) and the failure-free
// line.
std::string GoodputSvg(const GoodputReport& g, int width = 1200);

// Speedup over the first point against GPUs (log scale), with the ideal line and the Amdahl
// fit of parallel fraction p, or, when `no_fit` says why there is none, without it; `points`
// are (GPUs, speedup), the first the baseline.
std::string SpeedupSvg(const std::vector<std::pair<double, double>>& points, double p,
                       const std::string& no_fit = "");

}  // namespace parasim
