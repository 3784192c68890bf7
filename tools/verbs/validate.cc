// parasim validate: predict every case of a validation file (SCENARIO.md "Validation file") and
// compare with the measurements: signed error per case, MAPE, and the ranking of the cases.
#include "scenarios/validate.h"

#include <fmt/core.h>

#include "tools/text.h"
#include "tools/verbs/inputs.h"
#include "tools/verbs/verb.h"

namespace parasim {
namespace {

struct Options {
  Document file;
  std::vector<std::string> sets;
  int jobs = 0;
  bool markdown = false;  // a Markdown table for docs/MODEL.md
  bool robust = false;    // each case's layout under sweep --robust's swings too
};

struct Result {
  ValidationReport r;
  std::string file;
  bool markdown = false;
  bool robust = false;
};

StatusOr<Result> Run(const Options& o, const VerbContext& ctx) {
  Result res{.file = o.file.file, .markdown = o.markdown, .robust = o.robust};
  PARASIM_ASSIGN_OR_RETURN(
      res.r, Validate(o.file.Input(), o.sets, SweepOptionsOf(o.jobs, ctx.processes), o.robust));
  return res;
}

Json CaseJson(const ValidationCase& c) {
  Json o = Json::Object();
  // SCENARIO.md: a failed case has `error` null and a `status` naming why.
  o.Set("name", c.name).Set("status", c.ok ? std::string("ok") : c.failure);
  o.Set("measured_s", c.measured_s);
  if (!c.ok) return o.Set("predicted_s", Json()).Set("error", Json());
  o.Set("predicted_s", c.predicted_s).Set("error", c.error).Set("layout", c.layout);
  if (c.wall_clock) o.Set("basis", std::string("wall_clock")).Set("goodput", c.goodput);
  if (c.swing_hi_s > 0) {
    Json range = Json::Array();
    range.Push(c.swing_lo_s).Push(c.swing_hi_s);
    o.Set("swing_range_s", range).Set("swing_lo", c.swing_lo).Set("swing_hi", c.swing_hi);
    o.Set("within_swings", c.within_swings());
  }
  return o;
}

Json RankingJson(const Ranking& rk) {
  Json misordered = Json::Array();
  for (const RankedPair& p : rk.misordered) {
    Json o = Json::Object();
    o.Set("a", p.a).Set("b", p.b).Set("measured_ratio", p.measured_ratio);
    misordered.Push(o.Set("predicted_ratio", p.predicted_ratio));
  }
  Json ranking = Json::Object();
  ranking.Set("scored", rk.scored).Set("ordered", rk.ordered);
  ranking.Set("ties", rk.ties).Set("tie_band", kRankTie).Set("misordered", misordered);
  return ranking;
}

Json ToJson(const Result& res) {
  const ValidationReport& r = res.r;
  Json cases = Json::Array();
  for (const auto& c : r.cases) cases.Push(CaseJson(c));
  Json j = Json::Object();
  j.Set("source", r.source).Set("cases", cases).Set("mape", r.mape);
  j.Set("max_abs_error", r.max_abs_error).Set("failed", r.failed);
  j.Set("ranking", RankingJson(r.ranking));
  if (res.robust) {
    Json sw = Json::Object();
    sw.Set("swung", r.swung).Set("within", r.within_swings);
    j.Set("swings", sw);
  }
  return j;
}

// What the ranking of a file's cases says, a line each (none when no two cases train the same
// model at the same sequence length).
std::vector<std::string> RankingLines(const Ranking& r) {
  std::vector<std::string> out;
  if (r.scored + r.ties == 0) return out;
  const std::string ties =
      r.ties > 0 ? fmt::format("; {} more within {:.0f}%, where either order is right", r.ties,
                               100 * kRankTie)
                 : "";
  out.push_back(
      fmt::format("Ranking: {} of {} pairs of cases of the same model ordered as "
                  "measured (GPU-seconds a sequence){}.",
                  r.ordered, r.scored, ties));
  for (const RankedPair& p : r.misordered) {
    out.push_back(fmt::format("Out of order: {} against {}: measured {:.3f}x, predicted {:.3f}x.",
                              p.a, p.b, p.measured_ratio, p.predicted_ratio));
  }
  return out;
}

// A wall-clock case's prediction is the step over the goodput: say so beside its layout.
std::string ThroughGoodput(const ValidationCase& c) {
  return c.wall_clock ? fmt::format(" (wall clock: step / goodput {:.1f}%)", 100 * c.goodput)
                      : std::string();
}

std::string FailedText(const ValidationReport& r) {
  return r.failed > 0 ? fmt::format("; {} case(s) FAILED (no prediction)", r.failed) : "";
}

// --markdown: the table of docs/MODEL.md.
std::string MarkdownText(const ValidationReport& r) {
  std::string out = fmt::format("Source: {}\n\n", r.source);
  out += "| case | predicted | measured | error | layout predicted |\n";
  out += "| --- | ---: | ---: | ---: | --- |\n";
  for (const auto& c : r.cases) {
    if (!c.ok) {
      out += fmt::format("| {} | failed | {:.3f} s | | {} |\n", c.name, c.measured_s, c.failure);
      continue;
    }
    out += fmt::format("| {} | {:.3f} s | {:.3f} s | {:+.1f}% | {}{} |\n", c.name, c.predicted_s,
                       c.measured_s, 100 * c.error, c.layout, ThroughGoodput(c));
  }
  const std::vector<std::string> ranking = RankingLines(r.ranking);
  for (size_t i = 0; i < ranking.size(); ++i) {
    // The headline a paragraph, the pairs out of order a list under it.
    out += fmt::format("{}{}{}\n", i <= 1 ? "\n" : "", i == 0 ? "" : "- ", ranking[i]);
  }
  // The summary stays the last line: scripts read it there.
  return out + fmt::format("\nMAPE {:.2f}%, max |error| {:.2f}% over {} cases{}.\n", 100 * r.mape,
                           100 * r.max_abs_error, r.cases.size() - r.failed, FailedText(r));
}

// --robust: how many measured steps lie within the swings' range, and those that do not.
std::string SwingsText(const ValidationReport& r) {
  std::string out = fmt::format(
      "Swings (--robust): the measured step lies within the range one swing of the cost "
      "model's uncertain rates spans for {} of {} cases.\n",
      r.within_swings, r.swung);
  for (const auto& c : r.cases) {
    if (c.swing_hi_s <= 0 || c.within_swings()) continue;
    out +=
        fmt::format("  {}: measured {}, swings {} ({}) to {} ({})\n", c.name, Seconds(c.measured_s),
                    Seconds(c.swing_lo_s), c.swing_lo, Seconds(c.swing_hi_s), c.swing_hi);
  }
  return out;
}

std::string ToText(const Result& res) {
  const ValidationReport& r = res.r;
  if (res.markdown) return MarkdownText(r);
  std::string out = fmt::format("{}\n{}\n\n", res.file, r.source);
  out += fmt::format("{:<24} {:>12} {:>12} {:>8}  {}\n", "case", "predicted", "measured", "error",
                     "layout (best of the case's sweep)");
  for (const auto& c : r.cases) {
    if (!c.ok) {
      out += fmt::format("{:<24} {:>12} {:>12} {:>8}  {}\n", c.name, "FAILED",
                         Seconds(c.measured_s), "", c.failure);
      continue;
    }
    out += fmt::format("{:<24} {:>12} {:>12} {:>+7.1f}%  {}{}\n", c.name, Seconds(c.predicted_s),
                       Seconds(c.measured_s), 100 * c.error, c.layout, ThroughGoodput(c));
  }
  for (const std::string& line : RankingLines(r.ranking)) out += line + "\n";
  if (res.robust) out += SwingsText(r);
  // The summary stays the last line: scripts read it there.
  return out + fmt::format("MAPE {:.2f}%, max |error| {:.2f}% over {} cases{}\n", 100 * r.mape,
                           100 * r.max_abs_error, r.cases.size() - r.failed, FailedText(r));
}

}  // namespace

Verb ValidateVerb() {
  using O = Options;
  return MakeVerb<O, Result>({
      .name = "validate",
      .help = "predict every case of a validation file and compare with the measurements",
      .flags = {Arg(&O::file, "file", "validation YAML file (SCENARIO.md \"Validation file\")")
                    .Required(),
                SetFlag(&O::sets), JsonFlag<O>(),
                JobsFlag(&O::jobs, "worker threads for the cases' sweeps"),
                Opt(&O::markdown, "--markdown", "print the table as Markdown (docs/MODEL.md)"),
                Opt(&O::robust, "--robust",
                    "also replay each case's layout under sweep --robust's swings, and say for "
                    "how many cases the measured step lies within the range they span")},
      .run = Run,
      .json = ToJson,
      .text = ToText,
  });
}

}  // namespace parasim
