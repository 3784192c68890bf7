#include "tools/report_svg.h"

#include <doctest/doctest.h>

#include <string>

namespace parasim {
namespace {

TEST_CASE("axis ticks at 1, 2 or 5 x 10^k, about eight over the span") {
  CHECK(TickStep(8) == doctest::Approx(1));
  CHECK(TickStep(10) == doctest::Approx(2));
  CHECK(TickStep(30) == doctest::Approx(5));
  CHECK(TickStep(0.016) == doctest::Approx(0.002));
  CHECK(TickStep(700) == doctest::Approx(100));
}

TEST_CASE("tick labels in the unit of the tick step") {
  CHECK(AxisSeconds(0, 5) == "0 s");
  CHECK(AxisSeconds(10, 5) == "10 s");
  CHECK(AxisSeconds(0.004, 0.002) == "4 ms");
  CHECK(AxisSeconds(3e-6, 1e-6) == "3 us");
  CHECK(AxisSeconds(2e-9, 1e-9) == "2 ns");
  CHECK(AxisCount(0) == "0");
  CHECK(AxisCount(50000) == "50k");
  CHECK(AxisCount(1.5e6) == "1.5M");
  CHECK(Num(12.345) == "12.3");
}

TEST_CASE("ticks under an axis, one per step from 0 to the span") {
  const std::string svg = XTicks(10, 90, 1000, 250, AxisSeconds);
  for (const char* tick : {">0 s<", ">2 s<", ">4 s<", ">6 s<", ">8 s<", ">10 s<"}) {
    CHECK(svg.find(tick) != std::string::npos);
  }
  CHECK(svg.find(">12 s<") == std::string::npos);
  CHECK(svg.find("x1=\"1090.0\"") != std::string::npos);  // 10 s at the axis' end
}

TEST_CASE("an axis fitted to the data: padded, on tick multiples, not from 0") {
  const AxisRange r = FitRange(20.5, 77.3);  // peak memory of a sweep's layouts, GiB
  CHECK(r.step == doctest::Approx(10));
  CHECK(r.lo == doctest::Approx(10));
  CHECK(r.hi == doctest::Approx(90));
  const AxisRange t = FitRange(40'000, 63'000);  // tokens/s
  CHECK(t.lo > 0);
  CHECK(t.lo <= 40'000 - 0.05 * 23'000);
  CHECK(t.hi >= 63'000 + 0.05 * 23'000);
  const AxisRange one = FitRange(5, 5);  // a single point: room around it
  CHECK(one.lo < 5);
  CHECK(one.hi > 5);
  const std::string ticks = XTicksIn(
      r, 90, 800, 250, [](double v, double) { return std::to_string(static_cast<int>(v)); });
  for (const char* tick : {">10<", ">50<", ">90<"}) CHECK(ticks.find(tick) != std::string::npos);
  CHECK(ticks.find(">0<") == std::string::npos);
}

TEST_CASE("a legend swatch per task category, wrapped within its width; an SVG element") {
  int rows = 0;
  const std::string legend = Legend(90, 300, 1090, &rows);
  // 110 px an item: 9 on the first row of 1090 px, the last two below, none past the width.
  CHECK(rows == 2);
  CHECK(LegendRows(1090) == 2);
  CHECK(LegendRows(2000) == 1);
  CHECK(legend.find("x=\"1070\"") == std::string::npos);
  CHECK(legend.find("y=\"320\"") != std::string::npos);
  for (int c = 0; c < kNumTaskCats; ++c) {
    CHECK(legend.find(std::string("fill=\"") + kTaskColours[c] + "\"") != std::string::npos);
    CHECK(legend.find(">" + std::string(TaskCatName(static_cast<TaskCat>(c))) + "<") !=
          std::string::npos);
  }
  CHECK(SvgOpen(100, 50) ==
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100\" height=\"50\" "
        "viewBox=\"0 0 100 50\" font-family=\"sans-serif\">\n");
}

TEST_CASE("XML escaping of text and attributes") {
  CHECK(XmlEscape("a < b & \"c\" > d") == "a &lt; b &amp; &quot;c&quot; &gt; d");
  CHECK(XmlEscape("plain") == "plain");
}

}  // namespace
}  // namespace parasim
