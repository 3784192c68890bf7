// parasim compare: a PyTorch profiler (Kineto) trace of one step against the op-level replay of
// the same rank (tools/trace_compare.h), by kind of kernel; --out writes the measured
// efficiencies as a calibration profile.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "sim/io.h"
#include "tools/text.h"
#include "tools/trace_compare.h"
#include "tools/verbs/inputs.h"
#include "tools/verbs/verb.h"

namespace parasim {
namespace {

struct Options {
  Document scenario;
  std::vector<std::string> sets;
  std::string trace;  // Kineto Chrome trace of one step on one rank
  int stage = 0;      // the pipeline stage the traced rank runs
  std::string out;    // a calibration profile to write
};

// One row of compare's table: a kind's measured and predicted seconds.
struct KindRow {
  std::string what;
  double m, p;
};

struct Result {
  std::string trace;
  int stage = 0;
  std::string out;
  std::string scenario;  // its name
  KindTimes measured, predicted;
  std::vector<KindRow> rows;  // the step's span, each kind, idle
  std::vector<KindRow> gaps;  // the three kinds furthest from their measurement, furthest first
  double step_time_s = 0;
};

std::vector<KindRow> KindRows(const KindTimes& measured, const KindTimes& predicted) {
  std::vector<KindRow> rows = {{"step (GPU span)", measured.span_s, predicted.span_s}};
  for (int k = 0; k < kNumKernelKinds; ++k) {
    rows.push_back({std::string(KernelKindName(static_cast<KernelKind>(k))), measured.seconds[k],
                    predicted.seconds[k]});
  }
  rows.push_back({"idle", measured.idle_s, predicted.idle_s});
  return rows;
}

std::vector<KindRow> LargestGaps(const std::vector<KindRow>& rows) {
  std::vector<KindRow> gaps(rows.begin() + 1, rows.end());
  std::sort(gaps.begin(), gaps.end(), [](const KindRow& a, const KindRow& b) {
    return std::fabs(a.m - a.p) > std::fabs(b.m - b.p);
  });
  gaps.resize(std::min<size_t>(3, gaps.size()));
  return gaps;
}

StatusOr<Result> Run(const Options& o, const VerbContext&) {
  if (o.trace.empty()) {
    return InvalidArgument(
        "compare:1:1: error: give the profiler trace: parasim compare --trace step.json SCENARIO");
  }
  PARASIM_ASSIGN_OR_RETURN(Scenario s, LoadFixedScenario(o.scenario, o.sets));
  if (o.stage < 0 || o.stage >= s.layout.pp) {
    return InvalidArgument(fmt::format("--stage {}:1:1: error: expected a pipeline stage 0 to {}",
                                       o.stage, s.layout.pp - 1));
  }
  Result res{.trace = o.trace, .stage = o.stage, .out = o.out, .scenario = ScenarioName(s)};
  PARASIM_ASSIGN_OR_RETURN(res.measured, ReadKinetoTrace(o.trace));
  StepOptions so;
  so.granularity = Granularity::kOp;
  LoweredStep low;
  sim::Timeline tl;
  PARASIM_ASSIGN_OR_RETURN(StepReport r,
                           SimulateStep(s.model, s.training, s.layout, s.cluster, so, &low, &tl));
  res.step_time_s = r.step_time_s;
  res.predicted = PredictedKinds(s, low, tl, o.stage);
  res.rows = KindRows(res.measured, res.predicted);
  res.gaps = LargestGaps(res.rows);
  if (!o.out.empty()) {
    CalibrationProfile prof = ProfileFromTrace(s, res.measured, res.predicted, o.trace);
    PARASIM_RETURN_IF_ERROR(WriteFileAtomic(o.out, FormatCalibrationProfile(prof)));
  }
  return res;
}

Json DetailJson(const std::map<std::string, double>& m) {
  Json o = Json::Object();
  for (const auto& [k, v] : m) o.Set(k, v);
  return o;
}

Json ToJson(const Result& res) {
  Json j = Json::Object();
  j.Set("trace", res.trace).Set("stage", res.stage).Set("kernels", res.measured.kernels);
  Json kinds = Json::Array();
  for (const KindRow& row : res.rows) {
    Json o = Json::Object();
    o.Set("kind", row.what).Set("measured_s", row.m).Set("predicted_s", row.p);
    kinds.Push(o);
  }
  j.Set("kinds", kinds).Set("measured_communication", DetailJson(res.measured.comm_detail));
  j.Set("predicted_communication", DetailJson(res.predicted.comm_detail));
  j.Set("step_time_s", res.step_time_s);
  if (!res.out.empty()) j.Set("profile", res.out);
  return j;
}

// "AllReduce 250.000 us, SendRecv 80.000 us", or "none".
std::string DetailText(const std::map<std::string, double>& m) {
  std::string out;
  for (const auto& [k, v] : m)
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", k, Seconds(v));
  return out.empty() ? std::string("none") : out;
}

std::string ToText(const Result& res) {
  std::string out = fmt::format("{}: {} GPU kernels on one rank; replay of stage {} of {}\n\n",
                                res.trace, res.measured.kernels, res.stage, res.scenario);
  out += fmt::format("{:<18} {:>14} {:>14} {:>10}\n", "kind", "measured", "predicted", "error");
  for (const KindRow& row : res.rows) {
    out += fmt::format("{:<18} {:>14} {:>14} {:>10}\n", row.what, Seconds(row.m), Seconds(row.p),
                       row.m > 0 ? fmt::format("{:+.1f}%", 100 * (row.p - row.m) / row.m) : "-");
  }
  out += fmt::format("\ncommunication measured by collective: {}\n",
                     DetailText(res.measured.comm_detail));
  out +=
      fmt::format("communication predicted by group: {}\n", DetailText(res.predicted.comm_detail));
  out += "\nlargest gaps (predicted - measured):\n";
  for (const KindRow& g : res.gaps) {
    out += fmt::format("  {:<16} {}{}\n", g.what, g.p >= g.m ? "+" : "-",
                       Seconds(std::fabs(g.p - g.m)));
  }
  if (!res.out.empty()) {
    out +=
        fmt::format("\nwrote {} (measured efficiencies; use it as cluster.calibration)\n", res.out);
  }
  return out;
}

}  // namespace

Verb CompareVerb() {
  using O = Options;
  return MakeVerb<O, Result>({
      .name = "compare",
      .help = "a PyTorch profiler trace of one step against the replay of the same rank",
      .flags = {Arg(&O::scenario, "file", "scenario YAML file of the profiled job")
                    .Python("scenario")
                    .Required(),
                SetFlag(&O::sets), JsonFlag<O>(),
                Opt(&O::trace, "--trace",
                    "Kineto Chrome trace of one step on one rank (.json or .json.gz)")
                    .Required()
                    .Input(),
                Opt(&O::stage, "--stage", "pipeline stage the traced rank runs (default 0)"),
                Opt(&O::out, "--out", "write the measured efficiencies as a calibration profile")},
      .run = Run,
      .json = ToJson,
      .text = ToText,
  });
}

}  // namespace parasim
