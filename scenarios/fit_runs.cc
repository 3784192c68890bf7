#include "scenarios/fit_runs.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "strategies/goodput.h"
#include "strategies/layout_format.h"
#include "strategies/step.h"

namespace parasim {
namespace {

// Where each parameter lives in a cluster.
enum class Knob { kSustained, kLaunch, kHostOp, kHostMicroBatch, kHostStep, kInterEfficiency };

struct Problem {
  std::vector<Scenario> cases;  // layouts fixed
  std::vector<double> measured;
  // Measured on the wall clock (measured.basis: wall_clock): the step over the goodput is
  // compared, as validate compares it.
  std::vector<char> wall_clock;
  std::vector<Knob> knobs;
  std::vector<RunsParam> params;
  // Per knob, the inter-node fabric an efficiency knob is of (empty for the others): each fabric
  // the runs cross is its own parameter, applied to the cases on it.
  std::vector<std::string> fabric;

  // x in [0, 1] per parameter -> its value.
  double Value(size_t j, double x) const {
    return params[j].lo + std::clamp(x, 0.0, 1.0) * (params[j].hi - params[j].lo);
  }
  void Apply(const Eigen::VectorXd& x, ClusterSpec* c) const {
    for (size_t j = 0; j < knobs.size(); ++j) {
      const double v = Value(j, x(static_cast<Eigen::Index>(j)));
      switch (knobs[j]) {
        case Knob::kSustained:
          c->gpu.sustained_factor = v;
          break;
        case Knob::kLaunch:
          c->gpu.launch_overhead = Duration::Microseconds(v);
          break;
        case Knob::kHostOp:
          c->gpu.host_op_time = Duration::Microseconds(v);
          break;
        case Knob::kHostMicroBatch:
          c->gpu.host_micro_batch_time = Duration::Microseconds(v);
          break;
        case Knob::kHostStep:
          c->gpu.host_step_time = Duration::Microseconds(v);
          break;
        case Knob::kInterEfficiency:
          if (c->inter.id == fabric[j]) c->inter.efficiency = v;
          break;
      }
    }
  }
  StatusOr<double> Predict(size_t i, const Eigen::VectorXd& x) const {
    Scenario s = cases[i];
    Apply(x, &s.cluster);
    StepOptions o;
    o.critical_path = false;
    PARASIM_ASSIGN_OR_RETURN(StepReport r,
                             SimulateStep(s.model, s.training, s.layout, s.cluster, o));
    if (!wall_clock[i]) return r.step_time_s;
    const double goodput = GoodputFactor(s, r.step_time_s);
    return goodput > 0 ? r.step_time_s / goodput : std::numeric_limits<double>::infinity();
  }
  // Relative errors of every case.
  StatusOr<Eigen::VectorXd> Residuals(const Eigen::VectorXd& x) const {
    Eigen::VectorXd r(static_cast<Eigen::Index>(cases.size()));
    for (size_t i = 0; i < cases.size(); ++i) {
      PARASIM_ASSIGN_OR_RETURN(double p, Predict(i, x));
      r(static_cast<Eigen::Index>(i)) = p / measured[i] - 1;
    }
    return r;
  }
  StatusOr<Eigen::MatrixXd> Jacobian(const Eigen::VectorXd& x, const Eigen::VectorXd& r) const {
    const Eigen::Index n = r.size(), k = x.size();
    Eigen::MatrixXd jac(n, k);
    for (Eigen::Index j = 0; j < k; ++j) {
      // A forward step of 2% of the range, backwards at the upper bound.
      const double h = x(j) > 0.98 ? -0.02 : 0.02;
      Eigen::VectorXd y = x;
      y(j) += h;
      PARASIM_ASSIGN_OR_RETURN(Eigen::VectorXd ry, Residuals(y));
      jac.col(j) = (ry - r) / h;
    }
    return jac;
  }
};

// One bounded Levenberg-Marquardt step from x on the rows `w` (1 = used, 0 = left out). With
// `hold_bounds`, parameters at a bound stay there (the active set of the full fit), so a
// left-out case moves only the parameters the data still decides.
Eigen::VectorXd Step(const Eigen::VectorXd& x, const Eigen::VectorXd& r, const Eigen::MatrixXd& jac,
                     const Eigen::VectorXd& w, double lambda, bool hold_bounds = false) {
  Eigen::MatrixXd j = jac;
  if (hold_bounds) {
    for (Eigen::Index k = 0; k < x.size(); ++k) {
      if (x(k) <= 1e-9 || x(k) >= 1 - 1e-9) j.col(k).setZero();
    }
  }
  const Eigen::MatrixXd jw = w.asDiagonal() * j;
  Eigen::MatrixXd a = jw.transpose() * j;
  a.diagonal().array() += lambda * (1 + a.diagonal().array());
  const Eigen::VectorXd g = jw.transpose() * r;
  Eigen::VectorXd y = x - a.ldlt().solve(g);
  return y.cwiseMax(0.0).cwiseMin(1.0);
}

// Huber's loss of the relative errors: squared within kHuber, linear beyond, so that a few
// runs far off for what the replay does not model (an optimizer, offloading) do not pull the
// parameters; every error within it, as in the published files, is a plain least squares.
constexpr double kHuber = 0.25;

double Sse(const Eigen::VectorXd& r) {
  double s = 0;
  for (Eigen::Index i = 0; i < r.size(); ++i) {
    const double a = std::abs(r(i));
    s += a <= kHuber ? a * a : kHuber * (2 * a - kHuber);
  }
  return s;
}

// Iteratively reweighted least squares for that loss: each row's weight at the residuals.
Eigen::VectorXd HuberWeights(const Eigen::VectorXd& r) {
  Eigen::VectorXd w(r.size());
  for (Eigen::Index i = 0; i < r.size(); ++i) {
    w(i) = std::abs(r(i)) <= kHuber ? 1.0 : kHuber / std::abs(r(i));
  }
  return w;
}

StatusOr<Eigen::VectorXd> Fit(const Problem& p, Eigen::VectorXd x) {
  PARASIM_ASSIGN_OR_RETURN(Eigen::VectorXd r, p.Residuals(x));
  double lambda = 1e-3;
  for (int iter = 0; iter < 12; ++iter) {
    PARASIM_ASSIGN_OR_RETURN(Eigen::MatrixXd jac, p.Jacobian(x, r));
    const Eigen::VectorXd all = HuberWeights(r);
    bool improved = false;
    for (int tries = 0; tries < 4 && !improved; ++tries) {
      const Eigen::VectorXd y = Step(x, r, jac, all, lambda);
      PARASIM_ASSIGN_OR_RETURN(Eigen::VectorXd ry, p.Residuals(y));
      if (Sse(ry) < Sse(r) - 1e-12) {
        improved = (Sse(r) - Sse(ry)) > 1e-6 * Sse(r);
        x = y;
        r = ry;
        lambda = std::max(1e-6, lambda / 4);
        if (!improved) return x;  // converged
      } else {
        lambda *= 8;
      }
    }
    if (!improved) break;
  }
  return x;
}

double Mape(const std::vector<double>& pred, const std::vector<double>& meas) {
  double s = 0;
  for (size_t i = 0; i < pred.size(); ++i) s += std::abs(pred[i] / meas[i] - 1);
  return pred.empty() ? 0 : s / static_cast<double>(pred.size());
}

// The cases with their layouts fixed: a sweeping case takes its sweep's best layout; a case
// where nothing fits is left out with the reason, as validate reports it failed.
Status LoadProblem(const std::string& path, const std::vector<std::string>& sets,
                   const SweepOptions& options, const CaseFilter& filter, Problem* p,
                   RunsFit* out) {
  PARASIM_ASSIGN_OR_RETURN(ValidationFile file, LoadValidationFile(path, sets, filter));
  for (const std::string& st : file.stated) out->stated.push_back(path + ": " + st);
  for (ValidationInput& in : file.cases) {
    // Cases that could not be loaded (an import parasim cannot express) or that measured no
    // step time (peak memory alone) give nothing to fit a time to.
    if (!in.measured.load_failure.empty() || !in.measured.has_time()) {
      out->skipped.push_back(
          in.measured.name + ": " +
          (in.measured.load_failure.empty() ? "no measured step time" : in.measured.load_failure));
      continue;
    }
    Scenario s = in.scenario;
    if (out->gpu.empty()) out->gpu = s.cluster.gpu.id;
    if (s.cluster.gpu.id != out->gpu) {
      return InvalidArgument(fmt::format(
          "{}:1:1: error: case '{}' runs on {} but earlier cases on {}; fit --runs fits one GPU "
          "(split the file by GPU)",
          path, in.measured.name, s.cluster.gpu.id, out->gpu));
    }
    if (s.sweep) {
      PARASIM_ASSIGN_OR_RETURN(SweepOutcome r, SweepCase(s, options));
      if (r.ranked.empty()) {
        out->skipped.push_back(in.measured.name + ": " + NoLayoutFits(r));
        continue;
      }
      s = WithLayout(s, r.ranked[0]);
    } else {
      // As validate does: a layout that does not fit in memory is no prediction to fit to.
      ValidationCase vc = in.measured;
      PARASIM_RETURN_IF_ERROR(PredictCase(s, options, &vc));
      if (!vc.ok) {
        out->skipped.push_back(in.measured.name + ": " + vc.failure);
        continue;
      }
    }
    p->cases.push_back(s);
    p->measured.push_back(in.measured.measured_s);
    p->wall_clock.push_back(in.measured.wall_clock ? 1 : 0);
    out->cases.push_back({in.measured.name, FormatLayout(s.layout, s.training, LayoutStyle::kKey),
                          in.measured.measured_s});
  }
  return Status::Ok();
}

void AddParams(Problem* p, const std::vector<std::string>& only, RunsFit* out) {
  const ClusterSpec& c = p->cases.front().cluster;
  auto named = [&](const char* name) {
    return std::find(only.begin(), only.end(), name) != only.end();
  };
  auto wanted = [&](const char* name) { return only.empty() || named(name); };
  if (wanted("sustained_factor")) {
    p->knobs.push_back(Knob::kSustained);
    p->params.push_back({"sustained_factor", 0.5, 1.0, c.gpu.sustained_factor, 0, ""});
  }
  if (wanted("launch_overhead")) {
    p->knobs.push_back(Knob::kLaunch);
    p->params.push_back(
        {"launch_overhead", 1.0, 40.0, c.gpu.launch_overhead.microseconds(), 0, "us"});
  }
  // The host (RankTopology::Issue): its time per op issued, per micro-batch and per step. By
  // default only where some case's experts wait on the host (the rest of the host sets a step's
  // pace only in small models: named, they are fitted on any runs).
  bool host_bound = false;
  for (const Scenario& s : p->cases)
    host_bound = host_bound || IssuesExpertsFromHost(s.model, s.training);
  if (named("host_op_time") || (only.empty() && host_bound)) {
    p->knobs.push_back(Knob::kHostOp);
    p->params.push_back({"host_op_time", 1.0, 200.0, c.gpu.host_op_time.microseconds(), 0, "us"});
  }
  if (named("host_micro_batch_time")) {
    p->knobs.push_back(Knob::kHostMicroBatch);
    p->params.push_back({"host_micro_batch_time", 0.0, 20000.0,
                         c.gpu.host_micro_batch_time.microseconds(), 0, "us"});
  }
  if (named("host_step_time")) {
    p->knobs.push_back(Knob::kHostStep);
    p->params.push_back(
        {"host_step_time", 0.0, 500000.0, c.gpu.host_step_time.microseconds(), 0, "us"});
  }
  p->fabric.assign(p->knobs.size(), "");
  // One efficiency for each inter-node fabric some multi-node case crosses, from its first
  // case's (a single-node case's fabric carries nothing; one knob for every fabric had been
  // written for the first case's alone, as "none" where that case was single-node).
  for (const Scenario& s : p->cases) {
    if (s.cluster.nodes <= 1 || !wanted("efficiency")) continue;
    if (std::find(p->fabric.begin(), p->fabric.end(), s.cluster.inter.id) != p->fabric.end()) {
      continue;
    }
    p->knobs.push_back(Knob::kInterEfficiency);
    p->fabric.push_back(s.cluster.inter.id);
    p->params.push_back(
        {s.cluster.inter.id + ".efficiency", 0.5, 1.0, s.cluster.inter.efficiency, 0, ""});
  }
  out->params = p->params;
}

// `fabric`: per parameter, the inter-node fabric an efficiency is of (Problem::fabric).
CalibrationProfile ProfileOf(const RunsFit& f, const std::vector<std::string>& paths,
                             const std::vector<std::string>& fabric) {
  std::string names;
  for (const std::string& path : paths) {
    names += (names.empty() ? "" : ", ") + path.substr(path.find_last_of('/') + 1);
  }
  CalibrationProfile prof;
  prof.gpu = f.gpu;
  prof.source =
      fmt::format("parasim fit --runs {} ({} cases, MAPE {:.2f}%, leave-one-out {})", names,
                  f.cases.size(), 100 * f.mape_after,
                  std::isnan(f.mape_held_out) ? std::string("n/a: no more cases than parameters")
                                              : fmt::format("{:.2f}%", 100 * f.mape_held_out));
  for (size_t j = 0; j < f.params.size(); ++j) {
    const RunsParam& q = f.params[j];
    if (!fabric[j].empty()) prof.fabrics.push_back({fabric[j], q.fitted, {}, {}});
    if (q.name == "sustained_factor") prof.sustained_factor = q.fitted;
    if (q.name == "launch_overhead") prof.launch_overhead = Duration::Microseconds(q.fitted);
    if (q.name == "host_op_time") prof.host_op_time = Duration::Microseconds(q.fitted);
    if (q.name == "host_micro_batch_time") {
      prof.host_micro_batch_time = Duration::Microseconds(q.fitted);
    }
    if (q.name == "host_step_time") prof.host_step_time = Duration::Microseconds(q.fitted);
  }
  return prof;
}

}  // namespace

const std::vector<std::string>& RunsParamNames() {
  static const std::vector<std::string> kNames = {"sustained_factor", "launch_overhead",
                                                  "host_op_time",     "host_micro_batch_time",
                                                  "host_step_time",   "efficiency"};
  return kNames;
}

namespace {

// A file given twice would count each of its cases twice (and leave-one-out would keep each
// case's twin in the fit): refused, however the two are spelled.
Status EachFileOnce(const std::vector<std::string>& paths) {
  for (size_t i = 0; i < paths.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      std::error_code ec;
      if (paths[i] == paths[j] || std::filesystem::equivalent(paths[i], paths[j], ec)) {
        return InvalidArgument(fmt::format(
            "{}:1:1: error: given twice to fit --runs ({} is the same file): its cases would "
            "count twice; give each file once",
            paths[i], paths[j]));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<RunsFit> FitRuns(const std::vector<std::string>& paths,
                          const std::vector<std::string>& sets, const SweepOptions& options,
                          const std::vector<std::string>& only, const CaseFilter& filter) {
  for (const std::string& name : only) {
    if (std::find(RunsParamNames().begin(), RunsParamNames().end(), name) ==
        RunsParamNames().end()) {
      return InvalidArgument(
          fmt::format("--params={}:1:1: error: '{}' is not a parameter fit "
                      "--runs fits; expected some of {}",
                      fmt::join(only, ","), name, fmt::join(RunsParamNames(), ", ")));
    }
  }
  PARASIM_RETURN_IF_ERROR(EachFileOnce(paths));
  RunsFit out;
  Problem p;
  for (const std::string& path : paths) {
    PARASIM_RETURN_IF_ERROR(LoadProblem(path, sets, options, filter, &p, &out));
  }
  if (p.cases.size() < 2) {
    return InvalidArgument(fmt::format(
        "{}:1:1: error: fit --runs needs at least 2 cases that fit in memory", paths.front()));
  }
  AddParams(&p, only, &out);
  if (p.params.empty()) {
    return InvalidArgument(fmt::format(
        "--params={}:1:1: error: none of these parameters applies to the cases (efficiency "
        "needs a case across nodes)",
        fmt::join(only, ",")));
  }
  const Eigen::Index k = static_cast<Eigen::Index>(p.params.size());
  Eigen::VectorXd x0(k);
  for (Eigen::Index j = 0; j < k; ++j) {
    const RunsParam& q = p.params[static_cast<size_t>(j)];
    x0(j) = std::clamp((q.start - q.lo) / (q.hi - q.lo), 0.0, 1.0);
  }
  PARASIM_ASSIGN_OR_RETURN(Eigen::VectorXd r0, p.Residuals(x0));
  PARASIM_ASSIGN_OR_RETURN(Eigen::VectorXd x, Fit(p, x0));
  PARASIM_ASSIGN_OR_RETURN(Eigen::VectorXd r, p.Residuals(x));
  for (Eigen::Index j = 0; j < k; ++j) out.params[static_cast<size_t>(j)].fitted = p.Value(j, x(j));
  // Leave-one-out: from the full fit, one linearised step without case i, then case i replayed.
  PARASIM_ASSIGN_OR_RETURN(Eigen::MatrixXd jac, p.Jacobian(x, r));
  std::vector<double> before, after, held, meas;
  for (size_t i = 0; i < p.cases.size(); ++i) {
    Eigen::VectorXd w = HuberWeights(r);
    w(static_cast<Eigen::Index>(i)) = 0;
    PARASIM_ASSIGN_OR_RETURN(double h, p.Predict(i, Step(x, r, jac, w, 1e-3, true)));
    RunsCase& c = out.cases[i];
    c.before_s = (r0(static_cast<Eigen::Index>(i)) + 1) * c.measured_s;
    c.after_s = (r(static_cast<Eigen::Index>(i)) + 1) * c.measured_s;
    c.held_out_s = h;
    before.push_back(c.before_s);
    after.push_back(c.after_s);
    held.push_back(h);
    meas.push_back(c.measured_s);
  }
  out.mape_before = Mape(before, meas);
  out.mape_after = Mape(after, meas);
  out.mape_held_out = Mape(held, meas);
  if (p.cases.size() <= p.params.size()) {
    // No more cases than parameters: the fit passes through every case and a case left out
    // moves nothing (the linearised step is zero): leave-one-out says nothing.
    out.mape_held_out = std::numeric_limits<double>::quiet_NaN();
    for (RunsCase& c : out.cases) c.held_out_s = std::numeric_limits<double>::quiet_NaN();
  }
  out.profile = ProfileOf(out, paths, p.fabric);
  return out;
}

}  // namespace parasim
