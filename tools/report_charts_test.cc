#include "tools/report_charts.h"

#include <doctest/doctest.h>

#include <string>

#include "scenarios/scenario.h"
#include "strategies/step.h"

namespace parasim {
namespace {

int Count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// One SVG element, closed.
void CheckWhole(const std::string& svg) {
  CHECK(svg.rfind("<svg ", 0) == 0);
  CHECK(Count(svg, "<svg ") == 1);
  CHECK(svg.size() >= 7);
  CHECK(svg.substr(svg.size() - 7) == "</svg>\n");
}

// GPT-3 1.3B on one A100 node, TP2 and a 4-stage pipeline, replayed with its memory events.
void ReplayPipeline(LoweredStep* low, sim::Timeline* tl) {
  auto cat = LoadCatalogs();
  REQUIRE(cat.ok());
  auto s = LoadScenario(
      YamlInput("<dict>",
                "{cluster: {gpu: a100-sxm4-80gb, nodes: 1, gpus_per_node: 8, intra_node: "
                "nvlink3-a100}, model: gpt3-1.3b, training: {seq_len: 2048, global_batch: 16}, "
                "parallelism: {tp: 2, pp: 4, dp: 1}}"),
      {}, *cat);
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  StepOptions o;
  o.record_memory = true;
  REQUIRE(SimulateStep(s->model, s->training, s->layout, s->cluster, o, low, tl).ok());
}

TEST_CASE("the timeline has a row per stage and the memory chart a curve per stage") {
  LoweredStep low;
  sim::Timeline tl;
  ReplayPipeline(&low, &tl);
  const std::string timeline = TimelineSvg(low, tl);
  CheckWhole(timeline);
  for (int stage = 0; stage < 4; ++stage) {
    CAPTURE(stage);
    CHECK(timeline.find("font-size=\"12\">stage " + std::to_string(stage) + "</text>") !=
          std::string::npos);
  }
  CHECK(timeline.find("<title>stage 0 forward: ") != std::string::npos);
  const std::string memory = MemorySvg(low, tl, 80.0 * (1 << 30));
  CheckWhole(memory);
  CHECK(Count(memory, "<path ") == 4);
  CHECK(memory.find("dashed: capacity 80.0 GiB") != std::string::npos);
}

TEST_CASE("stacked bars: a legend for one bar, the dashed line at the full value") {
  const std::vector<Segment> segs = {{2.0, "#4e79a7", "compute"}, {0.5, "#dddddd", "bubble"}};
  const std::string one = StackedBars("Where", {"step"}, {segs}, 3.0, "note", false);
  CheckWhole(one);
  CHECK(one.find(">compute 2.000 s</text>") != std::string::npos);  // the legend
  CHECK(Count(one, "stroke-dasharray=\"6 4\"") == 1);
  const std::string two = StackedBars("Where", {"a", "b"}, {segs, segs}, 0, "note", false);
  CHECK(two.find(">compute 2.000 s</text>") == std::string::npos);  // no legend
  CHECK(Count(two, "stroke-dasharray") == 0);
}

TEST_CASE("a scatter: the front larger and red, the axes fitted to the points") {
  const std::vector<ScatterPoint> pts = {{40, 1000, true, "a"}, {60, 800, false, "b"}};
  const std::string svg = ScatterSvg("T", pts, MemoryAxis(80.0 * (1 << 30)), 1000);
  CheckWhole(svg);
  CHECK(Count(svg, "<circle ") == 2);
  CHECK(svg.find("r=\"5\" fill=\"#e15759\"") != std::string::npos);
  CHECK(svg.find(">peak memory per GPU</text>") != std::string::npos);
  // 40 to 60 GiB, padded to 35-65 on ticks of 5: not from 0, not out to the 80 GiB capacity
  // (beyond the axis, so no capacity line).
  CHECK(svg.find(">35 GiB</text>") != std::string::npos);
  CHECK(svg.find(">65 GiB</text>") != std::string::npos);
  CHECK(svg.find(">0 GiB</text>") == std::string::npos);
  CHECK(svg.find(">80 GiB</text>") == std::string::npos);
  CHECK(svg.find("<title>memory capacity</title>") == std::string::npos);
  // 800 to 1000 tokens/s: the y axis does not start at 0 either.
  CHECK(svg.find(">0</text>") == std::string::npos);
  // With a point near the capacity, the capacity's dashed line.
  const std::vector<ScatterPoint> near = {{40, 1000, true, "a"}, {78, 800, false, "b"}};
  CHECK(ScatterSvg("T", near, MemoryAxis(80.0 * (1 << 30)), 1000)
            .find("<title>memory capacity</title>") != std::string::npos);
  CHECK(CostAxis(true).label == "cost per million tokens");
  CHECK(CostAxis(false).label == "GPU-hours per million tokens");
}

TEST_CASE("a simulated run: a tick per failure and planned stop") {
  GoodputReport g;
  g.runs.wall.mean = 10 * 86400;
  g.runs.first_run = {{2 * 86400, 1.5 * 86400, RunEventKind::kFailure},
                      {2.1 * 86400, 1.5 * 86400, RunEventKind::kResumed},
                      {5 * 86400, 4.4 * 86400, RunEventKind::kPlanned},
                      {5.1 * 86400, 4.4 * 86400, RunEventKind::kResumed}};
  const std::string svg = GoodputSvg(g);
  CHECK(Count(svg, "<title>failure at day 2.00</title>") == 1);
  CHECK(Count(svg, "<title>planned stop at day 5.00</title>") == 1);
  CHECK(svg.find(">10 d</text>") != std::string::npos);
  // A y axis: the training time kept, ticked in days like the wall clock.
  CHECK(svg.find(">training time kept</text>") != std::string::npos);
  CHECK(Count(svg, "text-anchor=\"end\">") == 11);  // 0 d to 10 d up the y axis
}

TEST_CASE("speedup against GPUs with the ideal line and the Amdahl fit") {
  CHECK(SpeedupSvg({}, 0.9).empty());
  const std::string svg = SpeedupSvg({{8, 1}, {16, 1.9}, {32, 3.5}}, 0.95);
  CheckWhole(svg);
  CHECK(svg.find("Speedup over 8 GPUs (dashed: ideal; red: Amdahl fit, p = 0.9500)") !=
        std::string::npos);
  CHECK(Count(svg, "<circle ") == 3);
  CHECK(Count(svg, "<path ") == 2);
  CHECK(svg.find("<title>32 GPUs: 3.50x</title>") != std::string::npos);
  CHECK(svg.find(">1x</text>") != std::string::npos);  // ticks at 1, 2 or 5 x 10^k
  // No fit (weak scaling, a single point): no Amdahl curve, and why.
  const std::string none = SpeedupSvg({{8, 1}}, 0, "it needs at least two GPU counts");
  CHECK(none.find("no Amdahl fit: it needs at least two GPU counts") != std::string::npos);
  CHECK(Count(none, "<path ") == 1);
}

TEST_CASE("the memory chart's ticks sit at round GiB") {
  LoweredStep low;
  sim::Timeline tl;
  ReplayPipeline(&low, &tl);
  // The newcomer's ticks sat at a quarter of the capacity (22.4, 44.8, 67.2 GiB).
  const std::string memory = MemorySvg(low, tl, 89.6 * (1 << 30));
  for (const char* tick : {">0 GiB<", ">20 GiB<", ">40 GiB<", ">80 GiB<", ">100 GiB<"}) {
    CHECK(memory.find(tick) != std::string::npos);
  }
  CHECK(memory.find(">22.4 GiB<") == std::string::npos);
}

}  // namespace
}  // namespace parasim
