#include "tools/report_sections.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>

#include "sim/parse_units.h"
#include "strategies/answer_sweep.h"
#include "strategies/layout_format.h"
#include "tools/report_charts.h"
#include "tools/report_svg.h"
#include "tools/text.h"

namespace parasim {

std::string SummaryHtml(const Scenario& s, const StepReport& r) {
  std::string h = fmt::format("<h1>{}</h1>\n", XmlEscape(ScenarioName(s)));
  h += fmt::format("<p>{} on {} x {}; {}.</p>\n", XmlEscape(s.model.id), s.cluster.gpus(),
                   XmlEscape(s.cluster.gpu.name),
                   XmlEscape(FormatLayout(s.layout, s.training, LayoutStyle::kSentence)));
  h += "<table>\n";
  auto row = [&](const std::string& k, const std::string& v) {
    h += fmt::format("<tr><th class=\"l\">{}</th><td class=\"l\">{}</td></tr>\n", XmlEscape(k),
                     XmlEscape(v));
  };
  row("step time", Seconds(r.step_time_s));
  row("throughput", fmt::format("{:.0f} tokens/s", r.tokens_per_s));
  row("model FLOPs",
      fmt::format("{:.1f} TFLOP/s per GPU, MFU {:.1f}%", r.tflops_per_gpu, 100 * r.mfu));
  row("hardware FLOPs",
      fmt::format("{:.1f} TFLOP/s per GPU, HFU {:.1f}%", r.hw_tflops_per_gpu, 100 * r.hfu));
  if (s.layout.pp > 1) {
    std::string stages;
    for (double b : r.bubble_fraction_per_stage) {
      stages += fmt::format("{}{:.1f}%", stages.empty() ? "" : ", ", 100 * b);
    }
    row("pipeline bubble",
        fmt::format("{:.1f}% of the step, mean over stages (per stage {}; idle time inside the "
                    "step); ideal {:.1f}% on the same basis",
                    100 * r.bubble_fraction, stages, 100 * r.ideal_bubble_fraction));
  }
  row("exposed communication",
      fmt::format("tp {}, cp {}, ep {}, pp {}, dp {}", Seconds(r.exposed.tp), Seconds(r.exposed.cp),
                  Seconds(r.exposed.ep), Seconds(r.exposed.pp), Seconds(r.exposed.dp)));
  double peak = 0;
  for (double b : r.peak_memory_bytes) peak = std::max(peak, b);
  row("peak memory",
      fmt::format("{} of {} ({})", FormatBytes(Bytes(peak)), FormatBytes(Bytes(r.capacity_bytes)),
                  r.fits ? "fits" : "does not fit"));
  if (!r.critical_path.empty()) row("critical path", r.critical_path);
  h += "</table>\n";
  for (const auto& w : r.warnings) h += fmt::format("<p class=\"warn\">{}</p>\n", XmlEscape(w));
  return h;
}

std::string MemoryBreakdownSvg(const MemoryReport& m) {
  std::vector<std::string> rows;
  std::vector<std::vector<Segment>> segs;
  for (size_t i = 0; i < m.stages.size(); ++i) {
    const StageMemory& st = m.stages[i];
    rows.push_back(fmt::format("stage {}", i));
    segs.push_back({{st.params_bytes, "#4e79a7", "parameters"},
                    {st.grads_bytes, "#59a14f", "gradients"},
                    {st.optimizer_bytes, "#b07aa1", "optimizer states"},
                    {st.activations_bytes + st.transient_bytes, "#f28e2b", "activations"},
                    {st.other_bytes + st.reserve_bytes, "#bab0ac",
                     "other (buffers, workspaces, framework reserve)"}});
  }
  return StackedBars(
      "Memory per GPU by stage: parameters (blue), gradients (green), optimizer "
      "(purple), activations (orange), other (grey)",
      rows, segs, m.capacity_bytes, "dashed line: capacity", true);
}

std::string StepTimeHtml(const StepReport& r) {
  // Colours: compute blue, bubble light grey, each communication kind its timeline colour.
  constexpr std::array<const char*, kNumStepParts> kPartColours = {
      "#4e79a7",       "#dddddd",       kTaskColours[4], kTaskColours[5],
      kTaskColours[6], kTaskColours[7], kTaskColours[8], kTaskColours[11]};
  std::vector<Segment> seg;
  for (const StepPartTime& p : StepParts(r)) {
    seg.push_back({p.s, kPartColours[static_cast<int>(p.part)], std::string(StepPartName(p.part))});
  }
  return "<h2>Where the step time goes</h2>\n" +
         StackedBars("Compute, bubble and exposed communication of the busiest stage", {"step"},
                     {seg}, r.step_time_s, "dashed line: the replayed step time", false);
}

std::string GoodputHtml(const GoodputReport& g) {
  if (const std::string never = NoRunEnds(g); !never.empty()) {
    return fmt::format("<h2>Goodput: none</h2>\n<p>{}.</p>\n", XmlEscape(never));
  }
  if (g.runs.wall.mean <= 0) {
    return fmt::format(
        "<h2>Goodput: {:.1f}% of the failure-free rate</h2>\n<p>In the steady state, {:.2f} "
        "unexpected interruptions a day; {}.</p>\n",
        100 * g.goodput, g.failures_per_day, XmlEscape(g.runs.note));
  }
  if (g.runs.closed_form) {
    return fmt::format(
        "<h2>Goodput: {:.1f}% of the failure-free rate</h2>\n<p>Effective training time {:.1f}% "
        "over {:.1f} days, {:.0f} unexpected interruptions expected; {}.</p>\n",
        100 * g.goodput, 100 * g.runs.effective_training_time, g.runs.wall.mean / 86400,
        g.runs.interruptions.mean, XmlEscape(g.runs.note));
  }
  std::string h = fmt::format(
      "<h2>Goodput: {:.1f}% of the failure-free rate</h2>\n<p>{:.0f} unexpected interruptions "
      "expected over {:.1f} days (P10-P90 {:.0f}-{:.0f}), {:.0f} planned; effective training "
      "time {:.1f}% (closed form {:.1f}%); checkpoints of {} every {}; lost work {:.1f} h, "
      "checkpoint stalls {:.1f} h, downtime {:.1f} h. The first of {} simulated runs:</p>\n",
      100 * g.goodput, g.runs.interruptions.mean, g.runs.wall.mean / 86400,
      g.runs.interruptions.p10, g.runs.interruptions.p90, g.runs.planned,
      100 * g.runs.effective_training_time, 100 * g.analytic_effective_time,
      FormatBytes(Bytes(g.inputs.checkpoint.bytes)), Seconds(g.inputs.checkpoint.interval_s),
      g.runs.lost_s / 3600, g.runs.stall_s / 3600, g.runs.down_s / 3600, g.runs.runs);
  return h + GoodputSvg(g);
}

// The what-if table (report A --vs B): both layouts, what moved, and why.
std::string DiffHtml(const StepDiff& d) {
  std::string h = "<h2>What if: A vs B</h2>\n";
  h += fmt::format("<p>A: {}, {}<br>B: {}, {}</p>\n", XmlEscape(d.a_cluster), XmlEscape(d.a_layout),
                   XmlEscape(d.b_cluster), XmlEscape(d.b_layout));
  h += "<table>\n<tr><th class=\"l\"></th><th>A</th><th>B</th><th>change (B - A)</th></tr>\n";
  for (const DiffRow& row : d.rows) {
    h += fmt::format("<tr><th class=\"l\">{}</th><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                     XmlEscape(row.what), XmlEscape(DiffValue(row, false)),
                     XmlEscape(DiffValue(row, true)), XmlEscape(DiffChange(row)));
  }
  h += fmt::format("</table>\n<p>{}</p>\n", XmlEscape(d.reason));
  return h;
}

namespace {

// A layout as the CLI's sweep names it (FormatLayout), a co-design sweep's with its cluster.
std::string SweepName(const Scenario& base, const SweepEntry& e) {
  const std::string layout = FormatLayout(e.layout, e.training, LayoutStyle::kShort);
  const bool codesign = base.sweep && e.hardware < base.sweep->hardware.size();
  return codesign ? base.sweep->hardware[e.hardware].label + ": " + layout : layout;
}

// The sweep's layouts on a scatter: a co-design sweep's by what each cluster's layouts cost per
// token, others by their memory.
std::string SweepScatter(const Scenario& base, const SweepOutcome& sw, double capacity_bytes) {
  std::vector<bool> front(sw.ranked.size(), false);
  for (size_t i : sw.pareto) front[i] = true;
  const bool codesign = base.sweep && !base.sweep->hardware.empty();
  const bool priced = SweepPriced(base);
  std::vector<ScatterPoint> pts;
  for (size_t i = 0; i < sw.ranked.size(); ++i) {
    const auto& e = sw.ranked[i];
    const double x = codesign ? CostPerMillionTokens(e) : Bytes(e.peak_memory_bytes).gib();
    pts.push_back({x, codesign ? KeptTokensPerS(e) : e.tokens_per_s, front[i],
                   codesign
                       ? fmt::format("#{} {}: {:.0f} tokens/s, {:.4g} {}", i + 1,
                                     SweepName(base, e), KeptTokensPerS(e), x,
                                     priced ? "per million tokens" : "GPU-hours per million tokens")
                       : fmt::format("#{} {}: {:.0f} tokens/s, {}", i + 1, SweepName(base, e),
                                     e.tokens_per_s, FormatBytes(Bytes(e.peak_memory_bytes)))});
  }
  if (codesign) {
    return ScatterSvg("Throughput vs cost per token, every cluster (red: Pareto front)", pts,
                      CostAxis(priced), 1200);
  }
  return ScatterSvg("Throughput vs peak memory per GPU (red: Pareto front)", pts,
                    MemoryAxis(capacity_bytes), 1200);
}

// The leaders of the sweep under each swing, as rows.
std::vector<SwingRow> SwingRows(const Scenario& base, const SweepOutcome& sw,
                                const Robustness& rob) {
  std::vector<SwingRow> rows;
  for (const SwingOutcome& w : rob.swings) {
    const size_t first = rob.ranked[w.first];
    const SweepEntry& e = sw.ranked[first];
    rows.push_back({SwingText(w.swing), w.applied, static_cast<int>(first + 1), SweepName(base, e),
                    w.behind, w.holds});
  }
  return rows;
}

}  // namespace

std::string SweepSectionHtml(const Scenario& base, const SweepOutcome& sw, double capacity_bytes,
                             const Robustness* robust) {
  std::string h = fmt::format("<h2>Sweep: {} valid layouts, {} replayed, {} fit</h2>\n",
                              sw.valid_layouts, sw.replayed, sw.feasible);
  h += SweepScatter(base, sw, capacity_bytes);
  h += "<table>\n<tr><th>#</th><th class=\"l\">layout</th><th>step</th><th>tokens/s</th><th>"
       "MFU</th><th>bubble</th><th>peak memory</th></tr>\n";
  // The block's `top` rows, as the CLI prints them.
  const size_t top = static_cast<size_t>(std::max(1, base.sweep ? base.sweep->top : 10));
  for (size_t i = 0; i < sw.ranked.size() && i < top; ++i) {
    const auto& e = sw.ranked[i];
    h += fmt::format(
        "<tr><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{:.0f}</td><td>{:.1f}%</td><td>"
        "{:.1f}%</td><td>{}</td></tr>\n",
        i + 1, XmlEscape(SweepName(base, e)), XmlEscape(Seconds(e.step_time_s)), e.tokens_per_s,
        100 * e.mfu, 100 * e.bubble, XmlEscape(FormatBytes(Bytes(e.peak_memory_bytes))));
  }
  h += "</table>\n";
  if (robust && robust->leaders > 0)
    h += RobustnessHtml(SwingRows(base, sw, *robust), robust->held);
  return h;
}

std::string RobustnessHtml(const std::vector<SwingRow>& rows, int held) {
  std::string h = fmt::format(
      "<h2>How far the answer holds: #1 stays first, or within {:.0f}%, under {} of {} swings"
      "</h2>\n<p>The leaders replayed with one of the cost model's least certain rates swung at "
      "a time, by the spread of the measurements behind it (docs/MODEL.md, \"How far a sweep's "
      "answer holds\").</p>\n<table>\n<tr><th class=\"l\">swing</th><th class=\"l\">what it "
      "moves</th><th>first</th><th>#1 behind by</th><th class=\"l\">verdict</th></tr>\n",
      100 * kRankTie, held, rows.size());
  for (const SwingRow& w : rows) {
    const std::string verdict =
        w.first_rank == 1 ? "#1 stays first"
        : w.holds         ? "a tie"
                          : "#" + std::to_string(w.first_rank) + " " + w.first_layout + " wins";
    h += fmt::format(
        "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>#{}</td><td>{:.1f}%</td>"
        "<td class=\"l\">{}</td></tr>\n",
        XmlEscape(w.swing), XmlEscape(w.applied), w.first_rank, 100 * w.behind, XmlEscape(verdict));
  }
  return h + "</table>\n";
}

}  // namespace parasim
