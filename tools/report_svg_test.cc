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

TEST_CASE("a legend swatch per task category; an SVG element of a size") {
  const std::string legend = Legend(90, 300);
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
