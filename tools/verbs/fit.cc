// parasim fit: the cost model fitted to measurements (parasim calibrate output or nccl-tests
// logs) or, with --runs, to measured step times; writes a calibration profile.
#include "hardware/fit.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

#include "hardware/measurements.h"
#include "scenarios/fit_runs.h"
#include "scenarios/scenario.h"
#include "sim/io.h"
#include "tools/text.h"
#include "tools/verbs/inputs.h"
#include "tools/verbs/verb.h"

namespace parasim {
namespace {

struct Options {
  std::vector<std::string> measurements;  // measurement files and nccl-tests logs
  std::vector<std::string> runs;          // validation-format files of measured step times
  std::vector<std::string> params;        // --runs: the parameters to fit (default all)
  int jobs = 0;
  std::string gpu, op, intra, inter;
  std::string out;
  std::vector<std::string> sets;    // --runs: keys stated in every case
  bool force = false;               // write a profile from a fit that does not hold
  std::string subset;               // --runs: only this subset's cases (CaseFilter), on --gpu
  int64_t nodes = 0;                // --runs: only the cases on this many nodes
  int64_t ranks = 0, per_node = 0;  // nccl-tests logs without device lines: their shape
};

// What was fitted: measurement files' families, or (--runs) step times' parameters.
struct Result {
  std::optional<FitResult> families;
  std::optional<RunsFit> runs_fit;
  std::vector<std::string> runs;      // --runs files
  std::string gpu, intra, inter;      // the GPU and fabrics measured
  size_t files = 0;                   // measurement files read
  std::string profile;                // the calibration profile, as written
  std::string out;                    // where it was written; "" = nowhere
  std::vector<std::string> notes;     // what reading passed over
  std::vector<std::string> refusals;  // why the fit does not hold (FitRefusals); empty: it holds
  bool forced = false;                // written with refusals (--force)
};

// Refuses to write a profile from a fit that does not hold, unless forced; says so either way.
Status CheckHolds(const Options& o, Result* res) {
  if (res->refusals.empty() || o.out.empty()) return Status::Ok();
  if (o.force) {
    res->forced = true;
    return Status::Ok();
  }
  std::string why;
  for (const std::string& r : res->refusals) why += "\n  " + r;
  return InvalidArgument(fmt::format(
      "{}:1:1: error: not writing the profile: the fit does not hold:{}\nmeasure again (or "
      "state the cluster: --intra, --inter), or pass --force to write it anyway",
      o.out, why));
}

// fit --runs: parameters on their bounds, and (3 cases or more) R^2 of the fitted step times.
std::vector<std::string> RunsRefusals(const RunsFit& f) {
  std::vector<std::string> out;
  std::vector<double> measured, fitted;
  std::vector<std::string> names;
  for (const RunsCase& c : f.cases) {
    measured.push_back(c.measured_s);
    fitted.push_back(c.after_s);
    names.push_back("case " + c.name);
  }
  const FamilyFit q = Quality("step times", measured, fitted, names);
  std::string points;
  for (const auto& [name, e] : q.disagree) {
    points += fmt::format("{}{} ({:+.1f}%)", points.empty() ? "" : "; ", name, 100 * e);
  }
  for (const RunsParam& p : f.params) {
    const double tol = 1e-6 * std::max(std::abs(p.lo), std::abs(p.hi));
    if (p.fitted <= p.lo + tol || p.fitted >= p.hi - tol) {
      out.push_back(
          fmt::format("{} {:.4g} sits on its bound [{:g}, {:g}]{}: the step times ask "
                      "for more than it can give (cases furthest from the fit: {})",
                      p.name, p.fitted, p.lo, p.hi, p.unit.empty() ? "" : " " + p.unit, points));
    }
  }
  if (const std::string poor = PoorFit(q.r2, q.worst_error, q.points); !poor.empty()) {
    out.push_back(fmt::format("step times: {} (furthest: {})", poor, points));
  }
  return out;
}

StatusOr<Result> FitRunsOf(const Options& o, const VerbContext& ctx) {
  Result res{.runs = o.runs, .out = o.out};
  PARASIM_ASSIGN_OR_RETURN(res.runs_fit,
                           FitRuns(o.runs, o.sets, SweepOptionsOf(o.jobs, ctx.processes), o.params,
                                   CaseFilter{o.subset, o.gpu, o.nodes}));
  res.profile = FormatCalibrationProfile(res.runs_fit->profile);
  res.refusals = RunsRefusals(*res.runs_fit);
  PARASIM_RETURN_IF_ERROR(CheckHolds(o, &res));
  if (!o.out.empty()) {
    // A refit in place (--out onto the calibration profile the runs' scenarios read) is refused
    // as any output onto an input is, unless forced: the profile was read whole before.
    if (o.force) AllowRewrite(o.out);
    PARASIM_RETURN_IF_ERROR(WriteFileAtomic(o.out, res.profile));
  }
  return res;
}

StatusOr<std::vector<Measurements>> LoadAll(const Options& o) {
  std::vector<Measurements> ms;
  for (const auto& f : o.measurements) {
    PARASIM_ASSIGN_OR_RETURN(Measurements m,
                             LoadMeasurements(f, o.op, {.ranks = o.ranks, .per_node = o.per_node}));
    ms.push_back(std::move(m));
  }
  return ms;
}

// The GPU measured: --gpu, else the first file that names one, else one whose device (nccl-tests'
// rank lines, calibrate's `device`) is a catalog GPU's. A file whose device is another catalog
// GPU's is refused (unless --force); one the catalog does not know is said.
StatusOr<const GpuSpec*> GpuMeasured(const Options& o, const std::vector<Measurements>& ms,
                                     const Catalogs& cat, std::vector<std::string>* notes) {
  std::string gpu_id = o.gpu;
  for (const auto& m : ms) {
    if (gpu_id.empty()) gpu_id = m.gpu;
  }
  for (const auto& m : ms) {
    const GpuSpec* named = cat.hardware.FindGpuByDevice(m.device);
    if (gpu_id.empty() && named) gpu_id = named->id;
  }
  if (gpu_id.empty()) {
    return InvalidArgument(
        fmt::format("{}:1:1: error: which GPU was measured? pass --gpu ID (one of: {})",
                    o.measurements.front(), fmt::join(cat.hardware.GpuIds(), ", ")));
  }
  const GpuSpec* gpu = cat.hardware.FindGpu(gpu_id);
  if (!gpu) {
    return InvalidArgument(fmt::format("--gpu={}:1:7: error: unknown GPU '{}'; expected one of: {}",
                                       gpu_id, gpu_id, fmt::join(cat.hardware.GpuIds(), ", ")));
  }
  for (const auto& m : ms) {
    if (m.device.empty()) continue;
    const GpuSpec* named = cat.hardware.FindGpuByDevice(m.device);
    if (!named) {
      notes->push_back(
          fmt::format("{}: ran on \"{}\", which the catalog does not list; fitted as "
                      "{}",
                      m.file, m.device, gpu->id));
    } else if (named->id != gpu->id && !o.force) {
      return InvalidArgument(fmt::format(
          "{}:1:1: error: measured on {} ({}), but the fit is for {}: pass --gpu {} (or --force "
          "to fit it as {})",
          m.file, m.device, named->id, gpu->id, named->id, gpu->id));
    }
  }
  return gpu;
}

// Multi-node points are priced on the inter-node fabric, which their log does not name: it must
// be stated (--inter), not assumed from the catalog's server (an assumed fabric turns a cluster's
// own network into a bad fit, or a fit of the wrong thing).
Status InterStated(const Options& o, const std::vector<Measurements>& ms, const GpuSpec& gpu,
                   const Catalogs& cat) {
  if (!o.inter.empty()) return Status::Ok();
  for (const Measurements& m : ms) {
    for (const CollectivePoint& p : m.collectives) {
      if (!p.fabric.empty() || p.ranks <= 1 || !p.CrossesNodes()) continue;
      const int64_t nodes =
          (p.ranks + std::max<int64_t>(1, p.per_node) - 1) / std::max<int64_t>(1, p.per_node);
      return InvalidArgument(fmt::format(
          "{}:1: error: this {} run spans {} nodes ({} ranks, {} per node), so its times are "
          "priced on the inter-node fabric, which nothing states; fit would assume {} (the "
          "catalog's server for {}): pass --inter {} if that is your cluster's network, or the "
          "fabric it is (one of: {})",
          p.where.empty() ? m.file : p.where, CollectiveName(p.op), nodes, p.ranks, p.per_node,
          gpu.server.inter.empty() ? std::string("none") : gpu.server.inter, gpu.id,
          gpu.server.inter.empty() ? std::string("ID") : gpu.server.inter,
          fmt::join(cat.hardware.FabricIds(), ", ")));
    }
  }
  return Status::Ok();
}

// The cluster measured: the GPU, and the fabrics given or those of the server the catalog lists
// for it.
StatusOr<ClusterSpec> ClusterMeasured(const Options& o, const std::vector<Measurements>& ms,
                                      const GpuSpec& gpu, const Catalogs& cat, Result* res) {
  res->gpu = gpu.id;
  res->intra = !o.intra.empty() ? o.intra : gpu.server.intra;
  res->inter = !o.inter.empty() ? o.inter : gpu.server.inter;
  PARASIM_RETURN_IF_ERROR(InterStated(o, ms, gpu, cat));
  if (res->intra.empty() || res->inter.empty()) {
    return InvalidArgument(
        fmt::format("{}:1:1: error: the catalog lists no server for '{}'; pass --intra and --inter "
                    "(one of: {})",
                    o.measurements.front(), gpu.id, fmt::join(cat.hardware.FabricIds(), ", ")));
  }
  ClusterSpec c;
  c.gpu = gpu;
  for (auto [id, spec, flag] :
       {std::tuple{res->intra, &c.intra, "--intra"}, {res->inter, &c.inter, "--inter"}}) {
    const FabricSpec* f = cat.hardware.FindFabric(id);
    if (!f) {
      return InvalidArgument(
          fmt::format("{}={}:1:{}: error: unknown fabric '{}'; expected one of: {}", flag, id,
                      std::string(flag).size() + 2, id, fmt::join(cat.hardware.FabricIds(), ", ")));
    }
    *spec = *f;
  }
  c.gpus_per_node = std::max(1, gpu.server.gpus);
  return c;
}

StatusOr<Result> Run(const Options& o, const VerbContext& ctx) {
  if (!o.runs.empty()) {
    if (!o.measurements.empty()) {
      return InvalidArgument(
          "--runs:1:1: error: fit takes measurement files or --runs FILE, not both");
    }
    return FitRunsOf(o, ctx);
  }
  if (o.measurements.empty()) {
    return InvalidArgument(
        "fit:1:1: error: expected measurement files (calibrate output, nccl-tests logs) or "
        "--runs FILE (measured step times)");
  }
  PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
  PARASIM_ASSIGN_OR_RETURN(std::vector<Measurements> ms, LoadAll(o));
  Result res{.files = ms.size(), .out = o.out};
  for (const Measurements& m : ms)
    res.notes.insert(res.notes.end(), m.notes.begin(), m.notes.end());
  PARASIM_ASSIGN_OR_RETURN(const GpuSpec* gpu, GpuMeasured(o, ms, cat, &res.notes));
  PARASIM_ASSIGN_OR_RETURN(ClusterSpec c, ClusterMeasured(o, ms, *gpu, cat, &res));
  PARASIM_ASSIGN_OR_RETURN(res.families, FitMeasurements(ms, c));
  res.profile = FormatCalibrationProfile(res.families->profile);
  res.refusals = FitRefusals(*res.families);
  PARASIM_RETURN_IF_ERROR(CheckHolds(o, &res));
  if (!o.out.empty()) {
    // A refit in place (--out onto the calibration profile the runs' scenarios read) is refused
    // as any output onto an input is, unless forced: the profile was read whole before.
    if (o.force) AllowRewrite(o.out);
    PARASIM_RETURN_IF_ERROR(WriteFileAtomic(o.out, res.profile));
  }
  return res;
}

// Whether the fit holds, why not, and what reading passed over.
void SetHolds(const Result& res, Json& j) {
  Json refusals = Json::Array(), notes = Json::Array();
  for (const std::string& r : res.refusals) refusals.Push(r);
  for (const std::string& n : res.notes) notes.Push(n);
  j.Set("holds", res.refusals.empty()).Set("refusals", refusals).Set("notes", notes);
}

// The same, as text.
std::string HoldsText(const Result& res) {
  std::string out;
  for (const std::string& n : res.notes) out += fmt::format("note: {}\n", n);
  if (res.refusals.empty()) return out;
  out += fmt::format("\nthe fit does not hold{}:\n",
                     res.forced ? " (profile written with --force)" : "; fit --out refuses it");
  for (const std::string& r : res.refusals) out += fmt::format("  {}\n", r);
  return out;
}

Json RunsJson(const Result& res) {
  const RunsFit& f = *res.runs_fit;
  Json params = Json::Array();
  for (const RunsParam& q : f.params) {
    Json o = Json::Object();
    o.Set("name", q.name).Set("start", q.start).Set("fitted", q.fitted).Set("lo", q.lo);
    o.Set("hi", q.hi).Set("unit", q.unit);
    params.Push(o);
  }
  Json cases = Json::Array();
  for (const RunsCase& c : f.cases) {
    Json o = Json::Object();
    o.Set("name", c.name).Set("measured_s", c.measured_s).Set("before_s", c.before_s);
    o.Set("after_s", c.after_s).Set("held_out_s", c.held_out_s).Set("layout", c.layout);
    cases.Push(o);
  }
  Json skipped = Json::Array();
  for (const auto& x : f.skipped) skipped.Push(x);
  Json j = Json::Object();
  j.Set("gpu", f.gpu).Set("params", params).Set("cases", cases).Set("skipped", skipped);
  if (!f.stated.empty()) {
    Json stated = Json::Array();
    for (const auto& x : f.stated) stated.Push(x);
    j.Set("stated", stated);
  }
  j.Set("mape_before", f.mape_before).Set("mape_after", f.mape_after);
  j.Set("mape_held_out", f.mape_held_out).Set("profile", res.profile);
  SetHolds(res, j);
  return j;
}

Json ToJson(const Result& res) {
  if (res.runs_fit) return RunsJson(res);
  Json fams = Json::Array();
  for (const auto& f : res.families->families) {
    Json o = Json::Object();
    o.Set("family", f.family).Set("points", f.points).Set("r2", f.r2).Set("mape", f.mape);
    o.Set("worst", f.worst).Set("worst_error", f.worst_error).Set("fitted", f.fitted);
    Json bounds = Json::Array();
    for (const std::string& b : f.at_bound) bounds.Push(b);
    o.Set("at_bound", bounds).Set("written", f.written);
    fams.Push(o);
  }
  Json j = Json::Object();
  j.Set("gpu", res.gpu).Set("families", fams).Set("profile", res.profile);
  SetHolds(res, j);
  if (!res.out.empty()) j.Set("out", res.out);
  return j;
}

std::string RunsText(const Result& res) {
  const RunsFit& f = *res.runs_fit;
  std::string out = fmt::format("fit --runs {} ({}, {} cases)\n\n", fmt::join(res.runs, " --runs "),
                                f.gpu, f.cases.size());
  out += fmt::format("{:<26} {:>10} {:>10}  bounds\n", "parameter", "start", "fitted");
  for (const RunsParam& q : f.params) {
    out += fmt::format("{:<26} {:>10.4g} {:>10.4g}  [{:g}, {:g}]{}\n", q.name, q.start, q.fitted,
                       q.lo, q.hi, q.unit.empty() ? "" : " " + q.unit);
  }
  out += fmt::format("\n{:<40} {:>10} {:>9} {:>9} {:>9}\n", "case", "measured", "before", "after",
                     "held out");
  for (const RunsCase& c : f.cases) {
    auto err = [&](double p) {
      return std::isnan(p) ? std::string("n/a")
                           : fmt::format("{:+.1f}%", 100 * (p / c.measured_s - 1));
    };
    out += fmt::format("{:<40} {:>10} {:>9} {:>9} {:>9}\n", c.name, Seconds(c.measured_s),
                       err(c.before_s), err(c.after_s), err(c.held_out_s));
  }
  for (const auto& x : f.skipped) out += fmt::format("skipped: {}\n", x);
  for (const auto& x : f.stated) out += fmt::format("stated beside the file: {}\n", x);
  out +=
      fmt::format("\nMAPE {:.2f}% before, {:.2f}% fitted, {} leave-one-out\n", 100 * f.mape_before,
                  100 * f.mape_after,
                  std::isnan(f.mape_held_out) ? std::string("n/a (no more cases than parameters)")
                                              : fmt::format("{:.2f}%", 100 * f.mape_held_out));
  out += HoldsText(res);
  if (!res.out.empty()) out += fmt::format("wrote {}\n", res.out);
  return out;
}

std::string ToText(const Result& res) {
  if (res.runs_fit) return RunsText(res);
  const FitResult& r = *res.families;
  std::string out = fmt::format("fit for {} over {} file(s); fabrics {} and {}\n\n", res.gpu,
                                res.files, res.intra, res.inter);
  out += fmt::format("{:<40} {:>6} {:>8} {:>7} {:>9}  {}\n", "family", "points", "R^2", "MAPE",
                     "worst", "fitted");
  for (const auto& f : r.families) {
    // A reported-only family (sustained clocks) has no worst point.
    // R^2 is undefined over measured values that do not vary (FamilyFit::r2 NaN).
    const std::string r2 = std::isnan(f.r2) ? std::string("n/a") : fmt::format("{:.4f}", f.r2);
    out += fmt::format("{:<40} {:>6} {:>8} {:>6.2f}% {:>+8.1f}%  {}{}\n", f.family, f.points, r2,
                       100 * f.mape, 100 * f.worst_error, f.fitted,
                       f.worst.empty() ? "" : fmt::format("  (worst: {})", f.worst));
  }
  for (const auto& sk : r.skipped) out += fmt::format("skipped: {}\n", sk);
  out += HoldsText(res);
  out += fmt::format("\n{}", res.profile);
  if (!res.out.empty()) {
    out += fmt::format("\nwrote {}; use it with `cluster: {{calibration: {}}}` in a scenario\n",
                       res.out, res.out);
  }
  return out;
}

}  // namespace

Verb FitVerb() {
  using O = Options;
  return MakeVerb<O, Result>({
      .name = "fit",
      .help = "fit the cost model to measurements (parasim calibrate output or nccl-tests logs)",
      .flags = {Arg(&O::measurements, "measurements", "measurement files and nccl-tests logs"),
                Opt(&O::runs, "--runs",
                    "fit sustained factor, launch overhead and inter-node efficiency to the step "
                    "times of this validation-format file (measured jobs); repeat to fit several "
                    "together")
                    .Input(),
                Opt(&O::params, "--params",
                    "with --runs: fit only these (sustained_factor, launch_overhead, host_op_time, "
                    "host_micro_batch_time, host_step_time, "
                    "efficiency); "
                    "the others keep the scenario's values")
                    .Delimiter(','),
                JobsFlag(&O::jobs, "worker threads for the cases' sweeps"),
                Opt(&O::gpu, "--gpu",
                    "catalog id of the GPU measured (default: from the files); with --runs, "
                    "only the cases on it"),
                Opt(&O::subset, "--subset",
                    "with --runs: only the cases of this list (training, held_out, ...) of the "
                    "subsets.yaml beside each file"),
                Opt(&O::nodes, "--nodes", "with --runs: only the cases on this many nodes (0: any)")
                    .Range(0, kMaxGpus),
                Opt(&O::op, "--op",
                    "the op of nccl-tests logs that do not name their program (all_reduce, "
                    "all_gather, reduce_scatter, alltoall, sendrecv, ...; one per run, "
                    "comma-separated); must agree with a header that names it"),
                Opt(&O::ranks, "--ranks",
                    "the ranks of nccl-tests runs whose logs have no device lines (default: "
                    "from the rows' busbw/algbw, else nThread x nGpus)")
                    .Range(0, int64_t{1} << 24),
                Opt(&O::per_node, "--per-node",
                    "the ranks on each node of nccl-tests runs whose logs have no device lines "
                    "(default: all on one node when one process drove them)")
                    .Range(0, int64_t{1} << 24),
                Opt(&O::intra, "--intra", "intra-node fabric measured (default: the GPU's NVLink)"),
                Opt(&O::inter, "--inter",
                    "inter-node fabric measured; required for multi-node logs (the catalog's "
                    "server fabric is not assumed)"),
                Opt(&O::out, "--out",
                    "write the calibration profile here (refused when the fit does not hold: a "
                    "value on its bound, or R^2 below 0.9)")
                    .Output(),
                Opt(&O::force, "--force",
                    "write the profile even from a fit that does not hold, and fit logs of "
                    "another GPU as --gpu's"),
                SetFlag(&O::sets,
                        "with --runs: override a key in every case, e.g. --set "
                        "training.grad_accumulation=separate (repeatable); unused with measurement "
                        "files"),
                JsonFlag<O>("machine-readable output on stdout")},
      .run = Run,
      .json = ToJson,
      .text = ToText,
  });
}

}  // namespace parasim
