#include "tools/verbs/serve_validate.h"

#include <fmt/core.h>

#include <cmath>

#include "sim/parse_units.h"
#include "tools/text.h"

namespace parasim {
namespace {

Json FigureJson(const ServingFigure& f) {
  Json j = Json::Object();
  j.Set("measured", f.measured).Set("predicted", f.predicted);
  return j.Set("error", f.error);
}

Json SummaryJson(const FigureSummary& s) {
  Json j = Json::Object();
  j.Set("cases", s.cases).Set("mape", s.mape).Set("max_abs_error", s.max_abs_error);
  return j;
}

// The figures a case gives: a name, the figure, and whether it is a latency.
struct Named {
  const char* key;
  const ServingFigure* f;
  bool latency;
};
std::vector<Named> Figures(const ServingValidationCase& c) {
  return {{"tokens_per_s", &c.tokens, false},
          {"ttft_p99", &c.ttft_p99, true},
          {"tpot_p99", &c.tpot_p99, true},
          {"ttft_p50", &c.ttft_p50, true},
          {"tpot_p50", &c.tpot_p50, true}};
}

std::string Value(const ServingFigure& f, bool latency, bool predicted) {
  const double v = predicted ? f.predicted : f.measured;
  return latency ? FormatDuration(Duration::Seconds(v)) : Human(v);
}

std::string Summary(const ServingValidationReport& r) {
  return fmt::format(
      "throughput MAPE {:.2f}% (max |error| {:.2f}%) over {} cases; TTFT MAPE {:.2f}% over {} "
      "figures; TPOT MAPE {:.2f}% over {} figures{}",
      100 * r.throughput.mape, 100 * r.throughput.max_abs_error, r.throughput.cases,
      100 * r.ttft.mape, r.ttft.cases, 100 * r.tpot.mape, r.tpot.cases,
      r.failed > 0 ? fmt::format("; {} case(s) FAILED (no prediction)", r.failed) : "");
}

}  // namespace

Json ServingValidationJson(const ServingValidationReport& r) {
  Json cases = Json::Array();
  for (const ServingValidationCase& c : r.cases) {
    Json o = Json::Object();
    o.Set("name", c.name).Set("status", c.ok ? std::string("ok") : c.failure);
    o.Set("source", c.source).Set("layout", c.layout);
    for (const Named& n : Figures(c)) {
      if (n.f->given()) o.Set(n.key, c.ok ? FigureJson(*n.f) : Json());
    }
    // SCENARIO.md's validate keys: the throughput's, or null for a failed case.
    o.Set("error", c.ok && c.tokens.given() ? Json(c.tokens.error) : Json());
    cases.Push(o);
  }
  // The throughput's summary last: `mape` and `max_abs_error` (SCENARIO.md's validate keys) are
  // the throughput's, as a script reading the last of each finds them.
  Json j = Json::Object();
  j.Set("source", r.source).Set("kind", "serving").Set("cases", cases);
  j.Set("ttft", SummaryJson(r.ttft)).Set("tpot", SummaryJson(r.tpot));
  j.Set("throughput", SummaryJson(r.throughput));
  j.Set("ttft_mape", r.ttft.mape).Set("tpot_mape", r.tpot.mape).Set("failed", r.failed);
  return j.Set("mape", r.throughput.mape).Set("max_abs_error", r.throughput.max_abs_error);
}

std::string ServingValidationText(const std::string& file, const ServingValidationReport& r) {
  std::string out = fmt::format("{}\n{}\n\n", file, r.source);
  for (const ServingValidationCase& c : r.cases) {
    out += fmt::format("{}  [{}]\n", c.name, c.layout);
    if (!c.ok) {
      out += fmt::format("  FAILED: {}\n", c.failure);
      continue;
    }
    for (const Named& n : Figures(c)) {
      if (!n.f->given()) continue;
      out += fmt::format("  {:<14} predicted {:>12} measured {:>12} {:>+7.1f}%\n", n.key,
                         Value(*n.f, n.latency, true), Value(*n.f, n.latency, false),
                         100 * n.f->error);
    }
  }
  // The summary stays the last line: scripts read it there.
  return out + Summary(r) + "\n";
}

std::string ServingValidationMarkdown(const ServingValidationReport& r) {
  std::string out = fmt::format("Source: {}\n\n", r.source);
  out +=
      "| case | layout | tokens/s predicted | measured | error | TTFT P99 predicted | measured "
      "| error | TPOT P99 predicted | measured | error |\n";
  out += "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  auto cell = [](const ServingFigure& f, bool latency) {
    if (!f.given()) return std::string(" | | |");
    return fmt::format(" {} | {} | {:+.1f}% |", Value(f, latency, true), Value(f, latency, false),
                       100 * f.error);
  };
  for (const ServingValidationCase& c : r.cases) {
    if (!c.ok) {
      out += fmt::format("| {} | {} | failed: {} | | | | | | | | |\n", c.name, c.layout, c.failure);
      continue;
    }
    out += fmt::format("| {} | {} |{}{}{}\n", c.name, c.layout, cell(c.tokens, false),
                       cell(c.ttft_p99, true), cell(c.tpot_p99, true));
  }
  return out + "\n" + Summary(r) + ".\n";
}

}  // namespace parasim
