#include "tools/report_svg.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace parasim {

std::string Num(double x) { return fmt::format("{:.1f}", x); }

double TickStep(double span) {
  const double raw = span / 8;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * mag) return m * mag;
  }
  return 10 * mag;
}

std::string AxisSeconds(double t, double step) {
  struct Unit {
    double scale;
    const char* name;
  };
  for (Unit u : {Unit{1, "s"}, Unit{1e-3, "ms"}, Unit{1e-6, "us"}}) {
    if (step >= u.scale * 0.999) return fmt::format("{:g} {}", t / u.scale, u.name);
  }
  return fmt::format("{:g} ns", t * 1e9);
}

std::string AxisCount(double x) {
  if (x >= 1e6) return fmt::format("{:g}M", x / 1e6);
  if (x >= 1e3) return fmt::format("{:g}k", x / 1e3);
  return fmt::format("{:g}", x);
}

std::string XTicks(double span, double x0, double w, double y,
                   const std::function<std::string(double, double)>& label) {
  return XTicksIn({0, span, TickStep(span)}, x0, w, y, label);
}

AxisRange FitRange(double lo, double hi) {
  const double pad = hi > lo ? 0.05 * (hi - lo) : std::max(0.05 * std::fabs(hi), 1e-9);
  lo -= pad;
  hi += pad;
  const double step = TickStep(hi - lo);
  return {std::floor(lo / step) * step, std::ceil(hi / step) * step, step};
}

std::string XTicksIn(const AxisRange& r, double x0, double w, double y,
                     const std::function<std::string(double, double)>& label) {
  std::string svg;
  const double span = r.hi - r.lo;
  // Counted ticks: a running sum of steps would drift off the multiples.
  const auto ticks = static_cast<int64_t>(std::floor(span / r.step * 1.0001));
  for (int64_t k = 0; k <= ticks; ++k) {
    const double t = r.lo + static_cast<double>(k) * r.step;
    const double x = x0 + (t - r.lo) / span * w;
    svg += fmt::format(
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#666\"/><text x=\"{}\" y=\"{}\" "
        "font-size=\"11\" text-anchor=\"middle\">{}</text>\n",
        Num(x), Num(y), Num(x), Num(y + 5), Num(x), Num(y + 17),
        XmlEscape(label(std::fabs(t) < 1e-9 * r.step ? 0.0 : t, r.step)));
  }
  return svg;
}

namespace {
constexpr int kLegendItemWidth = 110;  // a swatch and the longest category name at 12 px
}  // namespace

int LegendRows(int width) {
  const int per_row = std::max(1, width / kLegendItemWidth);
  return (kNumTaskCats + per_row - 1) / per_row;
}

std::string Legend(int x, int y, int width, int* rows) {
  const int per_row = std::max(1, width / kLegendItemWidth);
  std::string out;
  for (int c = 0; c < kNumTaskCats; ++c) {
    const int lx = x + (c % per_row) * kLegendItemWidth, ly = y + (c / per_row) * 20;
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{}\" "
        "font-size=\"12\">{}</text>",
        lx, ly, kTaskColours[c], lx + 16, ly + 11, XmlEscape(TaskCatName(static_cast<TaskCat>(c))));
  }
  if (rows) *rows = LegendRows(width);
  return out;
}

std::string SvgOpen(int width, int height) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\">\n",
      width, height, width, height);
}

std::string XmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace parasim
