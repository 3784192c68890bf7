#include "tools/report_serving.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

TEST_CASE("a line chart: a polyline per line, scaled into the frame, with a legend") {
  const std::string svg =
      LineChartSvg("output tokens/s", "TTFT",
                   {{{{0, 0.1}, {1000, 0.2}, {2000, 1.0}}, "#e15759", "TTFT P99"}}, true, 400);
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(svg.find("<polyline") != std::string::npos);
  CHECK(svg.find(">TTFT P99<") != std::string::npos);
  // The last point at the frame's right (70 + 400 - 70 - 20 = 380) and top (20).
  CHECK(svg.find("380.0,20.0") != std::string::npos);
  CHECK(svg.find("1000 ms") != std::string::npos);  // seconds on the y axis, in the ticks' unit
}

TEST_CASE("the serving page: figures, both latency charts, KV over time, the sweep's advice") {
  ServingScenario s;
  s.name = "probe <serving>";
  s.model.id = "m";
  ServingReport r;
  r.layout = "tp4 x2";
  r.gpus = 8;
  r.tokens_per_s = 2000;
  r.kv = {{0, 0.1}, {10, 0.5}};
  r.kv_capacity_bytes = 40e9;
  ServingSweepOutcome w;
  w.advice = {"replicate rather than shard"};
  const std::string html = ServingReportHtml(s, r, {{1, 500, {}, {}}, {2, 1000, {}, {}}}, &w);
  CHECK(html.find("probe &lt;serving&gt;") != std::string::npos);
  CHECK(html.find("Latency against throughput") != std::string::npos);
  CHECK(html.find("KV cache over the replay") != std::string::npos);
  CHECK(html.find("replicate rather than shard") != std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
}

TEST_CASE("a latency that timed no request (TPOT with no second token) reads none, not 0 ns") {
  LatencyStats none;
  CHECK(LatencyText(none, none.p99) == "none");
  LatencyStats some;
  some.count = 3;
  some.p99 = 0.012;
  CHECK(LatencyText(some, some.p99) == "12.000 ms");
}

}  // namespace
}  // namespace parasim
