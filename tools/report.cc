#include "tools/report.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>

#include "sim/parse_units.h"
#include "sim/yaml_reader.h"
#include "strategies/layout_format.h"
#include "strategies/schedule.h"

namespace parasim {
namespace {

// Tableau 10, one colour per task category (TaskCat order).
constexpr std::array<const char*, kNumTaskCats> kColours = {
    "#4e79a7",  // forward
    "#59a14f",  // backward
    "#f28e2b",  // recompute
    "#b07aa1",  // optimizer
    "#e15759",  // tp
    "#ff9da7",  // cp
    "#9c755f",  // ep
    "#76b7b2",  // pp
    "#edc948",  // dp
    "#bab0ac",  // compress
    "#d37295",  // dp-copy
};

std::string Num(double x) { return fmt::format("{:.1f}", x); }

std::string Seconds(double s) { return FormatDuration(Duration::Seconds(s)); }

// Axis ticks at 1, 2 or 5 x 10^k seconds.
double TickStep(double span) {
  const double raw = span / 8;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * mag) return m * mag;
  }
  return 10 * mag;
}

// A tick label in the unit of the tick step, so the axis starts at "0 s" and reads 5 s, 10 s.
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

// Tokens per second for an axis: 0, 50k, 100k, 1.5M.
std::string AxisCount(double x) {
  if (x >= 1e6) return fmt::format("{:g}M", x / 1e6);
  if (x >= 1e3) return fmt::format("{:g}k", x / 1e3);
  return fmt::format("{:g}", x);
}

// Ticks and labels under a horizontal axis from 0 to `span` drawn over [x0, x0 + w] at y.
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
        x + c * 110, y, kColours[c], x + c * 110 + 16, y + 11,
        XmlEscape(TaskCatName(static_cast<TaskCat>(c))));
  }
  return out;
}

}  // namespace

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

std::string TimelineSvg(const LoweredStep& low, const sim::Timeline& tl, int width) {
  const sim::Program& p = low.program;
  const int stages = low.stages;
  const int label_w = 90, row_h = stages > 32 ? 10 : 22, comm_h = stages > 32 ? 3 : 6;
  const int plot_w = width - label_w - 20;
  const int height = 40 + stages * (row_h + comm_h + 4) + 50;
  const double span = std::max(1e-12, tl.makespan.seconds());
  // Per row, per pixel column, seconds of each category; rows: stage compute, stage transfers.
  std::vector<std::vector<std::array<double, kNumTaskCats>>> cols(
      2 * stages, std::vector<std::array<double, kNumTaskCats>>(plot_w));
  // Single tasks wide enough to draw (and title) on their own.
  struct Box {
    int row;
    double a, b;
    uint8_t cat;
    uint32_t label;
  };
  std::vector<Box> boxes;
  std::vector<int> stage_of(p.num_ranks(), -1);
  for (int s = 0; s < stages; ++s) stage_of[low.stage_rank[s]] = s;
  for (sim::TaskId t = 0; t < p.num_tasks(); ++t) {
    const int s = stage_of[p.stream_rank(p.stream(t))];
    if (s < 0) continue;
    const double a = tl.start[t].seconds(), b = tl.end[t].seconds();
    if (b <= a) continue;
    const uint8_t cat = p.category(t);
    const bool on_compute = p.stream(t) == low.stage_compute[s];
    const int row = 2 * s + (on_compute ? 0 : 1);
    const double x0 = a / span * plot_w, x1 = b / span * plot_w;
    if (x1 - x0 >= 3) boxes.push_back({row, x0, x1, cat, p.label(t)});
    for (int c = std::max(0, static_cast<int>(x0)); c < std::min(plot_w, static_cast<int>(x1) + 1);
         ++c) {
      const double lo = std::max(x0, static_cast<double>(c)), hi = std::min(x1, c + 1.0);
      if (hi > lo) cols[row][c][cat] += hi - lo;
    }
  }
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\">\n",
      width, height, width, height);
  svg += fmt::format(
      "<text x=\"{}\" y=\"18\" font-size=\"14\">Pipeline timeline of one step ({}; rows: stages, "
      "thin rows: transfers; light grey: idle)</text>\n",
      label_w, XmlEscape(Seconds(span)));
  for (int s = 0; s < stages; ++s) {
    const int y = 30 + s * (row_h + comm_h + 4);
    svg += fmt::format(
        "<text x=\"4\" y=\"{}\" font-size=\"{}\">stage {}</text><rect x=\"{}\" y=\"{}\" "
        "width=\"{}\" height=\"{}\" fill=\"#eeeeee\"/>\n",
        y + row_h - 3, row_h > 12 ? 12 : 9, s, label_w, y, plot_w, row_h);
    for (int sub = 0; sub < 2; ++sub) {
      const auto& row = cols[2 * s + sub];
      const int ry = sub == 0 ? y : y + row_h + 1, rh = sub == 0 ? row_h : comm_h;
      // Run-length encode the pixel columns by their dominant category.
      int start = -1, cur = -1;
      auto flush = [&](int end) {
        if (cur < 0) return;
        svg += fmt::format(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>stage {} {}: "
            "{} to {}</title></rect>\n",
            label_w + start, ry, end - start, rh, kColours[cur], s,
            XmlEscape(TaskCatName(static_cast<TaskCat>(cur))),
            XmlEscape(Seconds(start * span / plot_w)), XmlEscape(Seconds(end * span / plot_w)));
      };
      for (int c = 0; c < plot_w; ++c) {
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
      flush(plot_w);
    }
  }
  // Hover titles of the tasks wide enough to point at (drawn transparent over the columns).
  for (const Box& b : boxes) {
    const int s = b.row / 2;
    const int y = 30 + s * (row_h + comm_h + 4) + (b.row % 2 ? row_h + 1 : 0);
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#ffffff\" "
        "stroke-width=\"0.5\" pointer-events=\"all\"><title>stage {}: {} ({}), {} to {}</title>"
        "</rect>\n",
        Num(label_w + b.a), y, Num(b.b - b.a), b.row % 2 ? comm_h : row_h, s,
        XmlEscape(p.label_text(b.label)), XmlEscape(TaskCatName(static_cast<TaskCat>(b.cat))),
        XmlEscape(Seconds(b.a * span / plot_w)), XmlEscape(Seconds(b.b * span / plot_w)));
  }
  // Time axis.
  const int axis_y = 30 + stages * (row_h + comm_h + 4) + 4;
  svg += XTicks(span, label_w, plot_w, axis_y, AxisSeconds);
  svg += Legend(label_w, axis_y + 26);
  svg += "\n</svg>\n";
  return svg;
}

std::string MemorySvg(const LoweredStep& low, const sim::Timeline& tl, double capacity, int width) {
  const int left = 90, plot_w = width - left - 20, plot_h = 220, top = 30;
  const double span = std::max(1e-12, tl.makespan.seconds());
  double top_bytes = capacity;
  for (const auto& m : tl.memory) top_bytes = std::max(top_bytes, m.bytes);
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
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\">\n<text x=\"{}\" y=\"18\" font-size=\"14\">Memory per GPU over "
      "the step, one line per stage (dashed: capacity {})</text>\n",
      width, plot_h + top + 40, width, plot_h + top + 40, left,
      XmlEscape(FormatBytes(Bytes(capacity))));
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#ccc\"/>\n",
      left, top, plot_w, plot_h);
  const double cap_y = top + plot_h - capacity / top_bytes * plot_h;
  svg += fmt::format(
      "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#e15759\" stroke-dasharray=\"6 "
      "4\"/>\n",
      left, Num(cap_y), left + plot_w, Num(cap_y));
  for (int k = 0; k <= 4; ++k) {
    const double b = top_bytes * k / 4;
    const double y = top + plot_h - plot_h * k / 4.0;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n",
                       left - 4, Num(y + 4), XmlEscape(FormatBytes(Bytes(b))));
  }
  for (int s = 0; s < low.stages; ++s) {
    if (paths[s].empty()) continue;
    const char* colour = kColours[s % kNumTaskCats];
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

// Horizontal stacked bars: one per row, segments (value, colour, name).
struct Segment {
  double value;
  const char* colour;
  std::string name;
};

std::string StackedBars(const std::string& title, const std::vector<std::string>& rows,
                        const std::vector<std::vector<Segment>>& segs, double full,
                        const std::string& unit_note, bool bytes) {
  const int left = 110, width = 1200, plot_w = width - left - 20, bar_h = 18;
  // One bar gets a legend with every segment's value, so nothing needs hovering; its items wrap
  // onto further lines within the plot's width (about 6.2 px per character at 11 px).
  struct Item {
    const Segment* seg;
    std::string text;
    double x;
    int line;
  };
  std::vector<Item> legend;
  int lines = 0;
  if (rows.size() == 1) {
    double lx = left;
    for (const auto& s : segs[0]) {
      if (s.value <= 0) continue;
      std::string text = s.name + " " + (bytes ? FormatBytes(Bytes(s.value)) : Seconds(s.value));
      const double w = 14 + 6.2 * static_cast<double>(text.size()) + 16;
      if (lines == 0 || lx + w > left + plot_w) {
        ++lines;
        lx = left;
      }
      legend.push_back({&s, std::move(text), lx, lines - 1});
      lx += w;
    }
  }
  const int height = 50 + static_cast<int>(rows.size()) * (bar_h + 6) + 20 + 20 * lines;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\">\n<text x=\"{}\" y=\"18\" font-size=\"14\">{}</text>\n",
      width, height, width, height, left, XmlEscape(title));
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
    double x = left;
    for (const auto& s : segs[i]) {
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
  }
  for (const Item& it : legend) {
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

}  // namespace

namespace {

// One layout on a throughput scatter: its x (peak memory in GiB, or cost per million tokens).
struct ScatterPoint {
  double x;
  double tokens_per_s;
  bool front;         // on the Pareto front: drawn larger, in red
  std::string title;  // hover text
};

// The scatter's x axis: what it shows, the least span drawn (the memory capacity), and a tick.
struct ScatterAxis {
  std::string label;
  double min_span;
  std::function<std::string(double)> tick;
};
ScatterAxis MemoryAxis(double capacity_bytes) {
  return {"peak memory per GPU", Bytes(capacity_bytes).gib(),
          [](double v) { return fmt::format("{:g} GiB", v); }};
}
ScatterAxis CostAxis(bool priced) {
  return {priced ? "cost per million tokens" : "GPU-hours per million tokens", 0,
          [](double v) { return fmt::format("{:g}", v); }};
}

// Throughput against x, both axes ticked and labelled from 0.
std::string ScatterSvg(const std::string& title, const std::vector<ScatterPoint>& pts,
                       const ScatterAxis& axis, int width) {
  const int height = 420, left = 90, top = 30, pw = width - left - 30, ph = height - top - 60;
  double max_t = 1, max_m = axis.min_span > 0 ? axis.min_span : 1e-9;
  for (const ScatterPoint& p : pts) {
    max_t = std::max(max_t, p.tokens_per_s);
    max_m = std::max(max_m, p.x);
  }
  max_t = std::ceil(max_t / TickStep(max_t)) * TickStep(max_t);  // end on a tick
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\">\n<text x=\"{}\" y=\"18\" font-size=\"14\">{}</text>\n<rect "
      "x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#ccc\"/>\n",
      width, height, width, height, left, XmlEscape(title), left, top, pw, ph);
  const double ystep = TickStep(max_t);
  for (double t = 0; t <= max_t * 1.0001; t += ystep) {
    const double y = top + ph - t / max_t * ph;
    svg += fmt::format(
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#e4e4e4\"/><text x=\"{}\" "
        "y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n",
        left, Num(y), left + pw, Num(y), left - 6, Num(y + 4), AxisCount(t));
  }
  svg += XTicks(max_m, left, pw, top + ph, [&](double v, double) { return axis.tick(v); });
  for (const ScatterPoint& p : pts) {
    svg += fmt::format(
        "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\" fill-opacity=\"0.7\"><title>{}</title>"
        "</circle>\n",
        Num(left + p.x / max_m * pw), Num(top + ph - p.tokens_per_s / max_t * ph), p.front ? 5 : 3,
        p.front ? "#e15759" : "#4e79a7", XmlEscape(p.title));
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">{}</text>\n<text "
      "x=\"16\" y=\"{}\" font-size=\"12\" transform=\"rotate(-90 16 {})\" "
      "text-anchor=\"middle\">tokens/s</text>\n</svg>\n",
      left + pw / 2, height - 8, XmlEscape(axis.label), top + ph / 2, top + ph / 2);
  return svg;
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

}  // namespace

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
  const double step = std::max(1.0, std::round(end / day / 10));
  for (double d = 0; d * day <= end + 1e-9; d += step) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{:.0f} d</text>\n",
                       Num(x(d * day)), Num(top + plot_h + 22), d);
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\">wall clock (red ticks: failures, grey: planned stops); the "
      "line is the training time kept, the dashed line a run without failures</text>\n",
      Num(left), Num(top + plot_h + 42));
  svg += "</svg>\n";
  return svg;
}

namespace {

// One swing of `sweep --robust` as the report shows it.
struct SwingRow {
  std::string swing;    // "scale-out fabric x0.78"
  std::string applied;  // "eth-100g efficiency 0.7 -> 0.546"
  int first_rank = 1;
  std::string first_layout;
  double behind = 0;
  bool holds = true;
};

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

}  // namespace

std::string ReportHtml(const ReportInput& in) {
  const Scenario& s = *in.scenario;
  const StepReport& r = *in.report;
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>parasim "
      "report</title>\n<style>body{font-family:sans-serif;margin:24px;max-width:1260px;color:#222}"
      "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:"
      "right}th{background:#f3f3f3}td.l,th.l{text-align:left}h2{margin-top:32px}.warn{color:"
      "#b00}</style>\n</head>\n<body>\n";
  h += fmt::format("<h1>{}</h1>\n", XmlEscape(s.name.empty() ? s.file : s.name));
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
    row("pipeline bubble", fmt::format("{:.1f}% measured, {:.1f}% ideal", 100 * r.bubble_fraction,
                                       100 * r.ideal_bubble_fraction));
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

  h += "<h2>Pipeline timeline</h2>\n";
  h += TimelineSvg(*in.lowered, *in.timeline);
  h += "<h2>Memory</h2>\n";
  h += MemorySvg(*in.lowered, *in.timeline, r.capacity_bytes);
  if (in.memory) {
    std::vector<std::string> rows;
    std::vector<std::vector<Segment>> segs;
    for (size_t i = 0; i < in.memory->stages.size(); ++i) {
      const StageMemory& st = in.memory->stages[i];
      rows.push_back(fmt::format("stage {}", i));
      segs.push_back({{st.params_bytes, "#4e79a7", "parameters"},
                      {st.grads_bytes, "#59a14f", "gradients"},
                      {st.optimizer_bytes, "#b07aa1", "optimizer states"},
                      {st.activations_bytes, "#f28e2b", "activations"},
                      {st.other_bytes, "#bab0ac", "other (buffers, framework)"}});
    }
    h += StackedBars(
        "Memory per GPU by stage: parameters (blue), gradients (green), optimizer "
        "(purple), activations (orange), other (grey)",
        rows, segs, in.memory->capacity_bytes, "dashed line: capacity", true);
  }
  {
    // Colours: compute blue, bubble light grey, each communication kind its timeline colour.
    constexpr std::array<const char*, kNumStepParts> kPartColours = {
        "#4e79a7", "#dddddd", kColours[4], kColours[5], kColours[6], kColours[7], kColours[8]};
    std::vector<Segment> seg;
    for (const StepPartTime& p : StepParts(r)) {
      seg.push_back(
          {p.s, kPartColours[static_cast<int>(p.part)], std::string(StepPartName(p.part))});
    }
    h += "<h2>Where the step time goes</h2>\n";
    h += StackedBars("Compute, bubble and exposed communication of the busiest stage", {"step"},
                     {seg}, r.step_time_s, "dashed line: the replayed step time", false);
  }
  if (in.goodput) {
    const GoodputReport& g = *in.goodput;
    h += fmt::format(
        "<h2>Goodput: {:.1f}% of the failure-free rate</h2>\n<p>{:.0f} unexpected interruptions "
        "expected over {:.1f} days (P10-P90 {:.0f}-{:.0f}), {:.0f} planned; effective training "
        "time {:.1f}% (closed form {:.1f}%); checkpoints of {} every {}; lost work {:.1f} h, "
        "checkpoint stalls {:.1f} h, downtime {:.1f} h. The first of {} simulated runs:</p>\n",
        100 * g.goodput, g.runs.interruptions.mean, g.runs.wall.mean / 86400,
        g.runs.interruptions.p10, g.runs.interruptions.p90, g.runs.planned,
        100 * g.runs.effective_training_time, 100 * g.analytic_effective_time,
        FormatBytes(Bytes(g.inputs.checkpoint.bytes)), Seconds(g.inputs.checkpoint.interval_s),
        g.runs.lost_s / 3600, g.runs.stall_s / 3600, g.runs.down_s / 3600, g.runs.runs);
    h += GoodputSvg(g);
  }
  if (in.diff) h += DiffHtml(*in.diff);
  if (in.sweep && !in.sweep->ranked.empty()) {
    const SweepOutcome& sw = *in.sweep;
    h += fmt::format("<h2>Sweep: {} valid layouts, {} replayed, {} fit</h2>\n", sw.valid_layouts,
                     sw.replayed, sw.feasible);
    std::vector<bool> front(sw.ranked.size(), false);
    for (size_t i : sw.pareto) front[i] = true;
    // A co-design sweep plots what each cluster's layouts cost per token; others their memory.
    const Scenario& base = *in.scenario;
    const bool codesign = base.sweep && !base.sweep->hardware.empty();
    const bool priced = SweepPriced(base);
    std::vector<ScatterPoint> pts;
    for (size_t i = 0; i < sw.ranked.size(); ++i) {
      const auto& e = sw.ranked[i];
      const double x = codesign ? 1e6 * CostPerToken(e) : Bytes(e.peak_memory_bytes).gib();
      pts.push_back(
          {x, codesign ? KeptTokensPerS(e) : e.tokens_per_s, front[i],
           codesign
               ? fmt::format("#{} {}: {:.0f} tokens/s, {:.4g} {}", i + 1, e.key, KeptTokensPerS(e),
                             x, priced ? "per million tokens" : "GPU-hours per million tokens")
               : fmt::format("#{} {}: {:.0f} tokens/s, {}", i + 1, e.key, e.tokens_per_s,
                             FormatBytes(Bytes(e.peak_memory_bytes)))});
    }
    if (codesign) {
      h += ScatterSvg("Throughput vs cost per token, every cluster (red: Pareto front)", pts,
                      CostAxis(priced), 1200);
    } else {
      h += ScatterSvg("Throughput vs peak memory per GPU (red: Pareto front)", pts,
                      MemoryAxis(r.capacity_bytes), 1200);
    }
    h += "<table>\n<tr><th>#</th><th class=\"l\">layout</th><th>step</th><th>tokens/s</th><th>"
         "MFU</th><th>bubble</th><th>peak memory</th></tr>\n";
    for (size_t i = 0; i < sw.ranked.size() && i < 10; ++i) {
      const auto& e = sw.ranked[i];
      h += fmt::format(
          "<tr><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{:.0f}</td><td>{:.1f}%</td><td>"
          "{:.1f}%</td><td>{}</td></tr>\n",
          i + 1, XmlEscape(e.key), XmlEscape(Seconds(e.step_time_s)), e.tokens_per_s, 100 * e.mfu,
          100 * e.bubble, XmlEscape(FormatBytes(Bytes(e.peak_memory_bytes))));
    }
    h += "</table>\n";
    if (in.robust && in.robust->leaders > 0) {
      const Robustness& rob = *in.robust;
      std::vector<SwingRow> rows;
      for (const SwingOutcome& w : rob.swings) {
        const size_t first = rob.ranked[w.first];
        const SweepEntry& e = sw.ranked[first];
        std::string layout = FormatLayout(e.layout, e.training, LayoutStyle::kShort);
        if (codesign) layout = base.sweep->hardware[e.hardware].label + ": " + layout;
        rows.push_back({SwingText(w.swing), w.applied, static_cast<int>(first + 1), layout,
                        w.behind, w.holds});
      }
      h += RobustnessHtml(rows, rob.held);
    }
  }
  h += "<p>Generated by parasim. Figures come from the discrete-event replay; see docs/MODEL.md "
       "for the cost model.</p>\n</body>\n</html>\n";
  return h;
}

namespace {

const char* kHtmlHead =
    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>parasim "
    "report</title>\n<style>body{font-family:sans-serif;margin:24px;max-width:1260px;color:#222}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:"
    "right}th{background:#f3f3f3}td.l,th.l{text-align:left}</style>\n</head>\n<body>\n";

double D(const YAML::Node& n, const char* key) {
  return n[key] && n[key].IsScalar() ? n[key].as<double>() : 0.0;
}

// The layout of a `--json` document (SCENARIO.md "layout" object), formatted as the CLI does.
std::string LayoutOf(const YAML::Node& j) {
  if (!j || !j.IsMap()) return "";
  Layout l;
  Training t;
  l.tp = j["tp"].as<int>();
  l.pp = j["pp"].as<int>();
  l.dp = j["dp"].as<int64_t>();
  l.cp = j["cp"].as<int>();
  l.ep = j["ep"].as<int>();
  if (j["etp"]) l.etp = j["etp"].as<int>();
  for (const auto& a : j["account_for"]) {
    (a.as<std::string>() == "embedding" ? l.split_embedding : l.split_loss) = true;
  }
  l.zero = j["zero"].as<int>();
  if (j["sp"]) l.sp = j["sp"].as<bool>();
  if (j["virtual_stages"]) l.virtual_stages = j["virtual_stages"].as<int>();
  if (auto id = FindSchedule(j["schedule"].as<std::string>()); id.ok()) l.schedule = *id;
  if (j["grad_reduce"]) {
    if (auto gr = ParseGradReduce(j["grad_reduce"].as<std::string>()); gr.ok()) {
      l.grad_reduce = *gr;
    }
  }
  if (j["cp_comm"]) {
    if (auto cc = ParseCpComm(j["cp_comm"].as<std::string>()); cc.ok()) l.cp_comm = *cc;
  }
  if (j["zero3_copies"]) l.zero3_copies = j["zero3_copies"].as<bool>();
  t.micro_batch = j["micro_batch"].as<int64_t>();
  t.global_batch = j["global_batch"].as<int64_t>();
  if (auto rc = ParseRecompute(j["recompute"].as<std::string>()); rc.ok()) t.recompute = *rc;
  if (j["recompute_layers"]) t.recompute_layers = j["recompute_layers"].as<int>();
  if (j["precision"]) {
    if (auto p = ParseDtype(j["precision"].as<std::string>()); p.ok()) t.precision = *p;
  }
  if (j["fp8_recipe"]) {
    if (auto r = ParseFp8Recipe(j["fp8_recipe"].as<std::string>()); r.ok()) t.fp8_recipe = *r;
  }
  return FormatLayout(l, t, LayoutStyle::kShort);
}

std::string ScaleHtml(const YAML::Node& root) {
  const YAML::Node pts = root["points"];
  const double p = D(root, "parallel_fraction");
  std::vector<std::pair<double, double>> xy;  // gpus, speedup
  double first = 0;
  for (const auto& pt : pts) {
    if (!pt["found"].as<bool>()) continue;
    const double g = pt["gpus"].as<double>();
    if (first == 0) first = g;
    xy.push_back({g, D(pt, "speedup")});
  }
  std::string h = kHtmlHead;
  h += fmt::format("<h1>Scaling: {}</h1>\n", XmlEscape(root["scenario"].as<std::string>("")));
  const int width = 1000, height = 460, left = 70, top = 30, pw = width - left - 30,
            ph = height - top - 60;
  if (xy.size() >= 1 && first > 0) {
    const double max_r = xy.back().first / first;
    const double lx_max = std::max(1.0, std::log2(max_r));
    double max_s = std::max(max_r, 1.0);
    for (auto [g, sp] : xy) max_s = std::max(max_s, sp);
    max_s *= 1.08;
    auto X = [&](double r) { return left + std::log2(r) / lx_max * pw; };
    auto Y = [&](double sp) { return top + ph - sp / max_s * ph; };
    h += fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} "
        "{}\" font-family=\"sans-serif\">\n<text x=\"{}\" y=\"18\" font-size=\"14\">Speedup over "
        "{:.0f} GPUs (dashed: ideal; red: Amdahl fit, p = {:.4f})</text>\n<rect x=\"{}\" "
        "y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#ccc\"/>\n",
        width, height, width, height, left, first, p, left, top, pw, ph);
    for (int k = 0; k <= 4; ++k) {
      const double sp = max_s * k / 4;
      h += fmt::format(
          "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{:.1f}x"
          "</text>\n",
          left - 4, Num(Y(sp) + 4), sp);
    }
    std::string ideal;
    for (int i = 0; i <= 100; ++i) {
      const double r = std::pow(2.0, lx_max * i / 100);
      ideal += fmt::format("{}{} {} ", i == 0 ? "M" : "L", Num(X(r)), Num(Y(r)));
    }
    h += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#888\" stroke-dasharray=\"6 4\"/>\n",
                     ideal);
    std::string fit;
    for (int i = 0; i <= 100; ++i) {
      const double r = std::pow(2.0, lx_max * i / 100);
      const double sp = 1.0 / ((1 - p) + p / r);
      fit += fmt::format("{}{} {} ", i == 0 ? "M" : "L", Num(X(r)), Num(Y(sp)));
    }
    h += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#e15759\" stroke-width=\"1.5\"/>\n",
                     fit);
    for (auto [g, sp] : xy) {
      h += fmt::format(
          "<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"#4e79a7\"><title>{:.0f} GPUs: {:.2f}x"
          "</title></circle>\n<text x=\"{}\" y=\"{}\" font-size=\"11\" "
          "text-anchor=\"middle\">{:.0f}"
          "</text>\n",
          Num(X(g / first)), Num(Y(sp)), g, sp, Num(X(g / first)), top + ph + 16, g);
    }
    h += fmt::format(
        "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">GPUs (log scale)</text>\n"
        "</svg>\n",
        left + pw / 2, height - 14);
  }
  h += "<table>\n<tr><th>GPUs</th><th class=\"l\">best layout</th><th>step (s)</th><th>speedup"
       "</th><th>efficiency</th><th>Karp-Flatt</th></tr>\n";
  for (const auto& pt : pts) {
    if (!pt["found"].as<bool>()) {
      h += fmt::format(
          "<tr><td>{}</td><td class=\"l\">{}</td><td></td><td></td><td></td><td>"
          "</td></tr>\n",
          pt["gpus"].as<int64_t>(), XmlEscape(pt["reason"].as<std::string>("")));
      continue;
    }
    h += fmt::format(
        "<tr><td>{}</td><td class=\"l\">{}</td><td>{:.3f}</td><td>{:.2f}x</td><td>{:.1f}%</td>"
        "<td>{:.4f}</td></tr>\n",
        pt["gpus"].as<int64_t>(), XmlEscape(LayoutOf(pt["layout"])), D(pt, "step_time_s"),
        D(pt, "speedup"), 100 * D(pt, "efficiency"), D(pt, "karp_flatt"));
  }
  h += "</table>\n";
  if (root["advice"] && root["advice"]["verdict"]) {
    h += fmt::format("<p>{}</p>\n", XmlEscape(root["advice"]["verdict"].as<std::string>()));
  }
  h += "</body>\n</html>\n";
  return h;
}

std::string SweepHtml(const YAML::Node& root) {
  std::string h = kHtmlHead;
  h += fmt::format(
      "<h1>Sweep: {}</h1>\n<p>{:.0f} grid points, {:.0f} valid layouts, {:.0f} replayed, {:.0f} "
      "fit, in {:.3f} s.</p>\n",
      XmlEscape(root["scenario"].as<std::string>("")), D(root, "grid_points"),
      D(root, "valid_layouts"), D(root, "replayed"), D(root, "feasible"), D(root, "elapsed_s"));
  const YAML::Node res = root["results"];
  // A co-design sweep's results carry their cluster and cost per token.
  const bool codesign = root["clusters"].IsDefined();
  const bool priced = codesign && res.size() > 0 && res[0]["cost_per_million_tokens"].IsDefined();
  const char* cost_key = priced ? "cost_per_million_tokens" : "gpu_hours_per_million_tokens";
  double capacity = 1;
  std::vector<ScatterPoint> pts;
  for (const auto& r : res) {
    double peak = 0;
    for (const auto& b : r["peak_memory_bytes"]) peak = std::max(peak, b.as<double>());
    capacity = std::max(capacity, D(r, "memory_capacity_bytes"));
    const std::string what =
        codesign ? fmt::format("{}: {}", r["hardware"].as<std::string>(""), LayoutOf(r["layout"]))
                 : LayoutOf(r["layout"]);
    pts.push_back({codesign ? D(r, cost_key) : Bytes(peak).gib(), D(r, "tokens_per_s"), false,
                   fmt::format("#{} {}: {:.0f} tokens/s, {}", r["rank"].as<int>(0), what,
                               D(r, "tokens_per_s"),
                               codesign ? fmt::format("{:.4g} {}", D(r, cost_key), cost_key)
                                        : FormatBytes(Bytes(peak)))});
  }
  if (codesign) {
    h += ScatterSvg("Throughput vs cost per token of the top layouts", pts, CostAxis(priced), 1000);
  } else {
    h +=
        ScatterSvg("Throughput vs peak memory of the top layouts", pts, MemoryAxis(capacity), 1000);
  }
  h += "<table>\n<tr><th>#</th><th class=\"l\">layout</th><th>step (s)</th><th>tokens/s</th>"
       "<th>MFU</th><th>bubble</th><th class=\"l\">bottleneck</th></tr>\n";
  for (const auto& r : res) {
    h += fmt::format(
        "<tr><td>{}</td><td class=\"l\">{}</td><td>{:.3f}</td><td>{:.0f}</td><td>{:.1f}%</td><td>"
        "{:.1f}%</td><td class=\"l\">{}</td></tr>\n",
        r["rank"].as<int>(0), XmlEscape(LayoutOf(r["layout"])), D(r, "step_time_s"),
        D(r, "tokens_per_s"), 100 * D(r, "mfu"), 100 * D(r, "bubble_fraction"),
        XmlEscape(r["bottleneck"].as<std::string>("")));
  }
  h += "</table>\n";
  // sweep --robust --json: the swings, as the scenario's report shows them.
  if (const YAML::Node rob = root["robustness"]; rob && rob["swings"]) {
    std::vector<SwingRow> rows;
    for (const auto& w : rob["swings"]) {
      const Swing swing{SwingKindOf(w["parameter"].as<std::string>("")), D(w, "factor"),
                        w["gpu"].as<std::string>("")};
      rows.push_back({SwingText(swing), w["applied"].as<std::string>(""),
                      w["first_rank"].as<int>(1), w["first_layout"].as<std::string>(""),
                      D(w, "behind"), w["holds"].as<bool>(true)});
    }
    h += RobustnessHtml(rows, rob["held"].as<int>(0));
  }
  h += "</body>\n</html>\n";
  return h;
}

}  // namespace

StatusOr<std::string> ReportFromJson(const std::string& text, const std::string& file) {
  PARASIM_ASSIGN_OR_RETURN(YAML::Node root,
                           ParseYaml(text, file, "the JSON of `sweep --json` or `scale --json`"));
  try {
    if (root.IsMap() && root["points"] && root["points"].IsSequence()) return ScaleHtml(root);
    if (root.IsMap() && root["results"] && root["results"].IsSequence()) return SweepHtml(root);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("{}:{}:{}: error: unexpected value in the results: {}", file,
                                       e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  return InvalidArgument(fmt::format(
      "{}:1:1: error: not a parasim results file: expected the JSON of `parasim sweep --json` "
      "(\"results\") or `parasim scale --json` (\"points\")",
      file));
}

}  // namespace parasim
