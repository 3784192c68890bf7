// parasim report: a self-contained HTML report (tools/report.h) of a scenario (timeline, memory,
// where the time goes, its sweep, what-if against B), or of a finished sweep's or scale's JSON.
#include "tools/report.h"

#include <fmt/core.h>

#include <optional>

#include "scenarios/serving_scenario.h"
#include "sim/io.h"
#include "strategies/goodput.h"
#include "strategies/memory.h"
#include "strategies/robustness.h"
#include "strategies/sweep.h"
#include "tools/diff.h"
#include "tools/report_serving.h"
#include "tools/results_json.h"
#include "tools/verbs/inputs.h"
#include "tools/verbs/serve.h"
#include "tools/verbs/verb.h"

namespace parasim {
namespace {

struct Options {
  Document scenario;
  std::vector<std::string> sets;
  std::string from;  // a finished `sweep --json` or `scale --json` output
  std::string out;   // "" = report.html
  int jobs = 0;
  bool robust = false;
  Document vs;  // scenario B of a what-if section
  std::vector<std::string> sets_a, sets_b;
};

struct Result {
  std::string out;                    // the HTML file written
  std::optional<double> step_time_s;  // the scenario's step (not with --from)
  std::string note;                   // for stderr: rows of --from left out of the report
};

// report --from: the pictures of a finished run's JSON.
StatusOr<Result> FromJson(const Options& o) {
  // Bounded: a regular file, parsed with RapidJSON, its rows cut to what a report draws.
  PARASIM_ASSIGN_OR_RETURN(ResultsJson in, ReadResultsJson(o.from));
  PARASIM_ASSIGN_OR_RETURN(std::string html, ReportFromJson(in.text, o.from));
  Result res{.out = o.out.empty() ? "report.html" : o.out};
  if (in.kept < in.rows) {
    res.note =
        fmt::format("{}: the report draws the first {} of its {} rows\n", o.from, in.kept, in.rows);
  }
  PARASIM_RETURN_IF_ERROR(WriteFileAtomic(res.out, html));
  return res;
}

// What the report draws besides the step itself, each optional.
struct Extras {
  std::optional<SweepOutcome> sweep;
  std::optional<Robustness> robust;
  std::optional<StepDiff> diff;
  std::optional<GoodputReport> goodput;
};

// A serving scenario's report: serve's figures, latency against throughput, KV over time, and
// with a sweep block its ranked layouts.
StatusOr<Result> ServingReport(const Options& o) {
  PARASIM_ASSIGN_OR_RETURN(ServeOutcome served, ServeDocument(o.scenario, o.sets, {}));
  std::optional<ServingSweepOutcome> sweep;
  if (served.s.serving.sweep) {
    PARASIM_ASSIGN_OR_RETURN(sweep, RunServingSweep(served.s, o.jobs));
  }
  PARASIM_ASSIGN_OR_RETURN(std::vector<LatencyPoint> curve, LatencyCurve(served.s, 8));
  Result res{.out = o.out.empty() ? "report.html" : o.out};
  PARASIM_RETURN_IF_ERROR(WriteFileAtomic(
      res.out, ServingReportHtml(served.s, served.report, curve, sweep ? &*sweep : nullptr)));
  return res;
}

// The flags a report of `what` does not apply, each given one refused (they were dropped
// without a word: a serving report with --set-a drew the unchanged layout).
Status RefuseUnused(const Options& o, bool sets, const std::string& what) {
  const std::pair<bool, const char*> flags[] = {{sets && !o.sets.empty(), "--set"},
                                                {!o.sets_a.empty(), "--set-a"},
                                                {!o.sets_b.empty(), "--set-b"},
                                                {!o.vs.empty(), "--vs"},
                                                {o.robust, "--robust"}};
  for (const auto& [given, flag] : flags) {
    if (given) {
      return InvalidArgument(fmt::format(
          "{}:1:1: error: {} does not apply to {}; it applies to a training scenario's report",
          flag, flag, what));
    }
  }
  return Status::Ok();
}

StatusOr<Result> Run(const Options& o, const VerbContext& ctx) {
  if (!o.from.empty()) {
    PARASIM_RETURN_IF_ERROR(RefuseUnused(
        o, true, "a report drawn from a results file (--from draws the file as it is)"));
    if (!o.scenario.empty()) {
      // (it would be dropped: --from draws the results file alone)
      return InvalidArgument(fmt::format(
          "{}:1:1: error: report takes a scenario file or --from RESULTS.json, not both",
          o.scenario.file));
    }
    return FromJson(o);
  }
  if (o.scenario.empty()) {
    return InvalidArgument("report:1:1: error: give a scenario file, or --from RESULTS.json");
  }
  if (IsServingScenario(o.scenario.Input())) {
    PARASIM_RETURN_IF_ERROR(RefuseUnused(
        o, false, "a serving scenario (its what-ifs: parasim serve --sweep, or --set)"));
    return ServingReport(o);
  }
  // With --vs (or --set-a/--set-b) the report's scenario is diff's side A.
  const bool compare = !o.vs.empty() || !o.sets_a.empty() || !o.sets_b.empty();
  ScenarioPair pair;
  if (compare) {
    PARASIM_ASSIGN_OR_RETURN(pair, LoadPair({o.scenario, o.vs, o.sets, o.sets_a, o.sets_b}));
  } else {
    PARASIM_ASSIGN_OR_RETURN(pair.a, LoadFixedScenario(o.scenario, o.sets));
  }
  const Scenario& s = pair.a;
  Extras x;
  if (s.sweep) {
    const SweepOptions so = SweepOptionsOf(o.jobs, ctx.processes);
    PARASIM_ASSIGN_OR_RETURN(x.sweep, RunSweep(s, so));
    if (o.robust) {
      PARASIM_ASSIGN_OR_RETURN(x.robust,
                               SweepRobustness(s, *x.sweep, RobustnessOptions::Jobs(so.jobs)));
    }
  }
  StepOptions so;
  so.record_memory = true;
  LoweredStep low;
  sim::Timeline tl;
  PARASIM_ASSIGN_OR_RETURN(StepReport r,
                           SimulateStep(s.model, s.training, s.layout, s.cluster, so, &low, &tl));
  // run's advice, among the summary's warnings.
  for (std::string& advice : StepAdvice(s.model, s.training, s.layout, s.cluster, r)) {
    r.warnings.push_back(std::move(advice));
  }
  if (compare) {
    const Scenario& b = pair.b;
    PARASIM_ASSIGN_OR_RETURN(StepReport rb,
                             SimulateStep(b.model, b.training, b.layout, b.cluster, {}));
    x.diff = DiffSteps(s, r, b, rb);
  }
  // The breakdown adds up to the replay's peak per stage, as `memory`'s does.
  MemoryReport mem = EstimateMemory(s.model, s.training, s.layout, s.cluster);
  AdoptReplayPeaks(r.peak_memory_bytes, &mem);
  if (GoodputModelled(s)) {
    PARASIM_ASSIGN_OR_RETURN(x.goodput, ModelGoodput(s, r.step_time_s, low));
  }
  auto opt = [](const auto& v) { return v ? &*v : nullptr; };
  const ReportInput in{&s,           &r,          &low,           &tl,          &mem,
                       opt(x.sweep), opt(x.diff), opt(x.goodput), opt(x.robust)};
  Result res{.out = o.out.empty() ? "report.html" : o.out, .step_time_s = r.step_time_s};
  PARASIM_RETURN_IF_ERROR(WriteFileAtomic(res.out, ReportHtml(in)));
  return res;
}

Json ToJson(const Result& res) {
  Json j = Json::Object();
  j.Set("out", res.out);
  if (res.step_time_s) j.Set("step_time_s", *res.step_time_s);
  return j;
}

std::string ToText(const Result& res) {
  if (!res.step_time_s) return fmt::format("wrote {}\n", res.out);
  return fmt::format("wrote {} (open it in a browser; self-contained, no network)\n", res.out);
}

std::string Notes(const Result& res) { return res.note; }

}  // namespace

Verb ReportVerb() {
  using O = Options;
  return MakeVerb<O, Result>({
      .name = "report",
      .help = "a self-contained HTML report: timeline, memory, where the time goes, sweep",
      .flags = {Arg(&O::scenario, "file", "scenario YAML file").Python("scenario"),
                SetFlag(&O::sets), JsonFlag<O>("machine-readable output on stdout"),
                Opt(&O::from, "--from", "a finished `sweep --json` or `scale --json` output")
                    .Python("from_")
                    .Input(),
                Opt(&O::out, "--out", "HTML file to write (default report.html)").Output(),
                JobsFlag(&O::jobs, "worker threads for the scenario's sweep, if any"),
                Opt(&O::robust, "--robust",
                    "with a sweep: add how far its answer holds (sweep --robust's swings)"),
                Opt(&O::vs, "--vs", "add a what-if section comparing with scenario B"),
                Opt(&O::sets_a, "--set-a", "with --vs: override a key of this scenario only"),
                Opt(&O::sets_b, "--set-b", "with --vs: override a key of B only")},
      .run = Run,
      .json = ToJson,
      .text = ToText,
      .notes = Notes,
  });
}

}  // namespace parasim
