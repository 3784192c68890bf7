// SVG primitives of the report's pictures: a colour per task category, numbers to one decimal,
// axis ticks at 1, 2 or 5 x 10^k with labels in the tick's unit, the category legend, and XML
// escaping. The charts (tools/report_charts.h) are drawn with these.
//
//   svg += XTicks(span_s, x0, width, y, AxisSeconds);  // "0 s", "5 s", "10 s" under an axis
#pragma once

#include <array>
#include <functional>
#include <string>
#include <string_view>

#include "strategies/step.h"  // TaskCat

namespace parasim {

// Tableau 10, one colour per task category (TaskCat order).
inline constexpr std::array<const char*, kNumTaskCats> kTaskColours = {
    "#4e79a7",  // forward
    "#59a14f",  // backward
    "#f28e2b",  // recompute
    "#b07aa1",  // optimizer
    "#e15759",  // tp
    "#ff9da7",  // cp
    "#9c755f",  // ep
    "#76b7b2",  // pp
    "#edc948",  // dp
    "#bab0ac",  // compress
    "#d37295",  // dp-copy
    "#79706e",  // host
};

// A coordinate or length to one decimal ("12.5").
std::string Num(double x);
// Axis ticks at 1, 2 or 5 x 10^k, about eight over `span`.
double TickStep(double span);
// A tick label in the unit of the tick step, so the axis starts at "0 s" and reads 5 s, 10 s.
std::string AxisSeconds(double t, double step);
// Tokens per second for an axis: 0, 50k, 100k, 1.5M.
std::string AxisCount(double x);
// Ticks and labels under a horizontal axis from 0 to `span` drawn over [x0, x0 + w] at y.
std::string XTicks(double span, double x0, double w, double y,
                   const std::function<std::string(double, double)>& label);
// An axis fitted to data: [lo, hi] padded by 5% of its span on each side (of the value when
// the data are one point), then widened to multiples of `step` (TickStep of the span).
struct AxisRange {
  double lo, hi, step;
};
AxisRange FitRange(double lo, double hi);
// Ticks and labels under a horizontal axis over [r.lo, r.hi], drawn over [x0, x0 + w] at y.
std::string XTicksIn(const AxisRange& r, double x0, double w, double y,
                     const std::function<std::string(double, double)>& label);
// A swatch and name per task category, in rows from (x, y) that wrap within `width` pixels;
// `*rows` (when given) receives how many rows it took (20 px each).
std::string Legend(int x, int y, int width, int* rows = nullptr);
// The legend's rows for a width.
int LegendRows(int width);
// "<svg ...>" of the given size, sans-serif.
std::string SvgOpen(int width, int height);
// Escapes text for XML/HTML content and attributes.
std::string XmlEscape(std::string_view s);

}  // namespace parasim
