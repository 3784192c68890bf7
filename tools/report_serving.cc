#include "tools/report_serving.h"

#include <fmt/core.h>

#include <algorithm>

#include "sim/parse_units.h"
#include "tools/report_svg.h"
#include "tools/text.h"

namespace parasim {
namespace {

constexpr int kHeight = 320, kLeft = 70, kTop = 20, kBottom = 50;

std::string Ms(double s) { return FormatDuration(Duration::Seconds(s)); }

// Ticks and labels beside a vertical axis from 0 to `span` over [y0 - h, y0] at x.
std::string YTicks(double span, double x, double y0, double h, bool seconds) {
  std::string svg;
  const double step = TickStep(span);
  for (double t = 0; t <= span * 1.0001; t += step) {
    const double y = y0 - t / span * h;
    svg += fmt::format(
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#666\"/><text x=\"{}\" y=\"{}\" "
        "font-size=\"11\" text-anchor=\"end\">{}</text>\n",
        Num(x - 5), Num(y), Num(x), Num(y), Num(x - 8), Num(y + 4),
        XmlEscape(seconds ? AxisSeconds(t, step) : AxisCount(t)));
  }
  return svg;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> LoadRows(const ServingReport& r) {
  if (!r.load) return {};
  const LoadView& v = *r.load;
  if (!v.estimated) {
    return {{"load",
             "not estimated: too few requests for the replicas' capacity (all at once they reach "
             "no steady batch; give about 3.3 batches a replica or more)"}};
  }
  const double pct = 100 * v.load;
  std::vector<std::pair<std::string, std::string>> rows = {
      {"load",
       fmt::format("{}% of the capacity ({:.4g} requests/s, every request queued at once){}",
                   pct < 100 ? fmt::format("{:.3g}", pct) : fmt::format("{:.0f}", pct),
                   v.capacity_per_s,
                   pct >= 100.5 ? ": above it, a long run's queue grows without end" : "")}};
  if (!v.band) return rows;
  // The range over the stated rate and the two ends: a P99 need not rise with the load in a
  // replay of a few thousand requests (LoadView).
  auto range = [](double a, double b, double c) {
    return fmt::format("{} to {}", Ms(std::min({a, b, c})), Ms(std::max({a, b, c})));
  };
  const std::string tpot =
      r.tpot.count == 0 ? LatencyText(r.tpot, 0) : range(v.tpot_lo.p99, r.tpot.p99, v.tpot_hi.p99);
  rows.emplace_back(
      fmt::format("load -/+ {:.0f}%", 100 * kLoadBand),
      fmt::format("TTFT P99 {}, TPOT P99 {} from {:.0f}% less to {:.0f}% more load (what an error "
                  "of {:.0f}% in the capacity moves them by, with the replay's own noise)",
                  range(v.ttft_lo.p99, r.ttft.p99, v.ttft_hi.p99), tpot, 100 * kLoadBand,
                  100 * kLoadBand, 100 * kLoadBand));
  return rows;
}

std::string LatencyText(const LatencyStats& stats, double seconds) {
  return stats.count == 0 ? "none" : Ms(seconds);
}

namespace {

std::string FiguresHtml(const ServingScenario& s, const ServingReport& r) {
  std::string h =
      fmt::format("<h1>{}</h1>\n<p>{} on {} x {}; layout {} ({} GPUs)</p>\n",
                  XmlEscape(s.name.empty() ? s.file : s.name), XmlEscape(s.model.id),
                  s.cluster.gpus(), XmlEscape(s.cluster.gpu.name), XmlEscape(r.layout), r.gpus);
  h += "<table>\n<tr><th class=\"l\">figure</th><th>value</th></tr>\n";
  auto row = [&](const std::string& k, const std::string& v) {
    h += fmt::format("<tr><td class=\"l\">{}</td><td>{}</td></tr>\n", XmlEscape(k), XmlEscape(v));
  };
  row("output tokens/s (all GPUs)", Human(r.tokens_per_s));
  row("output tokens/s per GPU", Human(r.tokens_per_s_per_gpu));
  row("input tokens/s", Human(r.input_tokens_per_s));
  row("TTFT P50 / P90 / P99",
      fmt::format("{} / {} / {}", Ms(r.ttft.p50), Ms(r.ttft.p90), Ms(r.ttft.p99)));
  row("TPOT P50 / P90 / P99", r.tpot.count == 0 ? std::string("none: no request has a second token")
                                                : fmt::format("{} / {} / {}", Ms(r.tpot.p50),
                                                              Ms(r.tpot.p90), Ms(r.tpot.p99)));
  row("end to end P50 / P99", fmt::format("{} / {}", Ms(r.e2e.p50), Ms(r.e2e.p99)));
  if (!r.slo.empty()) row("goodput (within every target)", fmt::format("{:.1f}%", 100 * r.goodput));
  if (!r.max_rate_note.empty()) {
    row("highest rate within the targets", r.max_rate_note);
  } else if (r.max_rate_at_slo >= 0) {
    row("highest rate within the targets", fmt::format("{:.4g} requests/s", r.max_rate_at_slo));
  }
  for (const auto& [label, text] : LoadRows(r)) row(label, text);
  row("KV cache peak per GPU",
      r.no_kv_cache() ? std::string("none: the model has no attention layers")
      : r.kv_capacity_bytes <= 0
          ? std::string("none: no room for it")
          : fmt::format("{} of {}{}", FormatBytes(Bytes(r.kv_peak_bytes)),
                        FormatBytes(Bytes(r.kv_peak_capacity_bytes)),
                        r.kv_peak_pool.empty() ? std::string() : " (" + r.kv_peak_pool + " pool)"));
  row("fits", r.fits ? "yes" : "no: " + r.fit_reason);
  if (r.cost_per_million_tokens > 0) {
    row("cost per million output tokens", fmt::format("{:.3g}", r.cost_per_million_tokens));
  }
  return h + "</table>\n";
}

std::string SweepHtml(const ServingSweepOutcome& w) {
  std::string h =
      "<h2>Layouts</h2>\n<table>\n<tr><th class=\"l\">layout</th><th>GPUs</th>"
      "<th>output tokens/s per GPU within the targets</th><th>TTFT P99</th>"
      "<th>TPOT P99</th></tr>\n";
  for (const ServingCandidate& c : w.ranked) {
    h += fmt::format(
        "<tr><td class=\"l\">{}</td><td>{}</td><td>{:.1f}</td><td>{}</td><td>{}</td></tr>\n",
        XmlEscape(FormatServingLayout(c.layout)), c.report.gpus, c.score, Ms(c.report.ttft.p99),
        LatencyText(c.report.tpot, c.report.tpot.p99));
  }
  h += "</table>\n";
  for (const std::string& a : w.advice) h += fmt::format("<p>{}</p>\n", XmlEscape(a));
  return h;
}

}  // namespace

std::string LineChartSvg(const std::string& x_label, const std::string& y_label,
                         const std::vector<ChartLine>& lines, bool seconds, int width) {
  double mx = 0, my = 0;
  for (const ChartLine& l : lines) {
    for (const auto& [x, y] : l.points) {
      mx = std::max(mx, x);
      my = std::max(my, y);
    }
  }
  if (mx <= 0) mx = 1;
  if (my <= 0) my = 1;
  const double w = width - kLeft - 20, h = kHeight - kTop - kBottom, y0 = kTop + h;
  std::string svg = SvgOpen(width, kHeight);
  svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333\"/>\n", kLeft,
                     Num(y0), Num(kLeft + w), Num(y0));
  svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333\"/>\n", kLeft,
                     kTop, kLeft, Num(y0));
  svg += XTicks(mx, kLeft, w, y0, [&](double t, double step) {
    return seconds || x_label.find("time") == std::string::npos ? AxisCount(t)
                                                                : AxisSeconds(t, step);
  });
  svg += YTicks(my, kLeft, y0, h, seconds);
  svg += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">{}</text>\n",
                     Num(kLeft + w / 2), kHeight - 8, XmlEscape(x_label));
  svg += fmt::format(
      "<text x=\"14\" y=\"{}\" font-size=\"12\" transform=\"rotate(-90 14 {})\" "
      "text-anchor=\"middle\">{}</text>\n",
      Num(kTop + h / 2), Num(kTop + h / 2), XmlEscape(y_label));
  for (size_t i = 0; i < lines.size(); ++i) {
    const ChartLine& l = lines[i];
    std::string pts;
    for (const auto& [x, y] : l.points) {
      pts += fmt::format("{},{} ", Num(kLeft + x / mx * w), Num(y0 - y / my * h));
    }
    svg += fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\">"
        "<title>{}</title></polyline>\n",
        l.colour, pts, XmlEscape(l.name));
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>"
        "<text x=\"{}\" y=\"{}\" font-size=\"12\">{}</text>\n",
        kLeft + 10 + 170 * static_cast<int>(i), kTop, l.colour,
        kLeft + 26 + 170 * static_cast<int>(i), kTop + 11, XmlEscape(l.name));
  }
  return svg + "</svg>\n";
}

std::string ServingReportHtml(const ServingScenario& s, const ServingReport& r,
                              const std::vector<LatencyPoint>& curve,
                              const ServingSweepOutcome* sweep) {
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>parasim "
      "serving report</title>\n<style>body{font-family:sans-serif;margin:24px;max-width:1260px;"
      "color:#222}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;"
      "text-align:right}th{background:#f3f3f3}td.l,th.l{text-align:left}h2{margin-top:32px}"
      "</style>\n</head>\n<body>\n";
  h += FiguresHtml(s, r);
  ChartLine ttft99{{}, "#e15759", "TTFT P99"}, ttft50{{}, "#f28e2b", "TTFT P50"};
  ChartLine tpot99{{}, "#4e79a7", "TPOT P99"}, tpot50{{}, "#76b7b2", "TPOT P50"};
  for (const LatencyPoint& p : curve) {
    ttft99.points.push_back({p.tokens_per_s, p.ttft.p99});
    ttft50.points.push_back({p.tokens_per_s, p.ttft.p50});
    if (p.tpot.count == 0) continue;  // no request had a second token to time
    tpot99.points.push_back({p.tokens_per_s, p.tpot.p99});
    tpot50.points.push_back({p.tokens_per_s, p.tpot.p50});
  }
  h += "<h2>Latency against throughput</h2>\n<p>The scenario's requests arriving as a Poisson "
       "process at rates up to the capacity (the requests all at once).</p>\n";
  h += LineChartSvg("output tokens/s (all GPUs)", "time to first token", {ttft50, ttft99}, true);
  h += LineChartSvg("output tokens/s (all GPUs)", "time per output token", {tpot50, tpot99}, true);
  if (!r.no_kv_cache()) {
    ChartLine kv{{}, "#59a14f", "KV cache in use (share of its blocks)"};
    for (const KvPoint& p : r.kv) kv.points.push_back({p.time_s, 100 * p.used});
    h += "<h2>KV cache over the replay</h2>\n";
    h += LineChartSvg("simulated time, s", "KV cache in use, %", {kv}, false);
  }
  if (sweep != nullptr) h += SweepHtml(*sweep);
  return h +
         "<p>Generated by parasim serve; docs/SERVING.md describes the model.</p>\n</body>\n"
         "</html>\n";
}

}  // namespace parasim
