// parasim validate: predict every case of a validation file (SCENARIO.md "Validation file") and
// compare with the measurements: signed error per case, MAPE, and the ranking of the cases.
#include "scenarios/validate.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "sim/parse_units.h"
#include "sim/yaml_reader.h"
#include "tools/text.h"
#include "tools/verbs/inputs.h"
#include "tools/verbs/serve_validate.h"
#include "tools/verbs/verb.h"

namespace parasim {
namespace {

struct Options {
  Document file;
  std::vector<std::string> sets;
  int jobs = 0;
  bool markdown = false;  // a Markdown table for docs/MODEL.md
  bool robust = false;    // each case's layout under sweep --robust's swings too
  bool search = false;    // serving: each case's max_rate_at_slo against its rate
  // Which cases: --subset, --gpu, --nodes (CaseFilter).
  std::string subset, gpu;
  int64_t nodes = 0;
};

struct Result {
  ValidationReport r;
  std::string file;
  bool markdown = false;
  bool robust = false;
  std::optional<ServingValidationReport> serving;  // a file of serving cases
};

StatusOr<Result> Run(const Options& o, const VerbContext& ctx) {
  Result res{.file = o.file.file, .markdown = o.markdown, .robust = o.robust};
  if (!o.gpu.empty()) {
    // A filter on a GPU no case can be on would select nothing and say nothing of why.
    PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
    if (!cat.hardware.FindGpu(o.gpu)) {
      return InvalidArgument(fmt::format(
          "--gpu={}:1:7: error: unknown GPU '{}'{}; expected one of: {}", o.gpu, o.gpu,
          SuggestionHint(o.gpu, cat.hardware.GpuIds()), fmt::join(cat.hardware.GpuIds(), ", ")));
    }
  }
  // --gpu and --nodes select cases by the hardware the file states; a --set that replaces it
  // would have the filter count cases on one GPU as another's (H100 predictions as A100 cases).
  for (const std::string& set : o.sets) {
    for (const auto& [given, key, flag] : {std::tuple{!o.gpu.empty(), "cluster.gpu", "--gpu"},
                                           std::tuple{o.nodes > 0, "cluster.nodes", "--nodes"}}) {
      const std::string k = key;
      const bool whole_cluster = set.rfind("cluster=", 0) == 0;  // a block in one --set
      if (given && (whole_cluster || set.rfind(k + "=", 0) == 0 || set.rfind(k + ".", 0) == 0)) {
        return InvalidArgument(fmt::format(
            "--set={}:1:1: error: replaces the {} that {} selects cases by (the file's); "
            "give one of them",
            set, k, flag));
      }
    }
  }
  if (IsServingValidationFile(o.file.Input())) {
    // A serving file's subsets are its folders (train, heldout, reference); the case filters
    // and the robustness swings are the training files'. Ignoring them counted every case.
    for (const auto& [given, flag] :
         {std::pair{!o.subset.empty(), "--subset"}, std::pair{!o.gpu.empty(), "--gpu"},
          std::pair{o.nodes > 0, "--nodes"}, std::pair{o.robust, "--robust"}}) {
      if (given) {
        const std::string why =
            o.robust && std::string_view(flag) == "--robust"
                ? "the robustness swings (cost-model error bars) are the training files'"
                : "a serving file's subset is its folder (tests/validation/serving/train, "
                  "heldout, reference): validate that folder's files";
        return InvalidArgument(fmt::format(
            "{}:1:1: error: {} applies to training validation files; {}, or leave {} out",
            o.file.file, flag, why, flag));
      }
    }
    PARASIM_ASSIGN_OR_RETURN(res.serving,
                             ValidateServing(o.file.Input(), o.sets, o.jobs, o.search));
    return res;
  }
  if (o.search) {
    // The serving views (load fraction, concurrency, max rate): nothing to search in training.
    return InvalidArgument(fmt::format(
        "{}:1:1: error: --search applies to serving validation files (the views at the run's "
        "load, concurrency and max rate); leave it out for a training file",
        o.file.file));
  }
  PARASIM_ASSIGN_OR_RETURN(
      res.r, Validate(o.file.Input(), o.sets, SweepOptionsOf(o.jobs, ctx.processes), o.robust,
                      CaseFilter{o.subset, o.gpu, o.nodes}));
  return res;
}

Json CaseJson(const ValidationCase& c) {
  Json o = Json::Object();
  // SCENARIO.md: a failed case has `error` null and a `status` naming why.
  o.Set("name", c.name).Set("status", c.ok ? std::string("ok") : c.failure);
  o.Set("measured_s", c.has_time() ? Json(c.measured_s) : Json());
  if (c.has_memory()) {
    // The prediction is kept for a case that does not fit: how far over is the memory error.
    o.Set("measured_peak_bytes", c.measured_peak_bytes);
    o.Set("peak_memory_stage", std::string(c.peak_stage_last ? "last" : "max"));
    o.Set("predicted_peak_bytes",
          c.predicted_peak_bytes > 0 ? Json(c.predicted_peak_bytes) : Json());
    o.Set("memory_error", c.ok ? Json(c.memory_error) : Json());
  }
  if (!c.ok) return o.Set("predicted_s", Json()).Set("error", Json());
  o.Set("predicted_s", c.predicted_s).Set("error", c.has_time() ? Json(c.error) : Json());
  o.Set("layout", c.layout);
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
  if (res.serving) return ServingValidationJson(*res.serving);
  const ValidationReport& r = res.r;
  Json cases = Json::Array();
  for (const auto& c : r.cases) cases.Push(CaseJson(c));
  Json j = Json::Object();
  // No case predicted: no error to average (null, as memory_mape), never a MAPE of 0.
  const auto timed = [&](double v) { return r.timed > 0 ? Json(v) : Json(); };
  j.Set("source", r.source).Set("cases", cases).Set("mape", timed(r.mape));
  if (!r.stated.empty()) {
    Json stated = Json::Array();
    for (const std::string& s : r.stated) stated.Push(Json(s));
    j.Set("stated", stated);
  }
  j.Set("max_abs_error", timed(r.max_abs_error)).Set("failed", r.failed);
  j.Set("memory_mape", r.memory_cases > 0 ? Json(r.memory_mape) : Json());
  j.Set("max_abs_memory_error", r.memory_cases > 0 ? Json(r.max_abs_memory_error) : Json());
  j.Set("memory_cases", r.memory_cases);
  j.Set("ranking", RankingJson(r.ranking));
  if (res.robust) {
    Json sw = Json::Object();
    sw.Set("swung", r.swung).Set("within", r.within_swings);
    j.Set("swings", sw);
  }
  return j;
}

// The summary's step-time figures; with no case predicted there is no error to average, and
// the line says so rather than print a MAPE of 0.
std::string TimeSummary(const ValidationReport& r) {
  if (r.timed == 0) return "MAPE -, max |error| - over 0 cases (none predicted)";
  return fmt::format("MAPE {:.2f}%, max |error| {:.2f}% over {} cases", 100 * r.mape,
                     100 * r.max_abs_error, r.timed);
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

// The memory part of the summary line, where cases give a measured peak.
std::string MemoryText(const ValidationReport& r) {
  return r.memory_cases > 0
             ? fmt::format("; memory MAPE {:.2f}%, max |error| {:.2f}% over {} cases",
                           100 * r.memory_mape, 100 * r.max_abs_memory_error, r.memory_cases)
             : "";
}

// A case's time columns: predicted, measured and error ("" where no step time was measured).
std::string TimeError(const ValidationCase& c) {
  return c.has_time() ? fmt::format("{:+.1f}%", 100 * c.error) : std::string("-");
}

// A case's memory cells: predicted and measured peak, and the error ("-" where absent).
std::array<std::string, 3> MemoryCells(const ValidationCase& c) {
  if (!c.has_memory()) return {"-", "-", "-"};
  return {
      c.predicted_peak_bytes > 0 ? FormatBytes(Bytes(c.predicted_peak_bytes)) : std::string("-"),
      FormatBytes(Bytes(c.measured_peak_bytes)),
      c.ok ? fmt::format("{:+.1f}%", 100 * c.memory_error) : std::string("-")};
}

std::string FailedText(const ValidationReport& r) {
  return r.failed > 0 ? fmt::format("; {} case(s) FAILED (no prediction)", r.failed) : "";
}

// What subsets.yaml states for the file's cases, a line ending in a blank one ("" if none).
std::string StatedText(const ValidationReport& r) {
  if (r.stated.empty()) return "";
  return fmt::format("Stated beside the file (subsets.yaml, as --set): {}\n\n",
                     fmt::join(r.stated, ", "));
}

// --markdown: the table of docs/MODEL.md.
std::string MarkdownText(const ValidationReport& r) {
  std::string out = fmt::format("Source: {}\n\n{}", r.source, StatedText(r));
  const bool memory = std::any_of(r.cases.begin(), r.cases.end(),
                                  [](const ValidationCase& c) { return c.has_memory(); });
  out += memory ? "| case | predicted | measured | error | peak predicted | peak measured | "
                  "memory error | layout predicted |\n| --- | ---: | ---: | ---: | ---: | ---: | "
                  "---: | --- |\n"
                : "| case | predicted | measured | error | layout predicted |\n"
                  "| --- | ---: | ---: | ---: | --- |\n";
  for (const auto& c : r.cases) {
    const std::string measured = c.has_time() ? fmt::format("{:.3f} s", c.measured_s) : "-";
    const auto m = MemoryCells(c);
    const std::string cols = memory ? fmt::format("{} | {} | {} | ", m[0], m[1], m[2]) : "";
    if (!c.ok) {
      out += fmt::format("| {} | failed | {} | | {}{} |\n", c.name, measured, cols, c.failure);
      continue;
    }
    out += fmt::format("| {} | {:.3f} s | {} | {} | {}{}{} |\n", c.name, c.predicted_s, measured,
                       TimeError(c), cols, c.layout, ThroughGoodput(c));
  }
  const std::vector<std::string> ranking = RankingLines(r.ranking);
  for (size_t i = 0; i < ranking.size(); ++i) {
    // The headline a paragraph, the pairs out of order a list under it.
    out += fmt::format("{}{}{}\n", i <= 1 ? "\n" : "", i == 0 ? "" : "- ", ranking[i]);
  }
  // The summary stays the last line: scripts read it there.
  return out + fmt::format("\n{}{}{}.\n", TimeSummary(r), MemoryText(r), FailedText(r));
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
  if (res.serving) {
    return res.markdown ? ServingValidationMarkdown(*res.serving)
                        : ServingValidationText(res.file, *res.serving);
  }
  const ValidationReport& r = res.r;
  if (res.markdown) return MarkdownText(r);
  std::string out = fmt::format("{}\n{}\n\n{}", res.file, r.source, StatedText(r));
  const bool memory = std::any_of(r.cases.begin(), r.cases.end(),
                                  [](const ValidationCase& c) { return c.has_memory(); });
  auto mem = [&](const ValidationCase& c) {
    const auto m = MemoryCells(c);
    return memory ? fmt::format(" {:>11} {:>11} {:>8}", m[0], m[1], m[2]) : std::string();
  };
  out += fmt::format(
      "{:<24} {:>12} {:>12} {:>8}{}  {}\n", "case", "predicted", "measured", "error",
      memory ? fmt::format(" {:>11} {:>11} {:>8}", "peak pred", "peak meas", "mem err") : "",
      "layout (best of the case's sweep)");
  for (const auto& c : r.cases) {
    const std::string measured = c.has_time() ? Seconds(c.measured_s) : "-";
    if (!c.ok) {
      out += fmt::format("{:<24} {:>12} {:>12} {:>8}{}  {}\n", c.name, "FAILED", measured, "",
                         mem(c), c.failure);
      continue;
    }
    out += fmt::format("{:<24} {:>12} {:>12} {:>8}{}  {}{}\n", c.name, Seconds(c.predicted_s),
                       measured, TimeError(c), mem(c), c.layout, ThroughGoodput(c));
  }
  for (const std::string& line : RankingLines(r.ranking)) out += line + "\n";
  if (res.robust) out += SwingsText(r);
  // The summary stays the last line: scripts read it there.
  return out + fmt::format("{}{}{}\n", TimeSummary(r), MemoryText(r), FailedText(r));
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
                    "how many cases the measured step lies within the range they span"),
                Opt(&O::search, "--search",
                    "serving files: also search each case's highest rate within its serving.slo "
                    "and set it against the rate the run held"),
                Opt(&O::subset, "--subset",
                    "only the cases of this list (training, held_out, ...) of the subsets.yaml "
                    "beside the file"),
                Opt(&O::gpu, "--gpu", "only the cases on this catalog GPU"),
                Opt(&O::nodes, "--nodes", "only the cases on this many nodes (0: any)")
                    .Range(0, kMaxGpus)},
      .run = Run,
      .json = ToJson,
      .text = ToText,
  });
}

}  // namespace parasim
