// The HTML report of a serving scenario (`parasim report` on one): its figures, latency against
// throughput (TTFT and TPOT percentiles as the arrival rate climbs to the capacity), the KV
// cache's use over the replay, and with a sweep block the ranked layouts and their advice. No
// scripts, no network: inline SVG with <title> hover texts, as the training report.
//
//   std::string html = ServingReportHtml(scenario, report, curve, &sweep);
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "strategies/serving_report.h"
#include "strategies/serving_sweep.h"

namespace parasim {

// One line of a line chart: its points (x, y), colour and name.
struct ChartLine {
  std::vector<std::pair<double, double>> points;
  const char* colour;
  std::string name;
};
// A line chart over [0, max x] x [0, max y] with ticks, axis labels and a legend; y values are
// seconds when `seconds`, else counts.
std::string LineChartSvg(const std::string& x_label, const std::string& y_label,
                         const std::vector<ChartLine>& lines, bool seconds, int width = 900);

// The load view (ServingReport::load) as (label, text) rows: the load against the capacity and,
// near it, the P99 latencies' range from kLoadBand less to kLoadBand more load; none without a
// view. `serve`'s text and the HTML report both print them.
std::vector<std::pair<std::string, std::string>> LoadRows(const ServingReport& r);

// A latency figure of `stats` in milliseconds, or "none" where it timed no request (TPOT where
// every output is one token).
std::string LatencyText(const LatencyStats& stats, double seconds);

std::string ServingReportHtml(const ServingScenario& s, const ServingReport& r,
                              const std::vector<LatencyPoint>& curve,
                              const ServingSweepOutcome* sweep);

}  // namespace parasim
