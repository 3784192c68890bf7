#include "tools/report_svg.h"

#include <fmt/core.h>

#include <cmath>

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
  std::string svg;
  const double step = TickStep(span);
  for (double t = 0; t <= span * 1.0001; t += step) {
    const double x = x0 + t / span * w;
    svg += fmt::format(
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#666\"/><text x=\"{}\" y=\"{}\" "
        "font-size=\"11\" text-anchor=\"middle\">{}</text>\n",
        Num(x), Num(y), Num(x), Num(y + 5), Num(x), Num(y + 17), XmlEscape(label(t, step)));
  }
  return svg;
}

std::string Legend(int x, int y) {
  std::string out;
  for (int c = 0; c < kNumTaskCats; ++c) {
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{}\" "
        "font-size=\"12\">{}</text>",
        x + c * 110, y, kTaskColours[c], x + c * 110 + 16, y + 11,
        XmlEscape(TaskCatName(static_cast<TaskCat>(c))));
  }
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
