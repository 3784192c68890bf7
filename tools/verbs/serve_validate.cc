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
  return j.Set("within_20", s.within);
}

// The latency figures of a view, in the order every view lists them.
struct LatencyKey {
  const char* key;
  ServingFigure LatencyFigures::*f;
};
constexpr LatencyKey kLatencyKeys[] = {{"ttft_p99", &LatencyFigures::ttft_p99},
                                       {"tpot_p99", &LatencyFigures::tpot_p99},
                                       {"ttft_p50", &LatencyFigures::ttft_p50},
                                       {"tpot_p50", &LatencyFigures::tpot_p50}};

// The figures a case gives: a name, the figure, and whether it is a latency.
struct Named {
  const char* key;
  const ServingFigure* f;
  bool latency;
};
std::vector<Named> Latencies(const LatencyFigures& l) {
  std::vector<Named> out;
  for (const LatencyKey& k : kLatencyKeys) out.push_back({k.key, &(l.*k.f), true});
  return out;
}
std::vector<Named> Figures(const ServingValidationCase& c) {
  std::vector<Named> out = {{"tokens_per_s", &c.tokens, false}};
  for (const Named& n : Latencies(c.latency)) out.push_back(n);
  return out;
}

std::string Value(const ServingFigure& f, bool latency, bool predicted) {
  const double v = predicted ? f.predicted : f.measured;
  return latency ? FormatDuration(Duration::Seconds(v)) : Human(v);
}

std::string Within(const FigureSummary& s) { return fmt::format("{}/{}", s.within, s.cases); }

bool HasBand(const ServingValidationReport& r) {
  for (const ServingValidationCase& c : r.cases) {
    if (c.ok && c.load > 0) return true;
  }
  return false;
}

std::string Summary(const ServingValidationReport& r) {
  std::string views;
  if (r.ttft.cases + r.tpot.cases > 0) {
    views += fmt::format("; within 20%: TTFT {}, TPOT {}", Within(r.ttft), Within(r.tpot));
  }
  if (r.load_ttft.cases + r.load_tpot.cases > 0) {
    views += fmt::format("; at the runs' load: TTFT {} (MAPE {:.1f}%), TPOT {} (MAPE {:.1f}%)",
                         Within(r.load_ttft), 100 * r.load_ttft.mape, Within(r.load_tpot),
                         100 * r.load_tpot.mape);
  }
  if (HasBand(r)) {
    views += fmt::format("; within 20% at the rate x {:.2f}-{:.2f}: TTFT {}/{}, TPOT {}/{}",
                         1 - kLoadBand, 1 + kLoadBand, r.band_ttft_within, r.ttft.cases,
                         r.band_tpot_within, r.tpot.cases);
  }
  if (r.concurrency_tpot.cases > 0) {
    views += fmt::format("; at the runs' concurrency: mean TPOT {} (MAPE {:.1f}%)",
                         Within(r.concurrency_tpot), 100 * r.concurrency_tpot.mape);
  }
  if (r.max_rate.cases > 0) {
    views += fmt::format("; max rate at SLO against the runs' rates: MAPE {:.1f}% over {}",
                         100 * r.max_rate.mape, r.max_rate.cases);
  }
  return fmt::format(
      "throughput MAPE {:.2f}% (max |error| {:.2f}%) over {} cases; TTFT MAPE {:.2f}% over {} "
      "figures; TPOT MAPE {:.2f}% over {} figures{}{}",
      100 * r.throughput.mape, 100 * r.throughput.max_abs_error, r.throughput.cases,
      100 * r.ttft.mape, r.ttft.cases, 100 * r.tpot.mape, r.tpot.cases, views,
      r.failed > 0 ? fmt::format("; {} case(s) FAILED (no prediction)", r.failed) : "");
}

// The views beside the stated settings a case gives, as JSON.
void ViewsJson(const ServingValidationCase& c, Json* o) {
  if (c.load_scale > 0) {
    Json l = Json::Object();
    l.Set("offline_case", c.offline_case).Set("rate_scale", c.load_scale);
    l.Set("rate_per_s", c.rate_per_s * c.load_scale);
    for (const Named& n : Latencies(c.at_load)) {
      if (n.f->given()) l.Set(n.key, FigureJson(*n.f));
    }
    o->Set("at_load", l);
  }
  if (c.load > 0) {
    // As `serve --json`'s load: the capacity, the load, and the span's predictions.
    Json band = Json::Object();
    band.Set("rate_scale", Json::Array().Push(1 - kLoadBand).Push(1 + kLoadBand));
    for (const LatencyKey& k : kLatencyKeys) {
      const ServingFigure &m = c.latency.*k.f, &lo = c.band_lo.*k.f, &hi = c.band_hi.*k.f;
      if (!m.given()) continue;
      Json f = Json::Object();
      f.Set("predicted", Json::Array().Push(lo.predicted).Push(hi.predicted));
      band.Set(k.key, f.Set("within_20", BandWithin(m, lo, hi)));
    }
    Json l = Json::Object();
    l.Set("capacity_per_s", c.capacity_per_s).Set("load", c.load).Set("band", band);
    o->Set("load", l);
  }
  if (c.concurrency > 0) {
    Json j = Json::Object();
    j.Set("concurrency", c.concurrency).Set("tpot_mean", FigureJson(c.tpot_mean));
    o->Set("at_concurrency", j);
  }
  if (c.max_rate.given()) o->Set("max_rate_at_slo", FigureJson(c.max_rate));
}

// A latency figure's predictions over its case's span, the stated rate's included: "a - b".
std::string Span(const ServingValidationCase& c, ServingFigure LatencyFigures::*f) {
  const auto [low, high] = PredictedSpan(c.latency.*f, c.band_lo.*f, c.band_hi.*f);
  return FormatDuration(Duration::Seconds(low)) + " - " + FormatDuration(Duration::Seconds(high));
}

std::string Line(const char* key, const ServingFigure& f, bool latency) {
  return fmt::format("  {:<14} predicted {:>12} measured {:>12} {:>+7.1f}%\n", key,
                     Value(f, latency, true), Value(f, latency, false), 100 * f.error);
}

std::string ViewsText(const ServingValidationCase& c) {
  std::string out;
  if (c.load_scale > 0) {
    out += fmt::format("  at the run's load (rate x {:.3f}, {}'s predicted over measured):\n",
                       c.load_scale, c.offline_case);
    for (const Named& n : Latencies(c.at_load)) {
      if (n.f->given()) out += "  " + Line(n.key, *n.f, true);
    }
  }
  if (c.load > 0) {
    out += fmt::format(
        "  from {:.0f}% less to {:.0f}% more load (the stated rate is {:.0f}% of the replay's "
        "capacity, {:.4g} requests/s):\n",
        100 * kLoadBand, 100 * kLoadBand, 100 * c.load, c.capacity_per_s);
    for (const LatencyKey& k : kLatencyKeys) {
      const ServingFigure& m = c.latency.*k.f;
      if (!m.given()) continue;
      out += fmt::format(
          "    {:<14} predicted {:>27} {}\n", k.key, Span(c, k.f),
          BandWithin(m, c.band_lo.*k.f, c.band_hi.*k.f) ? "within 20% in the span" : "outside 20%");
    }
  }
  if (c.concurrency > 0) {
    out += fmt::format("  at the run's concurrency ({:.4g} requests in flight):\n", c.concurrency);
    out += "  " + Line("tpot_mean", c.tpot_mean, true);
  }
  if (c.max_rate.given()) {
    out += fmt::format("  {:<14} predicted {:>10.2f}/s the run's {:>10.2f}/s {:>+7.1f}%\n",
                       "max_rate_at_slo", c.max_rate.predicted, c.max_rate.measured,
                       100 * c.max_rate.error);
  }
  return out;
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
    if (c.ok) ViewsJson(c, &o);
    // SCENARIO.md's validate keys: the throughput's, or null for a failed case.
    o.Set("error", c.ok && c.tokens.given() ? Json(c.tokens.error) : Json());
    cases.Push(o);
  }
  // The throughput's summary last: `mape` and `max_abs_error` (SCENARIO.md's validate keys) are
  // the throughput's, as a script reading the last of each finds them.
  Json j = Json::Object();
  j.Set("source", r.source).Set("kind", "serving").Set("cases", cases);
  j.Set("ttft", SummaryJson(r.ttft)).Set("tpot", SummaryJson(r.tpot));
  Json load = Json::Object();
  load.Set("ttft", SummaryJson(r.load_ttft)).Set("tpot", SummaryJson(r.load_tpot));
  j.Set("at_load", load);
  j.Set("at_concurrency", Json::Object().Set("tpot_mean", SummaryJson(r.concurrency_tpot)));
  j.Set("max_rate_at_slo", SummaryJson(r.max_rate));
  // Figures within 20% somewhere in their case's span (at the stated rate for a case without one).
  Json band = Json::Object();
  band.Set("ttft", Json::Object().Set("cases", r.ttft.cases).Set("within_20", r.band_ttft_within));
  band.Set("tpot", Json::Object().Set("cases", r.tpot.cases).Set("within_20", r.band_tpot_within));
  j.Set("band", band);
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
      if (n.f->given()) out += Line(n.key, *n.f, n.latency);
    }
    out += ViewsText(c);
  }
  // The summary stays the last line: scripts read it there.
  return out + Summary(r) + "\n";
}

namespace {

std::string Cell(const ServingFigure& f, bool latency) {
  if (!f.given()) return std::string(" | | |");
  return fmt::format(" {} | {} | {:+.1f}% |", Value(f, latency, true), Value(f, latency, false),
                     100 * f.error);
}

// The second table: the views beside the stated settings, for the cases that give one.
std::string ViewsMarkdown(const ServingValidationReport& r) {
  std::string out =
      "\n| case | load scale | TTFT P99 at the run's load | measured | error | TPOT P99 at the "
      "run's load | measured | error | in flight | mean TPOT there | measured | error | max "
      "rate at SLO | the run's | error | load | TTFT P99, load -/+ 2% |\n"
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
      "| ---: | ---: | ---: | ---: |\n";
  int rows = 0;
  for (const ServingValidationCase& c : r.cases) {
    if (!c.ok || (c.load_scale <= 0 && c.concurrency <= 0 && !c.max_rate.given() && c.load <= 0)) {
      continue;
    }
    ++rows;
    out += fmt::format("| {} | {} |", c.name,
                       c.load_scale > 0 ? fmt::format("{:.3f}", c.load_scale) : "");
    out += c.load_scale > 0 ? Cell(c.at_load.ttft_p99, true) + Cell(c.at_load.tpot_p99, true)
                            : " | | | | | |";
    out += c.concurrency > 0 ? fmt::format(" {:.0f} |", c.concurrency) + Cell(c.tpot_mean, true)
                             : " | | | |";
    out += c.max_rate.given()
               ? fmt::format(" {:.2f}/s | {:.2f}/s | {:+.1f}% |", c.max_rate.predicted,
                             c.max_rate.measured, 100 * c.max_rate.error)
               : " | | |";
    out += c.load > 0 && c.latency.ttft_p99.given()
               ? fmt::format(" {:.0f}% | {} |", 100 * c.load, Span(c, &LatencyFigures::ttft_p99))
           : c.load > 0 ? fmt::format(" {:.0f}% | |", 100 * c.load)
                        : " | |";
    out += "\n";
  }
  return rows > 0 ? out : std::string();
}

}  // namespace

std::string ServingValidationMarkdown(const ServingValidationReport& r) {
  std::string out = fmt::format("Source: {}\n\n", r.source);
  out +=
      "| case | layout | tokens/s predicted | measured | error | TTFT P99 predicted | measured "
      "| error | TPOT P99 predicted | measured | error |\n";
  out += "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const ServingValidationCase& c : r.cases) {
    if (!c.ok) {
      out += fmt::format("| {} | {} | failed: {} | | | | | | | | |\n", c.name, c.layout, c.failure);
      continue;
    }
    out += fmt::format("| {} | {} |{}{}{}\n", c.name, c.layout, Cell(c.tokens, false),
                       Cell(c.latency.ttft_p99, true), Cell(c.latency.tpot_p99, true));
  }
  return out + ViewsMarkdown(r) + "\n" + Summary(r) + ".\n";
}

}  // namespace parasim
