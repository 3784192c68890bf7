#include "tools/report_sections.h"

#include <doctest/doctest.h>

#include <string>

namespace parasim {
namespace {

TEST_CASE("the summary: the scenario's title, a row per figure, the warnings") {
  Scenario s;
  s.name = "A <test>";
  s.model.id = "gpt3-1.3b";
  s.layout.pp = 2;
  StepReport r;
  r.step_time_s = 1.5;
  r.tokens_per_s = 1234.4;
  r.peak_memory_bytes = {10.0 * (1 << 30), 12.0 * (1 << 30)};
  r.capacity_bytes = 80.0 * (1 << 30);
  r.fits = true;
  r.warnings = {"mind the gap"};
  const std::string h = SummaryHtml(s, r);
  CHECK(h.rfind("<h1>A &lt;test&gt;</h1>\n", 0) == 0);
  CHECK(h.find("<td class=\"l\">1.500 s</td>") != std::string::npos);
  CHECK(h.find("1234 tokens/s") != std::string::npos);
  CHECK(h.find(">pipeline bubble<") != std::string::npos);  // pp > 1
  CHECK(h.find("12.0 GiB of 80.0 GiB (fits)") != std::string::npos);
  CHECK(h.find("<p class=\"warn\">mind the gap</p>") != std::string::npos);
  s.layout.pp = 1;
  CHECK(SummaryHtml(s, r).find(">pipeline bubble<") == std::string::npos);
}

TEST_CASE("where the step time goes, and the memory breakdown per stage") {
  StepReport r;
  r.step_time_s = 2;
  const std::string time = StepTimeHtml(r);
  CHECK(time.rfind("<h2>Where the step time goes</h2>\n<svg ", 0) == 0);
  MemoryReport m;
  m.capacity_bytes = 80.0 * (1 << 30);
  m.stages.resize(3);
  m.stages[1].params_bytes = 1e9;
  const std::string mem = MemoryBreakdownSvg(m);
  CHECK(mem.find(">stage 2</text>") != std::string::npos);
  CHECK(mem.find("<title>parameters: 953.7 MiB</title>") != std::string::npos);
}

TEST_CASE("the what-if table: both sides, a row per figure, the reason") {
  StepDiff d;
  d.a_cluster = "8 x A100";
  d.a_layout = "TP2";
  d.b_cluster = "8 x A100";
  d.b_layout = "TP4";
  d.rows = {{"step time", DiffUnit::kSeconds, 2, 1.5}};
  d.reason = "A is behind B";
  const std::string h = DiffHtml(d);
  CHECK(h.find("<p>A: 8 x A100, TP2<br>B: 8 x A100, TP4</p>") != std::string::npos);
  CHECK(h.find("<th class=\"l\">step time</th>") != std::string::npos);
  CHECK(h.find("<p>A is behind B</p>") != std::string::npos);
}

TEST_CASE("how far the answer holds: each swing's verdict") {
  const std::vector<SwingRow> rows = {
      {"GEMMs x1.10", "gemm 0.8 -> 0.88", 1, "TP8", 0, true},
      {"scale-out fabric x0.78", "ib 0.7 -> 0.546", 2, "TP4 PP8", 0.012, true},
      {"per-kernel overheads x2.00", "launch 4 us -> 8 us", 3, "TP2 PP16", 0.05, false}};
  const std::string h = RobustnessHtml(rows, 2);
  CHECK(h.find("within 2%, under 2 of 3 swings") != std::string::npos);
  CHECK(h.find("<td class=\"l\">#1 stays first</td>") != std::string::npos);
  CHECK(h.find("<td class=\"l\">a tie</td>") != std::string::npos);
  CHECK(h.find("<td class=\"l\">#3 TP2 PP16 wins</td>") != std::string::npos);
  CHECK(h.find("<td>5.0%</td>") != std::string::npos);
}

TEST_CASE("a sweep's section: its counts, the scatter, the block's top, named as the CLI does") {
  Scenario base;
  base.sweep = SweepSpec{};
  base.sweep->top = 4;
  SweepOutcome sw;
  sw.valid_layouts = 12;
  sw.replayed = 11;
  sw.feasible = 11;
  for (int i = 0; i < 11; ++i) {
    SweepEntry e;
    e.key = "key" + std::to_string(i);
    e.layout.tp = 1 << (i % 4);
    e.layout.dp = 8 >> (i % 4);
    e.layout.sp = e.layout.tp > 1;
    e.training.global_batch = 64;
    e.tokens_per_s = 1000 - i;
    e.peak_memory_bytes = 1e10;
    sw.ranked.push_back(e);
  }
  sw.pareto = {0};
  const std::string h = SweepSectionHtml(base, sw, 80.0 * (1 << 30), nullptr);
  CHECK(h.rfind("<h2>Sweep: 12 valid layouts, 11 replayed, 11 fit</h2>\n", 0) == 0);
  CHECK(h.find("Throughput vs peak memory per GPU (red: Pareto front)") != std::string::npos);
  // The CLI's names (FormatLayout), not the results file's keys.
  CHECK(h.find(">TP8+SP PP1 DP1 mb1 gb64</td>") != std::string::npos);
  CHECK(h.find("key3") == std::string::npos);
  // The block's top 4 rows: #4 is there, #5 is not.
  CHECK(h.find("<tr><td>4</td>") != std::string::npos);
  CHECK(h.find("<tr><td>5</td>") == std::string::npos);
  CHECK(h.find("How far the answer holds") == std::string::npos);
}

}  // namespace
}  // namespace parasim
