#include "tools/report_charts.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include "sim/parse_units.h"
#include "strategies/scale.h"
#include "tools/report_svg.h"
#include "tools/text.h"

namespace parasim {
namespace {

// The timeline's layout in pixels: a label column, then per stage a compute row and a thin
// transfer row.
struct TimelineGeometry {
  int stages, label_w, row_h, comm_h, plot_w, height;
  double span;  // seconds across plot_w
  int RowY(int s) const { return 30 + s * (row_h + comm_h + 4); }
};

// A single task wide enough to draw (and title) on its own.
struct Box {
  int row;
  double a, b;
  uint8_t cat;
  uint32_t label;
};

// Per row (stage compute, stage transfers), per pixel column, seconds of each category; and the
// tasks wide enough to title.
struct TimelineBins {
  std::vector<std::vector<std::array<double, kNumTaskCats>>> cols;
  std::vector<Box> boxes;
};

TimelineBins BinTasks(const LoweredStep& low, const sim::Timeline& tl, const TimelineGeometry& g) {
  const sim::Program& p = low.program;
  const int plot_w = g.plot_w;
  TimelineBins bins;
  bins.cols.assign(2 * g.stages, std::vector<std::array<double, kNumTaskCats>>(plot_w));
  std::vector<int> stage_of(p.num_ranks(), -1);
  for (int s = 0; s < g.stages; ++s) stage_of[low.stage_rank[s]] = s;
  for (sim::TaskId t = 0; t < p.num_tasks(); ++t) {
    const int s = stage_of[p.stream_rank(p.stream(t))];
    if (s < 0) continue;
    const double a = tl.start[t].seconds(), b = tl.end[t].seconds();
    if (b <= a) continue;
    const uint8_t cat = p.category(t);
    const bool on_compute = p.stream(t) == low.stage_compute[s];
    const int row = 2 * s + (on_compute ? 0 : 1);
    const double x0 = a / g.span * plot_w, x1 = b / g.span * plot_w;
    if (x1 - x0 >= 3) bins.boxes.push_back({row, x0, x1, cat, p.label(t)});
    for (int c = std::max(0, static_cast<int>(x0)); c < std::min(plot_w, static_cast<int>(x1) + 1);
         ++c) {
      const double lo = std::max(x0, static_cast<double>(c)), hi = std::min(x1, c + 1.0);
      if (hi > lo) bins.cols[row][c][cat] += hi - lo;
    }
  }
  return bins;
}

// One row's pixel columns, run-length encoded by their dominant category (mostly idle: none).
std::string RowRuns(const std::vector<std::array<double, kNumTaskCats>>& row, int s, int ry, int rh,
                    const TimelineGeometry& g) {
  std::string svg;
  int start = -1, cur = -1;
  auto flush = [&](int end) {
    if (cur < 0) return;
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>stage {} {}: "
        "{} to {}</title></rect>\n",
        g.label_w + start, ry, end - start, rh, kTaskColours[cur], s,
        XmlEscape(TaskCatName(static_cast<TaskCat>(cur))),
        XmlEscape(Seconds(start * g.span / g.plot_w)), XmlEscape(Seconds(end * g.span / g.plot_w)));
  };
  for (int c = 0; c < g.plot_w; ++c) {
    int best = -1;
    double fill = 0;
    for (int k = 0; k < kNumTaskCats; ++k) {
      if (row[c][k] > fill) {
        fill = row[c][k];
        best = k;
      }
    }
    if (fill < 0.5) best = -1;  // mostly idle
    if (best != cur) {
      flush(c);
      start = c;
      cur = best;
    }
  }
  flush(g.plot_w);
  return svg;
}

// Hover titles of the tasks wide enough to point at (drawn transparent over the columns).
std::string BoxTitles(const std::vector<Box>& boxes, const sim::Program& p,
                      const TimelineGeometry& g) {
  std::string svg;
  for (const Box& b : boxes) {
    const int s = b.row / 2;
    const int y = g.RowY(s) + (b.row % 2 ? g.row_h + 1 : 0);
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#ffffff\" "
        "stroke-width=\"0.5\" pointer-events=\"all\"><title>stage {}: {} ({}), {} to {}</title>"
        "</rect>\n",
        Num(g.label_w + b.a), y, Num(b.b - b.a), b.row % 2 ? g.comm_h : g.row_h, s,
        XmlEscape(p.label_text(b.label)), XmlEscape(TaskCatName(static_cast<TaskCat>(b.cat))),
        XmlEscape(Seconds(b.a * g.span / g.plot_w)), XmlEscape(Seconds(b.b * g.span / g.plot_w)));
  }
  return svg;
}

}  // namespace

std::string TimelineSvg(const LoweredStep& low, const sim::Timeline& tl, int width) {
  TimelineGeometry g;
  g.stages = low.stages;
  g.label_w = 90;
  g.row_h = g.stages > 32 ? 10 : 22;
  g.comm_h = g.stages > 32 ? 3 : 6;
  g.plot_w = width - g.label_w - 20;
  // The time axis under the rows, then the legend wrapped within the plot's width.
  g.height = g.RowY(g.stages) + 4 + 26 + 20 * LegendRows(g.plot_w) + 10;
  g.span = std::max(1e-12, tl.makespan.seconds());
  const TimelineBins bins = BinTasks(low, tl, g);
  std::string svg = SvgOpen(width, g.height);
  svg += fmt::format(
      "<text x=\"{}\" y=\"18\" font-size=\"14\">Pipeline timeline of one step ({}; rows: stages, "
      "thin rows: transfers; light grey: idle)</text>\n",
      g.label_w, XmlEscape(Seconds(g.span)));
  for (int s = 0; s < g.stages; ++s) {
    const int y = g.RowY(s);
    svg += fmt::format(
        "<text x=\"4\" y=\"{}\" font-size=\"{}\">stage {}</text><rect x=\"{}\" y=\"{}\" "
        "width=\"{}\" height=\"{}\" fill=\"#eeeeee\"/>\n",
        y + g.row_h - 3, g.row_h > 12 ? 12 : 9, s, g.label_w, y, g.plot_w, g.row_h);
    svg += RowRuns(bins.cols[2 * s], s, y, g.row_h, g);
    svg += RowRuns(bins.cols[2 * s + 1], s, y + g.row_h + 1, g.comm_h, g);
  }
  svg += BoxTitles(bins.boxes, low.program, g);
  // Time axis.
  const int axis_y = g.RowY(g.stages) + 4;
  svg += XTicks(g.span, g.label_w, g.plot_w, axis_y, AxisSeconds);
  svg += Legend(g.label_w, axis_y + 26, g.plot_w);
  svg += "\n</svg>\n";
  return svg;
}

std::string MemorySvg(const LoweredStep& low, const sim::Timeline& tl, double capacity, int width) {
  const int left = 90, plot_w = width - left - 20, plot_h = 220, top = 30;
  const double span = std::max(1e-12, tl.makespan.seconds());
  double top_bytes = capacity;
  for (const auto& m : tl.memory) top_bytes = std::max(top_bytes, m.bytes);
  // The axis ends on a tick.
  {
    const double gib = Bytes::GiB(1).bytes(), step = TickStep(std::max(top_bytes, 1.0) / gib);
    top_bytes = std::ceil(std::max(top_bytes, 1.0) / gib / step) * step * gib;
  }
  std::map<uint32_t, int> stage_of;
  for (int s = 0; s < low.stages; ++s) stage_of[low.stage_rank[s]] = s;
  std::vector<std::string> paths(low.stages);
  for (const auto& m : tl.memory) {
    auto it = stage_of.find(m.rank);
    if (it == stage_of.end()) continue;
    const double x = left + m.time.seconds() / span * plot_w;
    const double y = top + plot_h - m.bytes / top_bytes * plot_h;
    paths[it->second] +=
        fmt::format("{}{} {} ", paths[it->second].empty() ? "M" : "L", Num(x), Num(y));
  }
  std::string svg = SvgOpen(width, plot_h + top + 40);
  svg += fmt::format(
      "<text x=\"{}\" y=\"18\" font-size=\"14\">Memory per GPU over the step, one line per stage "
      "(dashed: capacity {})</text>\n",
      left, XmlEscape(FormatBytes(Bytes(capacity))));
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#ccc\"/>\n",
      left, top, plot_w, plot_h);
  const double cap_y = top + plot_h - capacity / top_bytes * plot_h;
  svg += fmt::format(
      "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#e15759\" stroke-dasharray=\"6 "
      "4\"/>\n",
      left, Num(cap_y), left + plot_w, Num(cap_y));
  // Ticks at 1, 2 or 5 x 10^k GiB up to the axis' top (a multiple of the step).
  const double gib = Bytes::GiB(1).bytes(), step = TickStep(top_bytes / gib);
  for (int64_t k = 0; k * step * gib <= top_bytes * 1.0001; ++k) {
    const double y = top + plot_h - k * step * gib / top_bytes * plot_h;
    svg += fmt::format(
        "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{:g} GiB</text>\n", left - 4,
        Num(y + 4), static_cast<double>(k) * step);
  }
  for (int s = 0; s < low.stages; ++s) {
    if (paths[s].empty()) continue;
    const char* colour = kTaskColours[s % kNumTaskCats];
    svg += fmt::format(
        "<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"><title>stage {}: peak "
        "{}</title></path>\n",
        paths[s], colour, s, XmlEscape(FormatBytes(Bytes(tl.peak_memory[low.stage_rank[s]]))));
  }
  svg += XTicks(span, left, plot_w, top + plot_h, AxisSeconds);
  svg += "\n</svg>\n";
  return svg;
}

namespace {

// A single bar's legend: every segment's value, wrapping onto further lines within the plot's
// width (about 6.2 px per character at 11 px).
struct LegendItem {
  const Segment* seg;
  std::string text;
  double x;
  int line;
};

std::vector<LegendItem> BarLegend(const std::vector<Segment>& segs, int left, int plot_w,
                                  bool bytes, int* lines) {
  std::vector<LegendItem> legend;
  double lx = left;
  for (const auto& s : segs) {
    if (s.value <= 0) continue;
    std::string text = s.name + " " + (bytes ? FormatBytes(Bytes(s.value)) : Seconds(s.value));
    const double w = 14 + 6.2 * static_cast<double>(text.size()) + 16;
    if (*lines == 0 || lx + w > left + plot_w) {
      ++*lines;
      lx = left;
    }
    legend.push_back({&s, std::move(text), lx, *lines - 1});
    lx += w;
  }
  return legend;
}

// One bar's segments from x = left, scaled so that `top` fills plot_w.
std::string BarSegments(const std::vector<Segment>& segs, int left, int y, int bar_h, double top,
                        int plot_w, bool bytes) {
  std::string svg;
  double x = left;
  for (const auto& s : segs) {
    const double w = top > 0 ? s.value / top * plot_w : 0;
    if (w <= 0) continue;
    const std::string value = bytes ? FormatBytes(Bytes(s.value)) : Seconds(s.value);
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}: {}</title>"
        "</rect>\n",
        Num(x), y, Num(w), bar_h, s.colour, XmlEscape(s.name), XmlEscape(value));
    // The value inside the segment where it fits (about 6.5 px per character at 11 px).
    if (w >= 6.5 * static_cast<double>(value.size()) + 6) {
      svg += fmt::format(
          "<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"{}\" text-anchor=\"middle\" "
          "pointer-events=\"none\">{}</text>\n",
          Num(x + w / 2), y + 13, std::string_view(s.colour) == "#dddddd" ? "#222" : "#fff",
          XmlEscape(value));
    }
    x += w;
  }
  return svg;
}

}  // namespace

std::string StackedBars(const std::string& title, const std::vector<std::string>& rows,
                        const std::vector<std::vector<Segment>>& segs, double full,
                        const std::string& unit_note, bool bytes) {
  const int left = 110, width = 1200, plot_w = width - left - 20, bar_h = 18;
  int lines = 0;
  const std::vector<LegendItem> legend = rows.size() == 1
                                             ? BarLegend(segs[0], left, plot_w, bytes, &lines)
                                             : std::vector<LegendItem>{};
  const int height = 50 + static_cast<int>(rows.size()) * (bar_h + 6) + 20 + 20 * lines;
  std::string svg = SvgOpen(width, height);
  svg +=
      fmt::format("<text x=\"{}\" y=\"18\" font-size=\"14\">{}</text>\n", left, XmlEscape(title));
  double top = full;
  for (const auto& r : segs) {
    double sum = 0;
    for (const auto& s : r) sum += s.value;
    top = std::max(top, sum);
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const int y = 30 + static_cast<int>(i) * (bar_h + 6);
    svg += fmt::format("<text x=\"4\" y=\"{}\" font-size=\"12\">{}</text>\n", y + 13,
                       XmlEscape(rows[i]));
    svg += BarSegments(segs[i], left, y, bar_h, top, plot_w, bytes);
  }
  for (const LegendItem& it : legend) {
    const int y = height - 14 - 20 * (lines - it.line);
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" "
        "y=\"{}\" font-size=\"11\">{}</text>\n",
        Num(it.x), y, it.seg->colour, Num(it.x + 14), y + 9, XmlEscape(it.text));
  }
  if (full > 0) {
    const double x = left + full / top * plot_w;
    svg += fmt::format(
        "<line x1=\"{}\" y1=\"26\" x2=\"{}\" y2=\"{}\" stroke=\"#e15759\" "
        "stroke-dasharray=\"6 4\"/>\n",
        Num(x), Num(x), height - 24);
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>\n</svg>\n", left,
                     height - 6, XmlEscape(unit_note));
  return svg;
}

ScatterAxis MemoryAxis(double capacity_bytes) {
  return {"peak memory per GPU", Bytes(capacity_bytes).gib(),
          [](double v) { return fmt::format("{:g} GiB", v); }};
}

ScatterAxis CostAxis(bool priced) {
  return {priced ? "cost per million tokens" : "GPU-hours per million tokens", 0,
          [](double v) { return fmt::format("{:g}", v); }};
}

std::string ScatterSvg(const std::string& title, const std::vector<ScatterPoint>& pts,
                       const ScatterAxis& axis, int width) {
  const int height = 420, left = 90, top = 30, pw = width - left - 30, ph = height - top - 60;
  // Both axes fitted to the points with some room around them (not from 0: the points would
  // crowd a corner).
  double lo_x = 0, hi_x = 1, lo_t = 0, hi_t = 1;
  for (size_t i = 0; i < pts.size(); ++i) {
    const ScatterPoint& p = pts[i];
    lo_x = i == 0 ? p.x : std::min(lo_x, p.x);
    hi_x = i == 0 ? p.x : std::max(hi_x, p.x);
    lo_t = i == 0 ? p.tokens_per_s : std::min(lo_t, p.tokens_per_s);
    hi_t = i == 0 ? p.tokens_per_s : std::max(hi_t, p.tokens_per_s);
  }
  const AxisRange rx = FitRange(lo_x, hi_x), rt = FitRange(lo_t, hi_t);
  auto X = [&](double v) { return left + (v - rx.lo) / (rx.hi - rx.lo) * pw; };
  auto Y = [&](double t) { return top + ph - (t - rt.lo) / (rt.hi - rt.lo) * ph; };
  std::string svg = SvgOpen(width, height);
  svg += fmt::format(
      "<text x=\"{}\" y=\"18\" font-size=\"14\">{}</text>\n<rect x=\"{}\" y=\"{}\" width=\"{}\" "
      "height=\"{}\" fill=\"#fafafa\" stroke=\"#ccc\"/>\n",
      left, XmlEscape(title), left, top, pw, ph);
  const auto yticks = static_cast<int64_t>(std::floor((rt.hi - rt.lo) / rt.step * 1.0001));
  for (int64_t k = 0; k <= yticks; ++k) {
    const double t = rt.lo + static_cast<double>(k) * rt.step;
    svg += fmt::format(
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#e4e4e4\"/><text x=\"{}\" "
        "y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n",
        left, Num(Y(t)), left + pw, Num(Y(t)), left - 6, Num(Y(t) + 4), AxisCount(t));
  }
  svg += XTicksIn(rx, left, pw, top + ph, [&](double v, double) { return axis.tick(v); });
  if (axis.mark > rx.lo && axis.mark <= rx.hi) {
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#e15759\" "
        "stroke-dasharray=\"6 4\"><title>{3}</title></line>\n",
        Num(X(axis.mark)), top, top + ph, XmlEscape(axis.mark_title));
  }
  for (const ScatterPoint& p : pts) {
    svg += fmt::format(
        "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\" fill-opacity=\"0.7\"><title>{}</title>"
        "</circle>\n",
        Num(X(p.x)), Num(Y(p.tokens_per_s)), p.front ? 5 : 3, p.front ? "#e15759" : "#4e79a7",
        XmlEscape(p.title));
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">{}</text>\n<text "
      "x=\"16\" y=\"{}\" font-size=\"12\" transform=\"rotate(-90 16 {})\" "
      "text-anchor=\"middle\">tokens/s</text>\n</svg>\n",
      left + pw / 2, height - 8, XmlEscape(axis.label), top + ph / 2, top + ph / 2);
  return svg;
}

std::string GoodputSvg(const GoodputReport& g, int width) {
  const std::vector<RunEvent>& ev = g.runs.first_run;
  const double end =
      g.runs.wall.mean > 0 ? std::max(g.runs.wall.mean, ev.empty() ? 0.0 : ev.back().t_s) : 1.0;
  const double left = 70, right = 20, top = 20, plot_h = 220;
  const double w = width - left - right;
  const double day = 86400;
  auto x = [&](double t) { return left + w * t / end; };
  auto y = [&](double p) { return top + plot_h * (1 - p / end); };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n",
      width, static_cast<int>(top + plot_h + 50));
  svg += fmt::format(
      "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{3}\" stroke=\"#bbb\" "
      "stroke-dasharray=\"4 3\"><title>failure-free: progress = wall clock</title></line>\n",
      Num(x(0)), Num(y(0)), Num(x(end)), Num(y(end)));
  // Progress kept: rises with the wall clock while training, drops at a failure, flat while
  // the job is down.
  std::string path = fmt::format("M{},{}", Num(x(0)), Num(y(0)));
  double t = 0, p = 0;
  for (const RunEvent& e : ev) {
    if (e.kind == RunEventKind::kResumed) {
      path += fmt::format(" L{},{}", Num(x(e.t_s)), Num(y(e.progress_s)));
    } else {
      // The run trained (with checkpoint stalls, drawn as training) up to the event.
      const double before = e.kind == RunEventKind::kFailure ? p + (e.t_s - t) : e.progress_s;
      path += fmt::format(" L{},{} L{},{}", Num(x(e.t_s)), Num(y(std::min(before, end))),
                          Num(x(e.t_s)), Num(y(e.progress_s)));
    }
    t = e.t_s;
    p = e.progress_s;
  }
  path += fmt::format(" L{},{}", Num(x(end)), Num(y(std::min(end, p + (end - t)))));
  svg +=
      fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#4e79a7\" stroke-width=\"1.5\"/>\n", path);
  for (const RunEvent& e : ev) {
    if (e.kind == RunEventKind::kResumed) continue;
    const bool fail = e.kind == RunEventKind::kFailure;
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"{3}\"><title>{4} at "
        "day {5:.2f}</title></line>\n",
        Num(x(e.t_s)), Num(top + plot_h), Num(top + plot_h + 8), fail ? "#e15759" : "#888",
        fail ? "failure" : "planned stop", e.t_s / day);
  }
  svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#444\"/>\n",
                     Num(left), Num(top + plot_h), Num(left + w));
  // The y axis: training time kept, in days like the wall clock under it.
  svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#444\"/>\n",
                     Num(left), Num(top), Num(top + plot_h));
  const double step = std::max(1.0, std::round(end / day / 10));
  for (double d = 0; d * day <= end + 1e-9; d += step) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{:.0f} d</text>\n",
                       Num(x(d * day)), Num(top + plot_h + 22), d);
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#444\"/><text x=\"{3}\" "
        "y=\"{4}\" text-anchor=\"end\">{5:.0f} d</text>\n",
        Num(left - 5), Num(y(d * day)), Num(left), Num(left - 8), Num(y(d * day) + 4), d);
  }
  svg += fmt::format(
      "<text x=\"14\" y=\"{0}\" transform=\"rotate(-90 14 {0})\" text-anchor=\"middle\">"
      "training time kept</text>\n",
      Num(top + plot_h / 2));
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\">wall clock (red ticks: failures, grey: planned stops); the "
      "line is the training time kept, the dashed line a run without failures</text>\n",
      Num(left), Num(top + plot_h + 42));
  svg += "</svg>\n";
  return svg;
}

namespace {

// The speedup chart's axes: log2 of GPUs over the first along x, speedup up the y.
struct SpeedupAxes {
  int left, top, pw, ph;
  double lx_max, max_s;
  double X(double r) const { return left + std::log2(r) / lx_max * pw; }
  double Y(double sp) const { return top + ph - sp / max_s * ph; }
  // A path over GPUs from the first point to the last: "M x y L x y ...".
  std::string Path(const std::function<double(double)>& speedup) const {
    std::string d;
    for (int i = 0; i <= 100; ++i) {
      const double r = std::pow(2.0, lx_max * i / 100);
      d += fmt::format("{}{} {} ", i == 0 ? "M" : "L", Num(X(r)), Num(Y(speedup(r))));
    }
    return d;
  }
};

}  // namespace

std::string SpeedupSvg(const std::vector<std::pair<double, double>>& points, double p,
                       const std::string& no_fit) {
  if (points.empty() || points[0].first <= 0) return "";
  const double first = points[0].first;
  const int width = 1000, height = 460;
  SpeedupAxes a{70, 30, width - 70 - 30, height - 30 - 60, 0, 0};
  const double max_r = points.back().first / first;
  a.lx_max = std::max(1.0, std::log2(max_r));
  // Up to the ideal line's end (2x for a single point) and every point, ending on a tick.
  a.max_s = std::max(max_r, std::pow(2.0, a.lx_max));
  for (auto [g, sp] : points) a.max_s = std::max(a.max_s, sp);
  const double ystep = TickStep(a.max_s * 1.05);
  a.max_s = std::ceil(a.max_s * 1.05 / ystep) * ystep;
  std::string h = SvgOpen(width, height);
  const std::string fit =
      no_fit.empty() ? fmt::format("red: Amdahl fit, p = {:.4f}", p) : "no Amdahl fit: " + no_fit;
  h += fmt::format(
      "<text x=\"{}\" y=\"18\" font-size=\"14\">Speedup over {:.0f} GPUs (dashed: ideal; {})"
      "</text>\n<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" "
      "stroke=\"#ccc\"/>\n",
      a.left, first, XmlEscape(fit), a.left, a.top, a.pw, a.ph);
  for (int64_t k = 0; k * ystep <= a.max_s * 1.0001; ++k) {
    const double sp = static_cast<double>(k) * ystep;
    h += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{:g}x</text>\n",
                     a.left - 4, Num(a.Y(sp) + 4), sp);
  }
  h += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#888\" stroke-dasharray=\"6 4\"/>\n",
                   a.Path([](double r) { return r; }));
  if (no_fit.empty()) {
    h += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#e15759\" stroke-width=\"1.5\"/>\n",
                     a.Path([p](double r) { return AmdahlSpeedup(p, r); }));
  }
  for (auto [g, sp] : points) {
    h += fmt::format(
        "<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"#4e79a7\"><title>{:.0f} GPUs: {:.2f}x"
        "</title></circle>\n<text x=\"{}\" y=\"{}\" font-size=\"11\" "
        "text-anchor=\"middle\">{:.0f}</text>\n",
        Num(a.X(g / first)), Num(a.Y(sp)), g, sp, Num(a.X(g / first)), a.top + a.ph + 16, g);
  }
  h += fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">GPUs (log scale)</text>\n"
      "</svg>\n",
      a.left + a.pw / 2, height - 14);
  return h;
}

}  // namespace parasim
