#include "strategies/goodput.h"

#include <fmt/core.h>

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <limits>
#include <random>

#include "models/model_spec.h"
#include "sim/engine.h"
#include "strategies/memory.h"

namespace parasim {
namespace {

// The relative rounding two sums of the run's clock may differ by (a few ulps of 2^-52).
constexpr double kClockSlack = 1e-12;
constexpr double kDay = 86400.0;
constexpr double kInf = std::numeric_limits<double>::infinity();
// NIC ports per leaf switch facing the nodes: a 64-port switch (NVIDIA Quantum-2 QM9700: 64 x
// 400 Gb/s, datasheet) with half its ports down and half up in a non-blocking fat tree.
constexpr double kLeafDownPorts = 32;

// Uniform in (0, 1) from the top 53 bits: the same numbers on every platform (the standard
// library's distributions are implementation-defined).
class Draw {
 public:
  explicit Draw(uint64_t seed) : gen_(seed) {}
  double Uniform() { return (static_cast<double>(gen_() >> 11) + 0.5) * 0x1.0p-53; }
  // Time to the next arrival of a Poisson process of `rate` per second.
  double Exponential(double rate) { return rate > 0 ? -std::log(Uniform()) / rate : kInf; }

 private:
  std::mt19937_64 gen_;
};

// Weights and optimizer states: the model's parameters for full training, the adapters' for
// LoRA, counted once on the whole model (the layout's one rank, as the memory planner counts
// them: summing ranks' shards times TP counted each adapter's unsplit side TP times, and an
// expert's adapters once per EP group: Llama 3 70B's read 2.3 GiB at TP1 and 6.1 at TP8).
double CheckpointBytes(const Scenario& s) {
  const StateBytes rule = StateBytesPerParam(s.training);
  if (s.training.finetune == FinetuneKind::kNone) {
    return CountParams(s.model, s.training.seq_len).total * (rule.weights + rule.optimizer);
  }
  const Layout whole;  // tp, pp, dp, cp, ep 1: every adapter on one rank, whole
  const MemoryReport mem = EstimateMemory(s.model, s.training, whole, s.cluster);
  const double adapters = mem.stages.front().optimizer_bytes / rule.optimizer;
  return adapters * (rule.weights + rule.optimizer);
}

// The q-quantile of sorted values (nearest rank) and their mean.
double Quantile(const std::vector<double>& sorted, double q) {
  return sorted[static_cast<size_t>(std::llround(q * static_cast<double>(sorted.size() - 1)))];
}
double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
}

Spread SpreadOf(std::vector<double> v) {
  Spread s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.mean = Mean(v);
  s.p10 = Quantile(v, 0.10);
  s.p50 = Quantile(v, 0.50);
  s.p90 = Quantile(v, 0.90);
  return s;
}

// One run: training time `progress` advances with the wall clock between events.
struct Run {
  const GoodputInputs& in;
  Draw& draw;
  std::vector<RunEvent>* events;
  double t = 0, progress = 0, durable = 0;
  double pending_progress = -1, pending_at = kInf;  // an asynchronous write in flight
  double next_failure = 0, next_planned = 0;
  double lost = 0, stall = 0, down = 0;
  int failures = 0, planned = 0;
  // Events left to this run (failures, restarts, checkpoints); at none it stops, cut short.
  double events_left = kInf;
  bool cut = false;
  bool Spend() {
    if (--events_left >= 0) return true;
    cut = true;
    return false;
  }

  double end_wall() const { return in.window_s > 0 ? in.window_s : kInf; }
  double target() const { return in.work_s > 0 ? in.work_s : kInf; }

  void Note(RunEventKind k) {
    if (events) events->push_back({t, progress, k});
  }
  void Settle() {
    // A write whose end meets this instant is done: the interval is at least the write
    // (GoodputInputsOf), and the two times, summed along different paths, can part by a
    // rounding (an interval equal to the write then dropped every checkpoint: 4,139 a run).
    if (pending_progress >= 0 && pending_at <= t + kClockSlack * std::max(1.0, t)) {
      durable = pending_progress;
      pending_progress = -1;
      pending_at = kInf;
    }
  }
  // Down for `need` seconds of uninterrupted recovery; failures during it start it again.
  void Recover(double need) {
    double start = t;
    for (;;) {
      if (!Spend()) return;
      const double f = t + draw.Exponential(in.failures_per_s);
      const double done = start + need;
      if (f >= done || f >= end_wall()) {
        const double until = std::min(done, end_wall());
        down += until - t;
        t = until;
        break;
      }
      down += f - t;
      t = f;
      ++failures;
      start = t;
    }
    next_failure = t + draw.Exponential(in.failures_per_s);
    next_planned = t + draw.Exponential(in.planned_per_s);
    Note(RunEventKind::kResumed);
  }
  void Fail() {
    Settle();
    pending_progress = -1;
    pending_at = kInf;
    ++failures;
    lost += progress - durable;
    progress = durable;
    Note(RunEventKind::kFailure);
    Recover(in.restart_s);
  }
  void Planned() {
    ++planned;
    Settle();
    // Save, then stop: nothing is lost.
    const double w = std::min(in.checkpoint.write_s, end_wall() - t);
    stall += w;
    t += w;
    durable = progress;
    pending_progress = -1;
    pending_at = kInf;
    Note(RunEventKind::kPlanned);
    Recover(in.planned_restart_s);
  }

  void Go() {
    const CheckpointPlan& ck = in.checkpoint;
    next_failure = draw.Exponential(in.failures_per_s);
    next_planned = draw.Exponential(in.planned_per_s);
    double next_ck = ck.interval_s;
    while (progress < target() && t < end_wall() && Spend()) {
      const double seg_goal = std::min(target(), next_ck);
      const double seg_end = t + (seg_goal - progress);
      // Progress added up along a large wall clock can end a rounding short of the target; the
      // segment left is then shorter than the clock's resolution (t + hair == t) and would be
      // taken again and again, a checkpoint each time, for ever: the run is done.
      if (seg_end == t && seg_goal == target()) {
        progress = target();
        break;
      }
      const double ev = std::min({seg_end, next_failure, next_planned, end_wall()});
      progress += ev - t;
      t = ev;
      if (ev == next_failure) {
        Fail();
        next_ck = progress + ck.interval_s;
        continue;
      }
      if (ev == next_planned) {
        Planned();
        next_ck = progress + ck.interval_s;
        continue;
      }
      if (ev == end_wall() || progress >= target()) break;
      // A checkpoint: training stalls; a failure meanwhile loses this checkpoint.
      Settle();
      const double stall_end = t + ck.stall_s;
      if (next_failure < stall_end) {
        stall += next_failure - t;
        t = next_failure;
        Fail();
        next_ck = progress + ck.interval_s;
        continue;
      }
      next_planned = std::max(next_planned, stall_end);
      stall += ck.stall_s;
      t = stall_end;
      if (in.async) {
        pending_progress = progress;
        pending_at = t + ck.write_s;
      } else {
        durable = progress;
      }
      next_ck = progress + ck.interval_s;
    }
  }
};

}  // namespace

double FailuresPerDay(const Reliability& rel, const ClusterSpec& c) {
  const double gpus = static_cast<double>(c.gpus());
  const double nodes = static_cast<double>(c.nodes);
  const double links = nodes * c.nics();
  const double leaves = c.nodes > 1 ? std::ceil(links / kLeafDownPorts) : 0.0;
  return rel.gpu * gpus + rel.node * nodes + rel.link * links + rel.switches * leaves;
}

double YoungDalyInterval(double stall_s, double mtbf_s) { return std::sqrt(2 * stall_s * mtbf_s); }

GoodputInputs GoodputInputsOf(const Scenario& s, double step_time_s) {
  const Reliability& rel = s.reliability;
  GoodputInputs in;
  in.step_time_s = step_time_s;
  if (s.training.tokens > 0) {
    in.steps =
        s.training.tokens / (static_cast<double>(s.training.global_batch) * s.training.seq_len);
  }
  in.window_s = rel.window_s;
  in.work_s = in.window_s > 0 ? 0.0 : in.steps * step_time_s;
  in.failures_per_s = FailuresPerDay(rel, s.cluster) / kDay;
  in.planned_per_s = rel.planned_per_day / kDay;
  in.async = rel.async_checkpoint;
  CheckpointPlan& ck = in.checkpoint;
  ck.bytes = CheckpointBytes(s);
  ck.bytes_per_gpu = ck.bytes / static_cast<double>(s.cluster.gpus());
  ck.write_s = ck.bytes / rel.storage_write.bytes_per_second();
  ck.read_s = ck.bytes / rel.storage_read.bytes_per_second();
  ck.stall_s = in.async ? ck.bytes_per_gpu / rel.host_copy.bytes_per_second() : ck.write_s;
  in.restart_s = rel.detection.seconds() + rel.relaunch.seconds() + ck.read_s;
  in.planned_restart_s = rel.relaunch.seconds() + ck.read_s;
  const double mtbf = in.failures_per_s > 0 ? 1 / in.failures_per_s : kInf;
  if (rel.checkpoint_interval.seconds() > 0) {
    ck.interval_s = rel.checkpoint_interval.seconds();
  } else {
    ck.young_daly = true;
    ck.interval_s = std::isfinite(mtbf) ? YoungDalyInterval(ck.stall_s, mtbf) : kInf;
  }
  // At least one step; an asynchronous write must end before the next one starts.
  ck.formula_s = ck.young_daly ? ck.interval_s : 0;
  if (step_time_s > ck.interval_s) {
    ck.interval_s = step_time_s;
    ck.raised_to = CheckpointPlan::Floor::kStep;
  }
  if (in.async && ck.write_s > ck.interval_s) {
    ck.interval_s = ck.write_s;
    ck.raised_to = CheckpointPlan::Floor::kWrite;
  }
  return in;
}

namespace {

// (e^z - 1) / z, 1 at z = 0, without the loss of a tiny or denormal z.
double Expm1Ratio(double z) { return std::abs(z) < 1e-12 ? 1 + z / 2 : std::expm1(z) / z; }

// (1 - e^-z - z e^-z) / z^2: the mean of a first event at rate a before L, times a^2 / L^2
// (z = a L); 1/2 at z = 0.
double KeptBeforeRatio(double z) {
  if (z < 1e-4) return 0.5 - z / 3;
  return (-std::expm1(-z) - z * std::exp(-z)) / (z * z);
}

// One attempt at a checkpoint interval, from the last durable checkpoint, in expectation.
struct Attempt {
  double wall = 0;     // its wall clock
  double kept = 0;     // the training it keeps
  double planned = 0;  // planned interruptions in it
  double failures = 0;
  double restarting = 0;  // of its wall clock, restarts after failures and planned interruptions
  double stalled = 0;     // of its wall clock, the checkpoint's stall
};

// Renewal over attempts (Daly 2006, "A higher order estimate of the optimum checkpoint
// interval", with failures during the restart and planned interruptions), as the Monte Carlo
// (Run) runs them: an attempt trains for tau unless a failure (rate lambda) or a planned
// interruption (rate p) comes first, the first of them after an exponential time at rate
// a = lambda + p; planned, it saves (write_s), keeps what it trained and restarts (planned R);
// failed, it keeps nothing and restarts (R, begun again by a failure in it: expm1(lambda R) /
// lambda). Having trained tau, it stalls delta for the checkpoint, which a failure loses and a
// planned interruption waits for (then saves and restarts). An asynchronous checkpoint is
// durable write_s after it was taken: a failure in that window falls back one more interval,
// e^(-lambda min(write_s, tau)) of the interval's work to first order. With p = 0 the
// effective time is tau / (e^(lambda R) (e^(lambda (tau + delta)) - 1) / lambda), whose
// first-order expansion is Young's: lost work (tau + delta) / 2 + R a failure.
Attempt AttemptOf(const GoodputInputs& in) {
  const CheckpointPlan& ck = in.checkpoint;
  const double lambda = in.failures_per_s, p = in.planned_per_s, a = lambda + p;
  const double tau = ck.interval_s, delta = ck.stall_s;
  const double restart = in.restart_s * Expm1Ratio(lambda * in.restart_s);
  const double planned_cost = ck.write_s + in.planned_restart_s;
  Attempt at;
  if (!std::isfinite(tau)) {
    // No checkpoint: only planned interruptions keep work.
    at.wall = 1 / a;
    at.kept = p / (a * a);
    at.planned = p / a;
    at.failures = lambda / a;
  } else {
    const double z = a * tau;
    const double training = tau * Expm1Ratio(-z);  // E[min(first event, tau)]
    const double reached = std::exp(-z);           // trained tau without an event
    at.planned = p * training;
    at.failures = lambda * training;
    at.kept = p * tau * tau * KeptBeforeRatio(z);
    at.wall = training;
    // The stall, failures only; a planned interruption in it waits for its end.
    const double stall = delta * Expm1Ratio(-lambda * delta);
    const double survives = std::exp(-lambda * delta);
    const double exposure = in.async ? std::min(ck.write_s, tau) : 0.0;
    at.kept += reached * survives * tau * std::exp(-lambda * exposure);
    at.wall += reached * stall;
    at.stalled = reached * stall;
    at.failures += reached * (1 - survives);
    at.planned += reached * survives * -std::expm1(-p * delta);
  }
  at.restarting = at.failures * restart + at.planned * planned_cost;
  at.wall += at.restarting;
  return at;
}

}  // namespace

double AnalyticEffectiveTime(const GoodputInputs& in) {
  const CheckpointPlan& ck = in.checkpoint;
  if (!(in.failures_per_s + in.planned_per_s > 0)) {
    return std::isfinite(ck.interval_s) ? ck.interval_s / (ck.interval_s + ck.stall_s) : 1.0;
  }
  const Attempt at = AttemptOf(in);
  const double eff = at.kept / at.wall;
  // Under a millionth of the failure-free rate a run would take a million times its
  // failure-free time: none ends (NoRunEnds).
  return std::isfinite(eff) && eff >= 1e-6 ? std::min(eff, 1.0) : 0.0;
}

namespace {

// Events one run takes on average, by the closed form: its checkpoints, failures and planned
// interruptions over its expected wall clock (infinite for a run that never ends).
double ExpectedEvents(const GoodputInputs& in) {
  const double eff = AnalyticEffectiveTime(in);
  const double wall = in.window_s > 0 ? in.window_s : eff > 0 ? in.work_s / eff : kInf;
  const double work = in.window_s > 0 ? in.window_s * std::max(eff, 0.0) : in.work_s;
  const double checkpoints =
      std::isfinite(in.checkpoint.interval_s) ? work / in.checkpoint.interval_s : 0.0;
  return 1 + checkpoints + wall * (in.failures_per_s + in.planned_per_s);
}

// The closed form's figures in place of simulated runs.
RunStats ClosedForm(const GoodputInputs& in, std::string note) {
  RunStats st;
  st.closed_form = true;
  st.note = std::move(note);
  const double eff = std::max(AnalyticEffectiveTime(in), 0.0);
  const double wall = in.window_s > 0 ? in.window_s : eff > 0 ? in.work_s / eff : kInf;
  const double progress = in.window_s > 0 ? in.window_s * eff : in.work_s;
  st.wall = {wall, wall, wall, wall};
  st.progress = {progress, progress, progress, progress};
  st.effective_training_time = eff;
  if (!std::isfinite(wall)) {
    st.interruptions = {kInf, kInf, kInf, kInf};
    st.planned = st.down_s = st.lost_s = st.stall_s = kInf;  // no run ends
    return st;
  }
  // The wall clock in the attempts' shares (AttemptOf): stalls, restarts, and the rest is work
  // lost to failures; failures and planned interruptions as many as its attempts hold.
  if (!(in.failures_per_s + in.planned_per_s > 0)) {
    const CheckpointPlan& ck = in.checkpoint;
    st.stall_s = std::isfinite(ck.interval_s) ? progress / ck.interval_s * ck.stall_s : 0.0;
    return st;
  }
  const Attempt at = AttemptOf(in);
  const double attempts = wall / at.wall;
  const double failures = wall * in.failures_per_s;  // Poisson over the whole wall clock
  st.interruptions = {failures, failures, failures, failures};
  st.planned = attempts * at.planned;
  st.stall_s = attempts * at.stalled;
  st.down_s = attempts * at.restarting;
  st.lost_s = std::max(0.0, wall - progress - st.stall_s - st.down_s);
  return st;
}

// Simulated runs, each cut after `events_per_run` events (then the closed form answers).
RunStats SimulateBoundedRuns(const GoodputInputs& in, int runs, uint64_t seed,
                             double events_per_run) {
  RunStats st;
  st.runs = runs;
  std::vector<double> wall, progress, failures;
  double planned = 0;
  for (int i = 0; i < runs; ++i) {
    Draw draw(seed + static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull);
    Run r{in, draw, i == 0 ? &st.first_run : nullptr};
    r.events_left = events_per_run;
    r.Go();
    if (r.cut) {
      return ClosedForm(in, fmt::format("goodput from the closed form: a simulated run passed "
                                        "{:.2g} events, ten times the expected, and was cut",
                                        events_per_run));
    }
    wall.push_back(r.t);
    progress.push_back(r.progress);
    failures.push_back(r.failures);
    planned += r.planned;
    st.lost_s += r.lost;
    st.stall_s += r.stall;
    st.down_s += r.down;
  }
  const double n = std::max(1, runs);
  st.planned = planned / n;
  st.lost_s /= n;
  st.stall_s /= n;
  st.down_s /= n;
  st.wall = SpreadOf(wall);
  st.progress = SpreadOf(progress);
  st.interruptions = SpreadOf(failures);
  st.effective_training_time = st.wall.mean > 0 ? st.progress.mean / st.wall.mean : 0.0;
  return st;
}

}  // namespace

RunStats SimulateRuns(const GoodputInputs& in, int runs, uint64_t seed) {
  // No run ends (NoRunEnds says why): nothing to simulate or to warn of.
  if (in.window_s <= 0 && AnalyticEffectiveTime(in) <= 0) return ClosedForm(in, "");
  if (in.work_s <= 0 && in.window_s <= 0) {
    // Nothing gives the run a length: the steady state alone (a simulated run would never end).
    return ClosedForm(in,
                      "goodput from the closed form, in the steady state: neither "
                      "training.tokens nor reliability.window gives the run a length");
  }
  // Bounded: at most kMaxMonteCarloEvents over all runs, each run cut at ten times its
  // expected share (a run that is cut is not averaged in: the closed form answers instead).
  const double per_run = ExpectedEvents(in);
  const double fit = kMaxMonteCarloEvents / per_run;
  if (!(fit >= std::min(runs, kMinSimulatedRuns))) {
    return ClosedForm(
        in, fmt::format("goodput from the closed form: the Monte Carlo would simulate about {:.2g} "
                        "events per run (failures every {:.0f} s of a {:.0f}-s restart, "
                        "checkpoints every {:.0f} s), past its budget of {:.0e} in all; the "
                        "closed form agrees with it within 2% (0.5% where failures are rare "
                        "within a checkpoint interval)",
                        per_run, in.failures_per_s > 0 ? 1 / in.failures_per_s : kInf, in.restart_s,
                        in.checkpoint.interval_s, kMaxMonteCarloEvents));
  }
  const int asked = runs;
  runs = std::min<int>(runs, static_cast<int>(std::min(fit, 1e9)));
  RunStats st = SimulateBoundedRuns(in, runs, seed, 10 * per_run + 1000);
  if (st.closed_form) return st;
  if (runs < asked) {
    st.note = fmt::format(
        "goodput from {} simulated runs of the {} asked: each takes about "
        "{:.2g} events, within the budget of {:.0e}",
        runs, asked, per_run, kMaxMonteCarloEvents);
  }
  return st;
}

double MaxLognormalQuantile(double sigma, double n, double p) {
  if (sigma <= 0) return 1.0;
  // P(max <= x) = F(x)^n, so the p-quantile of the max is F's p^(1/n) quantile.
  const double q = std::pow(p, 1.0 / std::max(1.0, n));
  const double z = boost::math::quantile(boost::math::normal(), std::min(q, 1.0 - 1e-16));
  return std::exp(sigma * z);
}

StatusOr<StepSpread> SampleStragglers(LoweredStep& low, int64_t gpus, double sigma, int samples,
                                      uint64_t seed) {
  StepSpread out;
  const size_t ranks = low.program.num_ranks();
  const double per_rank =
      std::max(1.0, static_cast<double>(gpus) / static_cast<double>(std::max<size_t>(1, ranks)));
  Draw draw(seed);
  sim::Engine engine;
  sim::RunOptions ro;
  ro.critical_path = false;
  ro.rank_slowdown.assign(ranks, 1.0);
  for (int i = 0; i < samples; ++i) {
    for (double& f : ro.rank_slowdown) f = MaxLognormalQuantile(sigma, per_rank, draw.Uniform());
    PARASIM_ASSIGN_OR_RETURN(sim::Timeline tl, engine.Run(low.program, low.costs, ro));
    out.samples_s.push_back(tl.makespan.seconds());
  }
  std::sort(out.samples_s.begin(), out.samples_s.end());
  if (out.samples_s.empty()) return out;
  out.mean_s = Mean(out.samples_s);
  out.p50_s = Quantile(out.samples_s, 0.50);
  out.p99_s = Quantile(out.samples_s, 0.99);
  return out;
}

StatusOr<GoodputReport> ModelGoodput(const Scenario& s, double step_time_s, LoweredStep& low) {
  const Reliability& rel = s.reliability;
  GoodputReport g;
  if (rel.straggler > 0 && rel.step_samples > 0) {
    const double work =
        static_cast<double>(rel.step_samples) * static_cast<double>(low.program.num_tasks());
    if (work > kMaxSampledTasks) {
      const int64_t most = static_cast<int64_t>(
          kMaxSampledTasks / std::max<double>(1.0, static_cast<double>(low.program.num_tasks())));
      return InvalidArgument(fmt::format(
          "{}: error: reliability.step_samples: {} replays of a step of {} tasks are {:.3g} task "
          "replays, more than the {:.3g} the straggler sampling runs (one to four minutes); at "
          "most "
          "{} samples for this step, or straggler 0",
          rel.step_samples_at.empty() ? s.file : rel.step_samples_at, rel.step_samples,
          low.program.num_tasks(), work, kMaxSampledTasks, most));
    }
    PARASIM_ASSIGN_OR_RETURN(g.steps, SampleStragglers(low, s.cluster.gpus(), rel.straggler,
                                                       rel.step_samples, rel.seed));
  } else {
    g.steps.mean_s = g.steps.p50_s = g.steps.p99_s = step_time_s;
  }
  g.inputs = GoodputInputsOf(s, g.steps.mean_s);
  g.failures_per_day = g.inputs.failures_per_s * kDay;
  g.mtbf_s = g.inputs.failures_per_s > 0 ? 1 / g.inputs.failures_per_s : kInf;
  g.analytic_effective_time = AnalyticEffectiveTime(g.inputs);
  g.runs = SimulateRuns(g.inputs, rel.runs, rel.seed);
  g.goodput = g.runs.effective_training_time * step_time_s / g.steps.mean_s;
  if (g.inputs.steps > 0) {
    g.ideal_time_to_train_s = g.inputs.steps * step_time_s;
    if (g.inputs.work_s > 0) {
      g.time_to_train_s = g.runs.wall.mean;
      g.time_to_train_p10_s = g.runs.wall.p10;
      g.time_to_train_p90_s = g.runs.wall.p90;
    } else {
      // A window was simulated: the whole run at the window's rate of progress, unless the closed
      // form finds that no run ends (a window may still hold a sliver of unsaved progress at its
      // end).
      const double eff = g.analytic_effective_time > 0 ? g.runs.effective_training_time : 0.0;
      const double t = eff > 0 ? g.inputs.steps * g.steps.mean_s / eff : kInf;
      g.time_to_train_s = g.time_to_train_p10_s = g.time_to_train_p90_s = t;
    }
  }
  return g;
}

std::string NoRunEnds(const GoodputReport& g) {
  if (std::isfinite(g.runs.wall.mean) && g.runs.effective_training_time > 0 &&
      (g.analytic_effective_time > 0 || g.inputs.window_s <= 0)) {
    return "";
  }
  return fmt::format(
      "no run ends: a failure every {:.3g} s on average, each restart {:.3g} s, checkpoints "
      "every {:.3g} s of training with {:.3g}-s stalls; the work kept between failures tends to "
      "none (raise the MTBF or the storage bandwidth, or checkpoint more often)",
      g.mtbf_s, g.inputs.restart_s, g.inputs.checkpoint.interval_s, g.inputs.checkpoint.stall_s);
}

bool GoodputModelled(const Scenario& s) {
  return s.reliability.enabled && (s.training.tokens > 0 || s.reliability.block);
}

void WithGoodput(const Scenario& s, const GoodputReport& g, StepReport* r) {
  if (s.training.tokens <= 0) return;
  const double scale = g.time_to_train_s / std::max(r->time_to_train_s, 1e-12);
  r->time_to_train_s = g.time_to_train_s;
  r->gpu_hours *= scale;
  r->cost *= scale;
}

double GoodputFactor(const Scenario& s, double step_time_s) {
  if (!s.reliability.enabled) return 1.0;
  const double n = static_cast<double>(s.cluster.gpus());
  // The median of the slowest GPU's factor, applied to the whole step (an upper bound: the
  // replayed spread slows compute only).
  const double slow = MaxLognormalQuantile(s.reliability.straggler, n, 0.5);
  const GoodputInputs in = GoodputInputsOf(s, step_time_s * slow);
  return AnalyticEffectiveTime(in) / slow;  // 0 where no run ends
}

}  // namespace parasim
