// parasim scale: the best layout at each GPU count, speedup, efficiency, the Amdahl fit, and
// advice (whether to distribute at all, the fewest GPUs that hold the model).
#include "strategies/scale.h"

#include <fmt/core.h>

#include <cmath>

#include "sim/parse_units.h"
#include "strategies/answer_run.h"
#include "strategies/layout_format.h"
#include "tools/text.h"
#include "tools/verbs/inputs.h"
#include "tools/verbs/step_json.h"
#include "tools/verbs/verb.h"

namespace parasim {
namespace {

struct Options {
  Document scenario;
  std::vector<std::string> sets;
  std::string gpus;  // "8,16,...,4096"; "" = one node up to the scenario's cluster
  bool weak = false;
  int jobs = 0;
};

struct Result {
  Scenario s;
  ScaleOutcome r;
  Advice advice;
};

StatusOr<Result> Run(const Options& o, const VerbContext& ctx) {
  PARASIM_ASSIGN_OR_RETURN(std::vector<int64_t> gpus, ParseGpuList(o.gpus));
  Result res;
  PARASIM_ASSIGN_OR_RETURN(res.s, LoadScenarioOf(o.scenario, o.sets));
  const Scenario& s = res.s;
  if (gpus.empty()) gpus = DefaultGpuCounts(s.cluster);
  PARASIM_ASSIGN_OR_RETURN(res.r, RunScale(s, gpus, o.weak, SweepOptionsOf(o.jobs, ctx.processes)));
  res.advice = Advise(s, BestDaysAtClusterSize(s, res.r));
  return res;
}

Json PointJson(const Scenario& s, const ScalePoint& pt) {
  Json o = Json::Object();
  o.Set("gpus", pt.gpus).Set("found", pt.found);
  if (!pt.found) return o.Set("reason", pt.reason);
  o.Set("step_time_s", pt.report.step_time_s).Set("tokens_per_s", pt.report.tokens_per_s);
  o.Set("speedup", pt.speedup).Set("efficiency", pt.efficiency);
  o.Set("karp_flatt", std::isnan(pt.karp_flatt) ? Json() : Json(pt.karp_flatt));
  o.Set("mfu", pt.report.mfu);
  o.Set("goodput", pt.goodput).Set("goodput_efficiency", pt.goodput_efficiency);
  return o.Set("layout", LayoutJson(WithLayout(s, pt.best)));
}

Json ToJson(const Result& res) {
  const Advice& adv = res.advice;
  Json pts = Json::Array();
  for (const auto& pt : res.r.points) pts.Push(PointJson(res.s, pt));
  Json a = Json::Object();
  a.Set("fits_one_gpu", adv.fits_one_gpu).Set("one_gpu_peak_bytes", adv.one_gpu_peak_bytes);
  if (adv.one_gpu_days > 0) a.Set("one_gpu_days", adv.one_gpu_days);
  a.Set("verdict", adv.verdict);
  Json mins = Json::Object(), layouts = Json::Object(), none = Json::Object();
  for (const auto& m : adv.minimums) {
    mins.Set(m.strategy, m.gpus);
    if (m.gpus > 0) layouts.Set(m.strategy, m.layout);
    if (m.gpus == 0) none.Set(m.strategy, m.why_none);
  }
  a.Set("minimum_gpus", mins).Set("minimum_layouts", layouts).Set("why_none", none);
  Json j = Json::Object();
  j.Set("scenario", res.s.name).Set("weak", res.r.weak).Set("points", pts);
  // null, with the reason, when the fit is skipped (weak scaling, fewer than two points).
  j.Set("parallel_fraction", res.r.amdahl_skipped.empty() ? Json(res.r.parallel_fraction) : Json());
  if (!res.r.amdahl_skipped.empty()) j.Set("amdahl_skipped", res.r.amdahl_skipped);
  if (!res.r.amdahl_note.empty()) j.Set("amdahl_note", res.r.amdahl_note);
  Json notes = Json::Array();
  for (const std::string& n : res.r.notes) notes.Push(n);
  j.Set("notes", notes);
  j.Set("advice", a);
  return j;
}

std::string PointsText(const ScaleOutcome& r) {
  std::string out = fmt::format(
      "{:>6}  {:<40} {:>10} {:>9} {:>8} {:>10} {:>10} {:>6} {:>8} {:>10}\n", "GPUs", "best layout",
      "step", "tokens/s", "speedup", "efficiency", "Karp-Flatt", "MFU", "goodput", "with it");
  for (const auto& pt : r.points) {
    if (!pt.found) {
      out += fmt::format("{:>6}  {}\n", pt.gpus, pt.reason);
      continue;
    }
    out += fmt::format(
        "{:>6}  {:<40} {:>10} {:>9} {:>7.2f}x {:>9.1f}% {:>10} {:>5.1f}% {:>7.1f}% {:>9.1f}%\n",
        pt.gpus, FormatLayout(pt.best.layout, pt.best.training, LayoutStyle::kShort),
        Seconds(pt.report.step_time_s), Human(pt.report.tokens_per_s), pt.speedup,
        100 * pt.efficiency,
        std::isnan(pt.karp_flatt) ? std::string("-") : fmt::format("{:.4f}", pt.karp_flatt),
        100 * pt.report.mfu, 100 * pt.goodput, 100 * pt.goodput_efficiency);
  }
  return out;
}

std::string ToText(const Result& res) {
  const Scenario& s = res.s;
  const ScaleOutcome& r = res.r;
  std::string out = fmt::format(
      "{}: {} scaling ({}), best layout at each size\n\n", ScenarioName(s),
      r.weak ? "weak" : "strong",
      r.weak ? fmt::format("{:.2f} sequences per GPU",
                           static_cast<double>(s.training.global_batch) / s.cluster.gpus())
             : fmt::format("global batch {}", s.training.global_batch));
  out += PointsText(r);
  const double p = r.parallel_fraction;
  if (!r.amdahl_skipped.empty()) {
    out += fmt::format("\nAmdahl fit: none, {}", r.amdahl_skipped);
  } else {
    out += fmt::format("\nAmdahl fit (least squares over the points): parallel fraction p = {:.4f}",
                       p);
    if (p < 1) out += fmt::format(", so at most {:.0f}x over the first point", 1 / (1 - p));
    if (!r.amdahl_note.empty()) out += fmt::format(" ({})", r.amdahl_note);
  }
  for (const std::string& n : r.notes) out += fmt::format("\nNote: {}.", n);
  out += r.weak ? "\nKarp-Flatt: none under weak scaling (it is Amdahl's law's, about a fixed "
                  "problem)."
                : "\nKarp-Flatt: a serial fraction that grows with the GPU count means overhead "
                  "(communication, bubbles) grows too, not just a fixed serial part.";
  out +=
      "\nGoodput: the "
      "throughput kept through failures, checkpoint stalls and restarts at that size (closed "
      "form, `reliability` block or its defaults); \"with it\" is the efficiency after it.\n";
  out += fmt::format("\nAdvice\n  {}\n  Fewest GPUs that hold the model ({} per GPU, {}):\n",
                     res.advice.verdict, FormatBytes(s.cluster.gpu.memory), s.cluster.gpu.id);
  for (const auto& m : res.advice.minimums) {
    out += fmt::format("    {:<18} {}\n", m.strategy,
                       m.gpus > 0 ? fmt::format("{:>6} GPUs  ({})", m.gpus, m.layout)
                                  : fmt::format("  none: {}", m.why_none));
  }
  return out;
}

}  // namespace

Verb ScaleVerb() {
  using O = Options;
  return MakeVerb<O, Result>({
      .name = "scale",
      .help = "best layout at each GPU count: speedup, efficiency, Amdahl fit, and advice",
      .flags = {Arg(&O::scenario, "file", "scenario YAML file").Python("scenario").Required(),
                SetFlag(&O::sets), JsonFlag<O>(),
                Opt(&O::gpus, "--gpus",
                    "GPU counts, e.g. 8,16,64 or 8,16,...,4096 (doubling); default: one node "
                    "up to the scenario's cluster"),
                Opt(&O::weak, "--weak", "keep the batch per GPU instead of the global batch"),
                JobsFlag(&O::jobs)},
      .run = Run,
      .json = ToJson,
      .text = ToText,
  });
}

}  // namespace parasim
