// parasim fit: the cost model fitted to measurements (parasim calibrate output or nccl-tests
// logs) or, with --runs, to measured step times; writes a calibration profile.
#include "hardware/fit.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
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
  std::vector<std::string> sets;  // --runs: keys stated in every case
};

// What was fitted: measurement files' families, or (--runs) step times' parameters.
struct Result {
  std::optional<FitResult> families;
  std::optional<RunsFit> runs_fit;
  std::vector<std::string> runs;  // --runs files
  std::string gpu, intra, inter;  // the GPU and fabrics measured
  size_t files = 0;               // measurement files read
  std::string profile;            // the calibration profile, as written
  std::string out;                // where it was written; "" = nowhere
};

StatusOr<Result> FitRunsOf(const Options& o, const VerbContext& ctx) {
  Result res{.runs = o.runs, .out = o.out};
  PARASIM_ASSIGN_OR_RETURN(
      res.runs_fit, FitRuns(o.runs, o.sets, SweepOptionsOf(o.jobs, ctx.processes), o.params));
  res.profile = FormatCalibrationProfile(res.runs_fit->profile);
  if (!o.out.empty()) PARASIM_RETURN_IF_ERROR(WriteFileAtomic(o.out, res.profile));
  return res;
}

StatusOr<std::vector<Measurements>> LoadAll(const Options& o) {
  if (!o.op.empty()) {
    if (auto c = ParseNcclTestsProgram(o.op); !c.ok()) {
      return InvalidArgument(fmt::format("--op={}:1:6: error: {}", o.op, c.status().message()));
    }
  }
  std::vector<Measurements> ms;
  for (const auto& f : o.measurements) {
    PARASIM_ASSIGN_OR_RETURN(Measurements m, LoadMeasurements(f, o.op));
    ms.push_back(std::move(m));
  }
  return ms;
}

// The GPU measured: --gpu, else the first file that names one, else one whose device (nccl-tests'
// rank lines, calibrate's `device`) is a catalog GPU's.
StatusOr<const GpuSpec*> GpuMeasured(const Options& o, const std::vector<Measurements>& ms,
                                     const Catalogs& cat) {
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
  return gpu;
}

// The cluster measured: the GPU, and the fabrics given or those of the server the catalog lists
// for it.
StatusOr<ClusterSpec> ClusterMeasured(const Options& o, const GpuSpec& gpu, const Catalogs& cat,
                                      Result* res) {
  res->gpu = gpu.id;
  res->intra = !o.intra.empty() ? o.intra : gpu.server.intra;
  res->inter = !o.inter.empty() ? o.inter : gpu.server.inter;
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
  PARASIM_ASSIGN_OR_RETURN(const GpuSpec* gpu, GpuMeasured(o, ms, cat));
  Result res{.files = ms.size(), .out = o.out};
  PARASIM_ASSIGN_OR_RETURN(ClusterSpec c, ClusterMeasured(o, *gpu, cat, &res));
  PARASIM_ASSIGN_OR_RETURN(res.families, FitMeasurements(ms, c));
  res.profile = FormatCalibrationProfile(res.families->profile);
  if (!o.out.empty()) PARASIM_RETURN_IF_ERROR(WriteFileAtomic(o.out, res.profile));
  return res;
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
  j.Set("mape_before", f.mape_before).Set("mape_after", f.mape_after);
  j.Set("mape_held_out", f.mape_held_out).Set("profile", res.profile);
  return j;
}

Json ToJson(const Result& res) {
  if (res.runs_fit) return RunsJson(res);
  Json fams = Json::Array();
  for (const auto& f : res.families->families) {
    Json o = Json::Object();
    o.Set("family", f.family).Set("points", f.points).Set("r2", f.r2).Set("mape", f.mape);
    o.Set("worst", f.worst).Set("worst_error", f.worst_error).Set("fitted", f.fitted);
    fams.Push(o);
  }
  Json j = Json::Object();
  j.Set("gpu", res.gpu).Set("families", fams).Set("profile", res.profile);
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
    auto err = [&](double p) { return fmt::format("{:+.1f}%", 100 * (p / c.measured_s - 1)); };
    out += fmt::format("{:<40} {:>10} {:>9} {:>9} {:>9}\n", c.name, Seconds(c.measured_s),
                       err(c.before_s), err(c.after_s), err(c.held_out_s));
  }
  for (const auto& x : f.skipped) out += fmt::format("skipped: {}\n", x);
  out += fmt::format("\nMAPE {:.2f}% before, {:.2f}% fitted, {:.2f}% leave-one-out\n",
                     100 * f.mape_before, 100 * f.mape_after, 100 * f.mape_held_out);
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
    out += fmt::format("{:<40} {:>6} {:>8.4f} {:>6.2f}% {:>+8.1f}%  {}{}\n", f.family, f.points,
                       f.r2, 100 * f.mape, 100 * f.worst_error, f.fitted,
                       f.worst.empty() ? "" : fmt::format("  (worst: {})", f.worst));
  }
  for (const auto& sk : r.skipped) out += fmt::format("skipped: {}\n", sk);
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
                    "efficiency); "
                    "the others keep the scenario's values")
                    .Delimiter(','),
                JobsFlag(&O::jobs, "worker threads for the cases' sweeps"),
                Opt(&O::gpu, "--gpu", "catalog id of the GPU measured (default: from the files)"),
                Opt(&O::op, "--op",
                    "collective of nccl-tests logs too old to name their program (all_reduce, "
                    "all_gather, reduce_scatter, alltoall, sendrecv)"),
                Opt(&O::intra, "--intra", "intra-node fabric measured (default: the GPU's NVLink)"),
                Opt(&O::inter, "--inter", "inter-node fabric measured (default: the GPU's IB)"),
                Opt(&O::out, "--out", "write the calibration profile here"),
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
