// parasim compare: PyTorch profiler (Kineto) traces against the op-level replay of the same
// ranks (tools/trace_compare.h), by kind of kernel and by family, with the overlap of
// communication and compute on the streams; --kernels lists every kernel name with its kind;
// --out writes the measured efficiencies as a calibration profile, unless one would be clamped.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "hardware/readers/kernel_classes.h"
#include "hardware/readers/trace_summary.h"
#include "scenarios/scenario.h"
#include "sim/io.h"
#include "tools/text.h"
#include "tools/trace_compare.h"
#include "tools/trace_inputs.h"
#include "tools/verbs/inputs.h"
#include "tools/verbs/verb.h"

namespace parasim {
namespace {

struct Options {
  Document scenario;
  std::vector<std::string> sets;
  std::string trace;  // a Kineto trace, or a folder of per-rank traces
  int stage = -1;     // the traced rank's pipeline stage; -1: from its rank, else 0
  std::string step;   // "", "N" or "all"
  std::string kernel_classes;
  bool kernels = false;  // list the kernels instead of comparing
  bool layers = false;   // replay side: the transformer layers only
  bool force = false;
  std::string out;  // a calibration profile to write
};

// One row of compare's table: a kind's (or the span's, idle's, overlap's) measured and predicted
// seconds.
struct KindRow {
  std::string what;
  double m, p;
};

// The comparison of one pipeline stage: its traces' mean against its replayed rank.
struct StageResult {
  int stage = 0;
  std::vector<int64_t> ranks;
  size_t traces = 0;
  KindTimes measured, predicted;
  std::vector<KindRow> rows;
  std::vector<KindRow> gaps;  // the three kinds furthest from their measurement, furthest first
};

struct Result {
  std::string trace;
  std::vector<std::string> files;
  std::string scenario;  // its name; "" with --kernels alone
  std::string steps_said;
  std::string gpu;  // the (first) trace's GPU, described
  bool layers = false;
  std::vector<StageResult> stages;
  double step_time_s = 0;
  std::string out;
  // --kernels: every kernel name over the chosen steps (all ranks), and the steps x ranks.
  bool listing = false;
  std::vector<KernelListing> kernels;
  int listing_steps = 1;
  std::vector<std::string> warnings;
};

std::vector<KindRow> KindRows(const KindTimes& m, const KindTimes& p) {
  std::vector<KindRow> rows = {{"step (GPU span)", m.span_s, p.span_s}};
  for (int k = 0; k < kNumKernelKinds; ++k) {
    rows.push_back(
        {std::string(KernelKindName(static_cast<KernelKind>(k))), m.seconds[k], p.seconds[k]});
  }
  rows.push_back({"idle", m.idle_s, p.idle_s});
  rows.push_back(
      {"comm overlapped", m.overlap.overlapped_ns * 1e-9, p.overlap.overlapped_ns * 1e-9});
  rows.push_back({"comm exposed", m.overlap.exposed_ns * 1e-9, p.overlap.exposed_ns * 1e-9});
  return rows;
}

std::vector<KindRow> LargestGaps(const std::vector<KindRow>& rows) {
  std::vector<KindRow> gaps(rows.begin() + 1, rows.begin() + 1 + kNumKernelKinds + 1);
  std::sort(gaps.begin(), gaps.end(), [](const KindRow& a, const KindRow& b) {
    return std::fabs(a.m - a.p) > std::fabs(b.m - b.p);
  });
  gaps.resize(std::min<size_t>(3, gaps.size()));
  return gaps;
}

// Every kernel name over the traces (ranks summed), most time first.
std::vector<KernelListing> MergedListing(const TraceInputs& in, int* steps) {
  std::map<std::string, KernelListing> by_name;
  *steps = 0;
  for (const ComparedTrace& t : in.traces) {
    *steps += std::max<int>(1, static_cast<int>(t.summary.steps_chosen.size()));
    for (const KernelListing& k : t.summary.kernels) {
      auto [it, fresh] = by_name.emplace(k.name, k);
      if (!fresh) {
        it->second.count += k.count;
        it->second.time_ns += k.time_ns;
      }
    }
  }
  std::vector<KernelListing> rows;
  for (auto& [name, k] : by_name) rows.push_back(std::move(k));
  std::sort(rows.begin(), rows.end(), [](const KernelListing& a, const KernelListing& b) {
    return a.time_ns != b.time_ns ? a.time_ns > b.time_ns : a.name < b.name;
  });
  return rows;
}

// The stages the traces ran, each its traces' mean against its replayed rank.
std::vector<StageResult> Stages(const Scenario& s, const TraceInputs& in, const LoweredStep& low,
                                const sim::Timeline& tl, bool layers) {
  std::map<int, StageResult> by_stage;
  for (const ComparedTrace& t : in.traces) {
    StageResult& st = by_stage[t.stage];
    st.stage = t.stage;
    if (t.rank >= 0) st.ranks.push_back(t.rank);
    ++st.traces;
    st.measured.Add(MeasuredKinds(t.summary));
  }
  std::vector<StageResult> out;
  for (auto& [stage, st] : by_stage) {
    if (st.traces > 1) st.measured.Scale(1.0 / static_cast<double>(st.traces));
    st.predicted = PredictedKinds(s, low, tl, stage, layers);
    st.rows = KindRows(st.measured, st.predicted);
    st.gaps = LargestGaps(st.rows);
    out.push_back(std::move(st));
  }
  return out;
}

// The profile from every trace against its stage's replay; refused (with the reasons) when an
// efficiency would be clamped, unless forced.
Status WriteProfile(const Scenario& s, const Options& o, Result* res) {
  KindTimes m, p;
  for (const StageResult& st : res->stages) {
    KindTimes mm = st.measured, pp = st.predicted;
    mm.Scale(static_cast<double>(st.traces));
    pp.Scale(static_cast<double>(st.traces));
    m.Add(mm);
    p.Add(pp);
  }
  TraceProfile prof = ProfileFromTrace(s, m, p, o.trace);
  for (const std::string& n : prof.notes) res->warnings.push_back("profile: " + n);
  if (!prof.refused.empty()) {
    if (!o.force) {
      std::string why;
      for (const std::string& r : prof.refused) why += "\n  " + r;
      return InvalidArgument(fmt::format(
          "{}:1:1: error: not writing the profile: {} would sit on {} bound (0.01 or 1):{}\npass "
          "--force to write it with the values clamped to [0.01, 1]",
          o.out, prof.refused.size() == 1 ? "an efficiency" : "efficiencies",
          prof.refused.size() == 1 ? "its" : "their", why));
    }
    for (const std::string& r : prof.refused) {
      res->warnings.push_back("profile (--force, clamped): " + r);
    }
  }
  return WriteFileAtomic(o.out, FormatCalibrationProfile(prof.profile));
}

StatusOr<Result> Run(const Options& o, const VerbContext&) {
  if (o.trace.empty()) {
    return InvalidArgument(
        "compare:1:1: error: give the profiler trace: parasim compare --trace step.json SCENARIO");
  }
  if (o.stage < -1) {  // -1 is the default: the trace's rank's stage
    return InvalidArgument(fmt::format(
        "--stage={}:1:9: error: expected a pipeline stage, 0 or more (or leave --stage out: the "
        "stage of the trace's rank, from distributedInfo)",
        o.stage));
  }
  PARASIM_ASSIGN_OR_RETURN(KernelClassTable table, LoadKernelClasses(o.kernel_classes));
  PARASIM_ASSIGN_OR_RETURN(StepChoice choice, StepChoice::Parse(o.step));
  PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
  PARASIM_ASSIGN_OR_RETURN(TraceInputs in, ReadTraceInputs(o.trace, table, choice, cat.hardware));
  Result res{.trace = o.trace, .layers = o.layers, .out = o.out};
  for (const ComparedTrace& t : in.traces) res.files.push_back(t.file);
  res.steps_said = in.traces.front().summary.steps_said;
  res.gpu = in.traces.front().gpu.Describe();
  for (const ComparedTrace& t : in.traces) {
    for (const std::string& n : t.summary.notes) res.warnings.push_back(t.file + ": " + n);
  }
  if (o.kernels) {
    res.listing = true;
    res.kernels = MergedListing(in, &res.listing_steps);
    return res;
  }
  if (o.scenario.empty()) {
    return InvalidArgument(
        "compare:1:1: error: give the scenario of the traced job: parasim compare --trace "
        "step.json SCENARIO (or --kernels to list the trace's kernels alone)");
  }
  PARASIM_ASSIGN_OR_RETURN(Scenario s, LoadFixedScenario(o.scenario, o.sets));
  PARASIM_RETURN_IF_ERROR(PlaceTraces(s, o.stage, o.force, &in));
  res.warnings.insert(res.warnings.end(), in.warnings.begin(), in.warnings.end());
  res.scenario = ScenarioName(s);
  StepOptions so;
  so.granularity = Granularity::kOp;
  LoweredStep low;
  sim::Timeline tl;
  PARASIM_ASSIGN_OR_RETURN(StepReport r,
                           SimulateStep(s.model, s.training, s.layout, s.cluster, so, &low, &tl));
  res.step_time_s = r.step_time_s;
  res.stages = Stages(s, in, low, tl, o.layers);
  for (const StageResult& st : res.stages) {
    for (const std::string& w : MissingKinds(st.measured, st.predicted)) {
      res.warnings.push_back(fmt::format("stage {}: {}", st.stage, w));
    }
  }
  if (!o.out.empty()) PARASIM_RETURN_IF_ERROR(WriteProfile(s, o, &res));
  return res;
}

Json MapJson(const std::map<std::string, double>& m) {
  Json o = Json::Object();
  for (const auto& [name, v] : m) o.Set(name, v);
  return o;
}

Json FamiliesJson(const KindTimes& k) {
  Json o = Json::Object();
  for (int i = 0; i < kNumKernelKinds; ++i) {
    o.Set(std::string(KernelKindName(static_cast<KernelKind>(i))), MapJson(k.families[i]));
  }
  return o;
}

Json OverlapJson(const OverlapFacts& f) {
  Json o = Json::Object();
  o.Set("comm_s", f.comm_ns * 1e-9).Set("compute_s", f.compute_ns * 1e-9);
  o.Set("overlapped_s", f.overlapped_ns * 1e-9).Set("exposed_s", f.exposed_ns * 1e-9);
  o.Set("hidden_fraction", f.hidden_fraction());
  return o;
}

// One stage's figures, set on `j`.
void SetStageFields(const StageResult& st, Json& j) {
  Json ranks = Json::Array();
  for (int64_t r : st.ranks) ranks.Push(r);
  j.Set("stage", st.stage).Set("ranks", ranks).Set("kernels", st.measured.kernels());
  Json kinds = Json::Array();
  for (const KindRow& row : st.rows) {
    Json o = Json::Object();
    o.Set("kind", row.what).Set("measured_s", row.m).Set("predicted_s", row.p);
    kinds.Push(o);
  }
  constexpr int kComm = static_cast<int>(KernelKind::kCommunication);
  j.Set("kinds", kinds);
  j.Set("measured_communication", MapJson(st.measured.families[kComm]));
  j.Set("predicted_communication", MapJson(st.predicted.families[kComm]));
  j.Set("measured_families", FamiliesJson(st.measured));
  j.Set("predicted_families", FamiliesJson(st.predicted));
  j.Set("measured_overlap", OverlapJson(st.measured.overlap));
  j.Set("predicted_overlap", OverlapJson(st.predicted.overlap));
}

Json ListingJson(const Result& res) {
  Json rows = Json::Array();
  for (const KernelListing& k : res.kernels) {
    Json o = Json::Object();
    o.Set("name", k.name).Set("kind", std::string(KernelClassName(k.kind)));
    o.Set("compared_as", std::string(KernelKindName(KindOf(k.kind)))).Set("family", k.family);
    o.Set("count", k.count).Set("time_s", k.time_ns * 1e-9);
    rows.Push(o);
  }
  return rows;
}

Json ToJson(const Result& res) {
  Json j = Json::Object();
  Json files = Json::Array(), warnings = Json::Array();
  for (const std::string& f : res.files) files.Push(f);
  for (const std::string& w : res.warnings) warnings.Push(w);
  j.Set("trace", res.trace).Set("traces", files).Set("warnings", warnings);
  j.Set("steps", res.steps_said).Set("gpu", res.gpu);
  if (res.listing) {
    j.Set("kernel_steps", res.listing_steps).Set("kernels", ListingJson(res));
    return j;
  }
  // The first stage's figures at the top, as one trace's comparison; every stage in `stages`.
  SetStageFields(res.stages.front(), j);
  Json stages = Json::Array();
  for (const StageResult& st : res.stages) {
    Json o = Json::Object();
    SetStageFields(st, o);
    stages.Push(o);
  }
  j.Set("stages", stages).Set("layers_only", res.layers).Set("step_time_s", res.step_time_s);
  if (!res.out.empty()) j.Set("profile", res.out);
  return j;
}

// "AllReduce 250.000 us, SendRecv 80.000 us", or "none".
std::string DetailText(const std::map<std::string, double>& m) {
  std::vector<std::pair<std::string, double>> v(m.begin(), m.end());
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [k, s] : v)
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", k, Seconds(s));
  return out.empty() ? std::string("none") : out;
}

std::string OverlapText(const char* side, const OverlapFacts& f) {
  return fmt::format("{}: {} of {} communication beside compute ({:.1f}% hidden), {} exposed", side,
                     Seconds(f.overlapped_ns * 1e-9), Seconds(f.comm_ns * 1e-9),
                     100 * f.hidden_fraction(), Seconds(f.exposed_ns * 1e-9));
}

std::string StageText(const StageResult& st, bool one) {
  std::string out;
  if (!one) {
    out += fmt::format("\nstage {} (rank{} {}{}):\n", st.stage, st.ranks.size() == 1 ? "" : "s",
                       fmt::join(st.ranks, ", "),
                       st.traces > 1 ? fmt::format("; the mean of {} traces", st.traces) : "");
  }
  out += fmt::format("{:<18} {:>14} {:>14} {:>10}\n", "kind", "measured", "predicted", "error");
  for (const KindRow& row : st.rows) {
    out += fmt::format("{:<18} {:>14} {:>14} {:>10}\n", row.what, Seconds(row.m), Seconds(row.p),
                       row.m > 0 ? fmt::format("{:+.1f}%", 100 * (row.p - row.m) / row.m) : "-");
  }
  out += "\n";
  for (int i = 0; i < kNumKernelKinds; ++i) {
    const std::string kind(KernelKindName(static_cast<KernelKind>(i)));
    const bool comm = i == static_cast<int>(KernelKind::kCommunication);
    out += fmt::format("{} measured by {}: {}\n", kind, comm ? "collective" : "family",
                       DetailText(st.measured.families[i]));
    out += fmt::format("{} predicted by {}: {}\n", kind, comm ? "group" : "op group",
                       DetailText(st.predicted.families[i]));
  }
  out += OverlapText("overlap measured", st.measured.overlap) + "\n";
  out += OverlapText("overlap predicted", st.predicted.overlap) + "\n";
  out += "\nlargest gaps (predicted - measured):\n";
  for (const KindRow& g : st.gaps) {
    out += fmt::format("  {:<16} {}{}\n", g.what, g.p >= g.m ? "+" : "-",
                       Seconds(std::fabs(g.p - g.m)));
  }
  return out;
}

std::string ListingText(const Result& res) {
  std::string out = fmt::format(
      "{}: {} kernel names; steps: {}{}\n\n", res.trace, res.kernels.size(), res.steps_said,
      res.files.size() > 1 ? fmt::format(" ({} ranks summed)", res.files.size()) : "");
  out += FormatKernelListing(res.kernels, res.listing_steps);
  for (const std::string& w : res.warnings) out += "note: " + w + "\n";
  return out;
}

std::string ToText(const Result& res) {
  if (res.listing) return ListingText(res);
  const StageResult& first = res.stages.front();
  const bool one = res.stages.size() == 1 && first.traces == 1;
  double kernels = 0;  // per step, over every trace
  for (const StageResult& st : res.stages) {
    kernels += st.measured.kernels() * static_cast<double>(st.traces);
  }
  const std::string layers = res.layers ? "the layers of " : "";
  std::string out =
      one ? fmt::format("{}: {:g} GPU kernels on one rank; replay of {}stage {} of {}\n", res.trace,
                        std::round(kernels * 10) / 10, layers, first.stage, res.scenario)
          : fmt::format(
                "{}: {:g} GPU kernels on {} ranks; each against the replay of {}its "
                "stage of {}\n",
                res.trace, std::round(kernels * 10) / 10, res.files.size(), layers, res.scenario);
  out += fmt::format("steps: {}\nGPU: {}\n{}", res.steps_said, res.gpu, one ? "\n" : "");
  for (const StageResult& st : res.stages) out += StageText(st, one);
  if (!res.warnings.empty()) out += "\n";
  for (const std::string& w : res.warnings) out += "note: " + w + "\n";
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
      .help = "PyTorch profiler traces against the replay of the same ranks, kind by kind",
      .flags = {Arg(&O::scenario, "file",
                    "scenario YAML file of the profiled job (not needed with --kernels)")
                    .Python("scenario"),
                SetFlag(&O::sets), JsonFlag<O>(),
                Opt(&O::trace, "--trace",
                    "Kineto trace (.json or .json.gz), or a folder of one trace per rank")
                    .Required()
                    .Input(),
                Opt(&O::stage, "--stage",
                    "pipeline stage of a single traced rank, 0 or more (default -1: its rank's "
                    "stage in the layout, else 0)"),
                Opt(&O::step, "--step",
                    "ProfilerStep#N to compare, or all (default: the average of the steps after "
                    "the first when there are three or more)"),
                Opt(&O::kernel_classes, "--kernel-classes",
                    "a kernel table (hardware/readers/kernel_classes.yaml format) tried before the "
                    "built-in one, or replacing it with replace: true"),
                Opt(&O::kernels, "--kernels",
                    "list every kernel name with its kind, family, count and time instead"),
                Opt(&O::layers, "--layers",
                    "replay side: the transformer layers only (for traces of a chunk of layers)"),
                Opt(&O::force, "--force",
                    "compare a trace of another GPU, and write a profile whose efficiencies "
                    "would be clamped"),
                Opt(&O::out, "--out", "write the measured efficiencies as a calibration profile")
                    .Output()},
      .run = Run,
      .json = ToJson,
      .text = ToText,
  });
}

}  // namespace parasim
