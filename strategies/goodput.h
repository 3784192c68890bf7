// Goodput: what a training run loses beyond the step time to failures, checkpoints, restarts
// and stragglers, from the scenario's `reliability` block (strategies/reliability.h).
//
//   GoodputInputs in = GoodputInputsOf(scenario, step_time_s);   // rates, checkpoint, restart
//   RunStats mc = SimulateRuns(in, /*runs=*/200, /*seed=*/1);    // Monte Carlo of the run
//   mc.effective_training_time, mc.interruptions.mean, mc.wall.p90
//   StepSpread st = SampleStragglers(lowered, gpus, 0.022, 200, 1);  // replays with slow GPUs
//
// Failures arrive as a Poisson process over wall-clock time at the cluster's summed component
// rates; each one loses the work since the last durable checkpoint and stops the job for
// detection, relaunch and the checkpoint read (failures during that downtime start it again).
// Checkpoints are taken every `interval` of training time (Young/Daly when not given): a
// synchronous one stalls training for the whole write over the shared storage bandwidth, an
// asynchronous one for the device-to-host snapshot, and becomes durable when its write ends.
// Planned interruptions save first and lose no work. Stragglers: every replayed rank's compute
// is slowed by the slowest of the GPUs it stands for (an order statistic of the per-GPU
// lognormal speed), so synchronisation in the replay waits for it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/status.h"
#include "strategies/lowered_step.h"
#include "strategies/plan.h"
#include "strategies/reliability.h"
#include "strategies/step_summary.h"

namespace parasim {

struct CheckpointPlan {
  double bytes = 0;          // weights and optimizer states of the whole model
  double bytes_per_gpu = 0;  // each GPU writes its share (fully parallel save)
  double write_s = 0;        // over the shared storage bandwidth
  double read_s = 0;
  double stall_s = 0;     // training stops this long per checkpoint
  double interval_s = 0;  // training time between checkpoints
  bool young_daly = false;
  double formula_s = 0;  // Young/Daly's interval before the floors below (young_daly only)
  // What raised the interval: one step, or an asynchronous write's time (the next write
  // starts after it ends).
  enum class Floor : uint8_t { kNone, kStep, kWrite };
  Floor raised_to = Floor::kNone;
};

struct GoodputInputs {
  double step_time_s = 0;
  double steps = 0;     // optimizer steps of training.tokens; 0 = not given
  double work_s = 0;    // failure-free training time of the run; 0 = run for window_s
  double window_s = 0;  // wall clock to simulate; 0 = until work_s is done
  double failures_per_s = 0;
  double planned_per_s = 0;
  double restart_s = 0;          // detection + relaunch + checkpoint read
  double planned_restart_s = 0;  // relaunch + checkpoint read (the save is a stall)
  bool async = false;
  CheckpointPlan checkpoint;
};

// Unexpected interruptions per day of the cluster: GPUs, nodes, NIC links and leaf switches
// times their rates.
double FailuresPerDay(const Reliability& rel, const ClusterSpec& cluster);
// Young (1974) / Daly (2006) first-order optimum: sqrt(2 x stall x MTBF).
double YoungDalyInterval(double stall_s, double mtbf_s);
// Everything the run model needs for a scenario whose replayed step takes `step_time_s`.
GoodputInputs GoodputInputsOf(const Scenario& s, double step_time_s);

// The closed form of the effective training time (fraction of wall clock that makes progress
// kept): the renewal over attempts at a checkpoint interval, each ended by the interval and its
// stall, a failure or a planned interruption's save, with restarts that failures may
// interrupt (goodput.cc, AttemptOf). 0 where no run ends (under a millionth).
double AnalyticEffectiveTime(const GoodputInputs& in);

// One simulated run, as events for the report's timeline.
enum class RunEventKind : uint8_t { kFailure, kPlanned, kResumed };
struct RunEvent {
  double t_s;         // wall clock
  double progress_s;  // training time kept at that moment (after a rollback for a failure)
  RunEventKind kind;
};

struct Spread {
  double mean = 0, p10 = 0, p50 = 0, p90 = 0;
};
struct RunStats {
  int runs = 0;
  Spread wall;           // wall clock of the run (the window when one is given)
  Spread progress;       // training time kept at the end
  Spread interruptions;  // unexpected
  double planned = 0;    // planned interruptions, mean
  double lost_s = 0;     // means: work redone, checkpoint stalls, downtime
  double stall_s = 0;
  double down_s = 0;
  double effective_training_time = 0;  // mean progress over mean wall clock
  std::vector<RunEvent> first_run;     // the first run's events
  // Whether the figures are the closed form's (AnalyticEffectiveTime) rather than simulated runs,
  // and why; also set when fewer runs than asked were simulated.
  bool closed_form = false;
  std::string note;
};
// The Monte Carlo's budget: events (failures, restarts, checkpoints) simulated over all runs,
// about a second on one core. A run that needs more is simulated fewer times (not below
// kMinSimulatedRuns), or else answered by the closed form, which agrees with the simulated runs
// within 0.5% of the effective training time where both run (strategies/goodput_test.cc).
inline constexpr double kMaxMonteCarloEvents = 2e7;
inline constexpr int kMinSimulatedRuns = 20;
// Deterministic for a given seed (mt19937_64, inverse-CDF draws); bounded by
// kMaxMonteCarloEvents whatever the inputs.
RunStats SimulateRuns(const GoodputInputs& in, int runs, uint64_t seed);

struct StepSpread {
  double mean_s = 0, p50_s = 0, p99_s = 0;
  std::vector<double> samples_s;  // sorted
};
// The straggler sampling's budget: samples x the step's tasks. A sampled replay costs 27-100 ns
// a task on one core (measured on this project's examples: GPT-3 175B's 12,697 tasks 0.35 ms a
// sample, the 16K Llama 3 405B step's 24,880 tasks 2.5 ms), so 2^31 task replays take one to
// four minutes; ModelGoodput refuses more at reliability.step_samples (or straggler).
inline constexpr double kMaxSampledTasks = static_cast<double>(int64_t{1} << 31);
// Replays `low` `samples` times with each program rank's compute slowed by the largest of
// gpus/ranks lognormal(0, sigma) speed factors (sampled exactly as an order statistic).
StatusOr<StepSpread> SampleStragglers(LoweredStep& low, int64_t gpus, double sigma, int samples,
                                      uint64_t seed);
// The p-quantile of the largest of n lognormal(0, sigma) factors.
double MaxLognormalQuantile(double sigma, double n, double p);

struct GoodputReport {
  GoodputInputs inputs;
  double failures_per_day = 0;
  double mtbf_s = 0;
  double analytic_effective_time = 0;
  RunStats runs;
  StepSpread steps;
  double goodput = 0;                // effective training time x step time / mean straggling step
  double ideal_time_to_train_s = 0;  // with training.tokens: steps x the failure-free step
  double time_to_train_s = 0;        // the mean wall clock of the run
  double time_to_train_p10_s = 0, time_to_train_p90_s = 0;
};

// Where no run ends (failures faster than its restarts and checkpoints let it progress): why,
// in words; empty where runs end.
std::string NoRunEnds(const GoodputReport& g);

// The whole model for `run`: stragglers replayed on `low` (the step's program), then the Monte
// Carlo of the run at the mean straggling step.
StatusOr<GoodputReport> ModelGoodput(const Scenario& s, double step_time_s, LoweredStep& low);

// Whether `run` and `report` model goodput: for a scenario that trains training.tokens or has a
// reliability block, unless the block says `none`.
bool GoodputModelled(const Scenario& s);

// With training.tokens: the step report's time to train, GPU-hours and cost made to include
// what failures, checkpoints and stragglers take (the goodput model's mean wall clock); the
// report's own figures are failure-free. Nothing changes without training.tokens. `run` and
// each of `sweep`'s leaders apply it alike.
void WithGoodput(const Scenario& s, const GoodputReport& g, StepReport* r);

// For the sweep and scale: the closed form at the failure-free step (no replays, no sampling).
double GoodputFactor(const Scenario& s, double step_time_s);

}  // namespace parasim
